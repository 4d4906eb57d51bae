package telegram

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/mediaregistry"
)

// receiveRef pushes msg through the channel and returns the ref it
// registered, as the host would later look it up.
func receiveRef(t *testing.T, h *harness, msg *models.Message) mediaregistry.MediaReference {
	t.Helper()
	before := len(h.sink.Inbounds())
	handle(h, models.Update{Message: msg})
	got := h.sink.Inbounds()
	if len(got) != before+1 || len(got[before].Refs) != 1 {
		t.Fatalf("no ref delivered: %+v", got)
	}
	ref, err := h.reg.Get(context.Background(), mediaregistry.Chats{got[before].ChatID}, got[before].Refs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func readAll(t *testing.T, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDownloadPhotoOnce(t *testing.T) {
	h := newHarness(t)
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)
	h.fake.AddFile(telegramtest.File{ID: "AgAC-photo-l", Path: "photos/file_12.jpg", Data: data})
	ref := receiveRef(t, h, mediaCases[0].msg)
	if h.fake.GetFileCalls() != 0 || h.fake.Downloads() != 0 {
		t.Fatal("receiving fetched something")
	}

	body, size, err := h.tg.Download(context.Background(), &ref)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, body)
	if !bytes.Equal(got, data) {
		t.Errorf("downloaded %d bytes, not the %d served", len(got), len(data))
	}
	if size != int64(len(data)) {
		t.Errorf("size = %d, want %d", size, len(data))
	}
	if g, d := h.fake.GetFileCalls(), h.fake.Downloads(); g != 1 || d != 1 {
		t.Errorf("getFile=%d downloads=%d, want 1 and 1", g, d)
	}
}

// The Bot API's limit is the channel's DownloadLimit: the media service
// refuses a ref declared over it before calling Download (tested in
// package media) and caps the stream at it (TestHostileDownloads).
func TestDownloadLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		set  int64 // channels.telegram.max_download_bytes
		want int64
	}{
		{"cloud default", 0, DefaultMaxDownload},
		{"local Bot API server", 2 << 30, 2 << 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) { cfg.MaxDownloadBytes = c.set })
			got, why := h.tg.DownloadLimit(&mediaregistry.MediaReference{Size: 25 << 20})
			if got != c.want || why != "the Bot API download limit (channels.telegram.max_download_bytes)" {
				t.Errorf("DownloadLimit = %d %q, want %d", got, why, c.want)
			}
		})
	}
}

