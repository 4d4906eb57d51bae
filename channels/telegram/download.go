package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-telegram/bot"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// DownloadLimit implements channels.DownloadLimiter: the Bot API serves no
// file over its getFile limit (20 MB in the cloud), so the media service
// refuses a ref declared larger before asking, and caps the stream at it.
func (t *Telegram) DownloadLimit(*mediaregistry.MediaReference) (int64, string) {
	return t.maxDL, "the Bot API download limit (channels.telegram.max_download_bytes)"
}

// Download implements channels.Downloader: getFile, then a streamed GET of
// the file. Nothing is fetched before this is called. Sizes are the media
// service's business (DownloadLimit); only the Bot API's own "file is too
// big" is reported here, as channels.ErrTooLarge.
func (t *Telegram) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	h := decodeHandle(ref.Private)
	if h.FileID == "" {
		return nil, 0, fmt.Errorf("telegram download %s: no file_id in ref: %w", ref.ID, channels.ErrUnavailable)
	}
	var f struct {
		size int64
		path string
	}
	err := t.retry(ctx, true, func() error {
		got, err := t.b.GetFile(ctx, &bot.GetFileParams{FileID: h.FileID})
		if err != nil {
			return err
		}
		f.size, f.path = got.FileSize, got.FilePath
		return nil
	})
	if err != nil {
		return nil, 0, t.getFileError(ref.ID, err)
	}
	if f.path == "" {
		return nil, 0, fmt.Errorf("telegram download %s: getFile returned no file_path: %w", ref.ID, channels.ErrUnavailable)
	}
	// A local Bot API server in --local mode answers with a path on its
	// own disk instead of a download URL. The answer is the server's word,
	// not the operator's: without local_files_dir no path is read from
	// disk, and a ".." would climb out of the file URL on a proxy that
	// cleans paths. The server keeps files under <dir>/<token>/, so the
	// errors are redacted.
	if filepath.IsAbs(f.path) {
		body, size, err := t.openLocal(ref.ID, f.path)
		if err != nil {
			return nil, 0, redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
		}
		return body, size, nil
	}
	if hasDotDot(f.path) {
		err := fmt.Errorf("telegram download %s: refusing the Bot API's file_path %q: it climbs out with \"..\": %w", ref.ID, f.path, channels.ErrForbidden)
		return nil, 0, redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
	}

	body, size, err := t.fetch(ctx, f.path)
	if err != nil {
		return nil, 0, fmt.Errorf("telegram download %s: %w", ref.ID, err)
	}
	if size < 0 && f.size > 0 {
		size = f.size
	}
	return body, size, nil
}

func (t *Telegram) getFileError(id string, err error) error {
	msg := redact(err.Error(), t.cfg.Token)
	switch {
	case errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(msg), "too big"):
		return fmt.Errorf("telegram download %s: %s: %w", id, msg, channels.ErrTooLarge)
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorNotFound):
		// "wrong/invalid file_id", "file is temporarily unavailable".
		return fmt.Errorf("telegram download %s: getFile: %s: %w", id, msg, channels.ErrUnavailable)
	case errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorUnauthorized):
		return fmt.Errorf("telegram download %s: getFile: %s: %w", id, msg, channels.ErrForbidden)
	}
	return fmt.Errorf("telegram download %s: getFile: %w", id, redactedErr{err: err, msg: msg})
}

// redactedErr keeps a wrapped error's identity (errors.Is/As) while
// printing a token-free message.
type redactedErr struct {
	err error
	msg string
}

func (e redactedErr) Error() string { return e.msg }
func (e redactedErr) Unwrap() error { return e.err }

// fetch GETs <api_url>/file/bot<token>/<path>, retrying 429 and 5xx before
// any byte has been handed out. Errors never contain the URL.
func (t *Telegram) fetch(ctx context.Context, path string) (io.ReadCloser, int64, error) {
	u := t.apiURL + "/file/bot" + t.cfg.Token + "/" + escapePath(path)
	var resp *http.Response
	err := t.retry(ctx, true, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("build file request: %s", redact(err.Error(), t.cfg.Token))
		}
		r, err := t.files.Do(req)
		if err != nil {
			return fmt.Errorf("get file: %w", redactURLError(err, t.cfg.Token))
		}
		if r.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
			r.Body.Close()
			return &statusError{Code: r.StatusCode, RetryAfter: retryAfterHeader(r.Header)}
		}
		resp = r
		return nil
	})
	if err != nil {
		var se *statusError
		if errors.As(err, &se) {
			switch se.Code {
			case http.StatusNotFound, http.StatusGone:
				return nil, 0, fmt.Errorf("get file: %w: %w", err, channels.ErrUnavailable)
			case http.StatusUnauthorized, http.StatusForbidden:
				return nil, 0, fmt.Errorf("get file: %w: %w", err, channels.ErrForbidden)
			}
		}
		return nil, 0, err
	}
	// The media service's cache stops a stream that runs past the limit.
	return resp.Body, resp.ContentLength, nil
}

// escapePath escapes each segment of a Bot API file_path ("photos/file_1.jpg").
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// hasDotDot reports a ".." segment in a Bot API file_path.
func hasDotDot(p string) bool {
	for seg := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// openLocal reads a file a local Bot API server saved, only from inside
// channels.telegram.local_files_dir. The check is not on the path's text
// alone: os.Root refuses a symlink (or a ".." after one) that leads out
// of the directory, and the opened file must be a regular one.
func (t *Telegram) openLocal(id, path string) (io.ReadCloser, int64, error) {
	if t.cfg.LocalFilesDir == "" {
		return nil, 0, fmt.Errorf("telegram download %s: the Bot API answered with a path on its disk (%q), but channels.telegram.local_files_dir is not set, so botd reads no file from disk: %w", id, path, channels.ErrForbidden)
	}
	dir := filepath.Clean(t.cfg.LocalFilesDir)
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	if err != nil || !filepath.IsLocal(rel) {
		return nil, 0, fmt.Errorf("telegram download %s: refusing the Bot API's file_path %q: it is not inside channels.telegram.local_files_dir (%s): %w", id, path, dir, channels.ErrForbidden)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("telegram download %s: channels.telegram.local_files_dir: %w", id, err)
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO planted where the file should be must fail the
	// regular-file check below, not hang the download in open.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, 0, fmt.Errorf("telegram download %s: %w: %w", id, err, channels.ErrUnavailable)
	case err != nil:
		// Among them os.Root's "path escapes from parent" for a link out.
		return nil, 0, fmt.Errorf("telegram download %s: refusing the Bot API's file_path %q: %w: %w", id, path, err, channels.ErrForbidden)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("telegram download %s: %w", id, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("telegram download %s: refusing the Bot API's file_path %q: not a regular file: %w", id, path, channels.ErrForbidden)
	}
	return f, st.Size(), nil
}