// A file the Bot API refuses as too big (its size unknown until getFile)
// is ErrTooLarge, without a download.
func TestDownloadTooBigForTheBotAPI(t *testing.T) {
	const mb = 1 << 20
	for _, declared := range []int64{0, 25 * mb} {
		t.Run(fmt.Sprintf("declared %d", declared), func(t *testing.T) {
			h := newHarness(t)
			h.fake.AddFile(telegramtest.File{ID: "BQAC-big", Data: []byte("x"), Size: 25 * mb})
			ref := receiveRef(t, h, mediaMsg(500, func(m *models.Message) {
				m.Document = &models.Document{FileID: "BQAC-big", FileName: "huge.zip", MimeType: "application/zip", FileSize: declared}
			}))
			_, _, err := h.tg.Download(context.Background(), &ref)
			if !errors.Is(err, channels.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if g, d := h.fake.GetFileCalls(), h.fake.Downloads(); g != 1 || d != 0 {
				t.Errorf("getFile calls = %d, downloads = %d, want 1 and 0", g, d)
			}
			if strings.Contains(err.Error(), telegramtest.Token) {
				t.Errorf("token in error: %v", err)
			}
		})
	}
}

// 429 with retry_after on getFile and a proxy's 502 page on the download
// are both retried; the bytes still arrive once.
func TestDownloadRetries(t *testing.T) {
	h := newHarness(t)
	h.fake.AddFile(telegramtest.File{ID: "AwAC-voice", Data: []byte("OggS voice")})
	ref := receiveRef(t, h, mediaCases[2].msg)
	h.fake.FailNext("getFile", telegramtest.Failure{Status: 429, Description: "Too Many Requests: retry after 2", RetryAfter: 2})
	h.fake.FailNext("getFile", telegramtest.Failure{Status: 500, Description: "Internal Server Error"})
	h.fake.FailNext("file", telegramtest.Failure{Status: 502, Raw: "<html>502 Bad Gateway</html>"})
	h.fake.FailNext("file", telegramtest.Failure{Status: 429, RetryAfter: 1})

	body, _, err := h.tg.Download(context.Background(), &ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, body); string(got) != "OggS voice" {
		t.Errorf("got %q", got)
	}
	if g, d := h.fake.GetFileCalls(), h.fake.Downloads(); g != 3 || d != 3 {
		t.Errorf("getFile=%d downloads=%d, want 3 and 3", g, d)
	}
}

func TestDownloadErrorsAreTypedAndTokenFree(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, h *harness)
		want  error
	}{
		{"unknown file_id", func(t *testing.T, h *harness) {}, channels.ErrUnavailable},
		{"file gone from storage", func(t *testing.T, h *harness) {
			h.fake.AddFile(telegramtest.File{ID: "AwAC-voice", Data: []byte("x")})
			h.fake.FailNext("file", telegramtest.Failure{Status: 404})
		}, channels.ErrUnavailable},
		{"persistent 5xx", func(t *testing.T, h *harness) {
			for range 4 {
				h.fake.FailNext("getFile", telegramtest.Failure{Status: 503})
			}
		}, nil},
		{"server unreachable", func(t *testing.T, h *harness) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			h.tg.cfg.APIURL = "http://" + addr
			h.tg.apiURL = "http://" + addr
			if err := h.tg.newBot(); err != nil {
				t.Fatal(err)
			}
			h.tg.maxAttempts = 1
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			ref := receiveRef(t, h, mediaCases[2].msg)
			c.setup(t, h)
			_, _, err := h.tg.Download(context.Background(), &ref)
			if err == nil {
				t.Fatal("no error")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
			if strings.Contains(err.Error(), telegramtest.Token) {
				t.Errorf("token in error: %v", err)
			}
		})
	}
}

// The file URL carries the token; a failing GET must not print it.
func TestFetchErrorHidesFileURL(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.tg.apiURL = "http://" + ln.Addr().String()
	ln.Close()
	h.tg.maxAttempts = 1
	_, _, err = h.tg.fetch(context.Background(), "documents/file_1.pdf")
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	if strings.Contains(err.Error(), telegramtest.Token) {
		t.Errorf("token in error: %v", err)
	}
	if !strings.Contains(err.Error(), "<token>") {
		t.Errorf("expected a redacted URL in %v", err)
	}
}

// A download is a stream: memory does not grow with the file. 19MB (just
// under the cloud limit) goes through while the process allocates a
// small, fixed amount (the fake server lives in the same process and is
// counted too).
func TestDownloadStreams(t *testing.T) {
	h := newHarness(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), (19<<20)/16)
	h.fake.AddFile(telegramtest.File{ID: "BQAC-doc", Data: data})
	ref := receiveRef(t, h, mediaCases[1].msg)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	body, _, err := h.tg.Download(context.Background(), &ref)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, body)
	body.Close()
	if err != nil || n != int64(len(data)) {
		t.Fatalf("copied %d of %d: %v", n, len(data), err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("downloaded %d bytes with %d KB allocated", n, alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("allocated %d KB for a %d KB download: not streaming", alloc>>10, n>>10)
	}
}

// The fake's getFile limit is the network's; the setting's default must
// be the same number.
func TestFakeKnowsTheCloudLimit(t *testing.T) {
	if telegramtest.CloudFileLimit != DefaultMaxDownload || DefaultConfig().MaxDownloadBytes != DefaultMaxDownload {
		t.Errorf("fake limit %d, DefaultMaxDownload %d, default config %d",
			telegramtest.CloudFileLimit, DefaultMaxDownload, DefaultConfig().MaxDownloadBytes)
	}
}

// A file_path is the Bot API's answer, not the operator's choice: it is
// read from disk only when channels.telegram.local_files_dir is set, and
// only inside that directory; anything else is refused before a byte is
// read, from disk or over HTTP.
func TestDownloadLocalFilePath(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("not for the bot"), 0o600); err != nil {
		t.Fatal(err)
	}
	filesDir := t.TempDir()
	docs := filepath.Join(filesDir, telegramtest.Token, "documents")
	if err := os.MkdirAll(docs, 0o700); err != nil {
		t.Fatal(err)
	}
	legit := filepath.Join(docs, "file_1.pdf")
	if err := os.WriteFile(legit, []byte("%PDF-1.7 served from the local server's disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	linkOut := filepath.Join(docs, "file_2.pdf")
	if err := os.Symlink(secret, linkOut); err != nil {
		t.Fatal(err)
	}
	dirLinkOut := filepath.Join(filesDir, telegramtest.Token, "photos")
	if err := os.Symlink(outside, dirLinkOut); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(docs, "file_3.pdf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name     string
		localDir string
		path     string
	}{
		{"no local dir: /etc/passwd", "", "/etc/passwd"},
		{"no local dir: a readable file", "", secret},
		{"no local dir: a path inside what would be the dir", "", legit},
		{"no local dir: ../../etc/passwd", "", "../../etc/passwd"},
		{"no local dir: .. inside a path", "", "documents/../../../etc/passwd"},
		{"/etc/passwd", filesDir, "/etc/passwd"},
		{"../../etc/passwd", filesDir, "../../etc/passwd"},
		{"absolute .. out of the dir", filesDir, filesDir + "/../" + filepath.Base(outside) + "/secret.txt"},
		{"symlink inside pointing out", filesDir, linkOut},
		{"through a symlinked folder", filesDir, filepath.Join(dirLinkOut, "secret.txt")},
		{"the dir itself", filesDir, filesDir},
		{"a FIFO inside", filesDir, fifo},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) { cfg.LocalFilesDir = c.localDir })
			h.fake.AddFile(telegramtest.File{ID: "BQAC-doc", Path: c.path, Data: []byte("served over HTTP")})
			ref := receiveRef(t, h, mediaCases[1].msg)
			body, err := downloadGuarded(t, h, &ref)
			if body != nil {
				got, _ := io.ReadAll(io.LimitReader(body, 40))
				body.Close()
				t.Fatalf("file_path %q was read (%q...), want it refused", c.path, got)
			}
			if !errors.Is(err, channels.ErrForbidden) {
				t.Errorf("err = %v, want ErrForbidden", err)
			}
			if d := h.fake.Downloads(); d != 0 {
				t.Errorf("%d HTTP downloads of a refused file_path", d)
			}
			if err != nil && strings.Contains(err.Error(), "not for the bot") {
				t.Errorf("the refused file's bytes are in the error: %v", err)
			}
			// The local server keeps files under <dir>/<token>/.
			if err != nil && strings.Contains(err.Error(), telegramtest.Token) {
				t.Errorf("token in error: %v", err)
			}
		})
	}

	t.Run("a file inside the dir is served", func(t *testing.T) {
		h := newHarness(t, func(cfg *Config) { cfg.LocalFilesDir = filesDir })
		h.fake.AddFile(telegramtest.File{ID: "BQAC-doc", Path: legit, Data: []byte("not what is on disk")})
		ref := receiveRef(t, h, mediaCases[1].msg)
		body, size, err := h.tg.Download(context.Background(), &ref)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(legit)
		if got := readAll(t, body); !bytes.Equal(got, want) || size != int64(len(want)) {
			t.Errorf("got %q (size %d), want %q", got, size, want)
		}
		if d := h.fake.Downloads(); d != 0 {
			t.Errorf("%d HTTP downloads for a file on the local server's disk", d)
		}
	})
}

// downloadGuarded is Download that fails the test instead of hanging when
// opening the file blocks (a FIFO opened without O_NONBLOCK).
func downloadGuarded(t *testing.T, h *harness, ref *mediaregistry.MediaReference) (io.ReadCloser, error) {
	t.Helper()
	type result struct {
		body io.ReadCloser
		err  error
	}
	done := make(chan result, 1)
	go func() {
		body, _, err := h.tg.Download(context.Background(), ref)
		done <- result{body, err}
	}()
	select {
	case r := <-done:
		return r.body, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("Download still blocked after 10s")
		return nil, nil
	}
}

func TestLocalFilesDirMustBeAbsolute(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LocalFilesDir = "telegram-bot-api"
	ps := settings.Of(cfg.Validate())
	if len(ps) != 1 || ps[0].Path != "channels.telegram.local_files_dir" {
		t.Errorf("problems = %+v, want one for local_files_dir", ps)
	}
}
