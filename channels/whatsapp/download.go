package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/proto/waMmsRetry"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// Download fetches and decrypts a ref's media into a temp file and streams
// it; the file is removed on Close. Memory does not grow with file size.
// Expired server copies are re-requested from the sender's phone (media
// retry), which must be online.
func (w *WhatsApp) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	if ref.Channel != "" && ref.Channel != channelName {
		return nil, 0, fmt.Errorf("whatsapp download %s: ref belongs to %s", ref.ID, ref.Channel)
	}
	m, err := decodeHandle(ref.Private)
	if err != nil {
		return nil, 0, fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	cli, err := w.client()
	if err != nil {
		return nil, 0, fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	if err := os.MkdirAll(w.tmpDir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	f, err := os.CreateTemp(w.tmpDir, "dl-*")
	if err != nil {
		return nil, 0, fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	body := &tempFile{File: f}
	if err := w.fetch(ctx, cli, m, f); err != nil {
		body.Close()
		return nil, 0, fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		body.Close()
		return nil, 0, fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	return body, st.Size(), nil
}

// tempFile deletes itself when closed.
type tempFile struct {
	*os.File
	once sync.Once
}

func (t *tempFile) Close() error {
	var err error
	t.once.Do(func() {
		err = t.File.Close()
		if rmErr := os.Remove(t.File.Name()); rmErr != nil && err == nil {
			err = rmErr
		}
	})
	return err
}

// fetch downloads into f, going through one media retry when the server no
// longer has the file.
func (w *WhatsApp) fetch(ctx context.Context, cli client, m *media, f *os.File) error {
	dst := capped(f, declaredSize(m.Msg))
	err := cli.DownloadToFile(ctx, m.Msg, dst)
	if err == nil {
		return nil
	}
	if !needsMediaRetry(err) {
		return classify(err)
	}
	w.log.Info("whatsapp: media expired on the server; asking the phone to re-upload", "msg", m.Info.ID, "err", err)
	path, err := w.mediaRetry(ctx, cli, m)
	if err != nil {
		return err
	}
	setDirectPath(m.Msg, path)
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := cli.DownloadToFile(ctx, m.Msg, dst); err != nil {
		return fmt.Errorf("after media retry: %w", classify(err))
	}
	return nil
}

func needsMediaRetry(err error) bool {
	return errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith403) ||
		errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith404) ||
		errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith410) ||
		errors.Is(err, whatsmeow.ErrNoURLPresent)
}

func declaredSize(msg downloadable) int64 {
	if s, ok := msg.(interface{ GetFileLength() uint64 }); ok {
		return int64(s.GetFileLength())
	}
	return 0
}

// capFile refuses to grow the temp file past what the sender declared
// (plus CBC padding and the MAC), so a lying sender or server cannot fill
// the disk; whatsmeow only checks the length after the whole download.
type capFile struct {
	*os.File
	max int64
	n   int64
}

var _ whatsmeow.File = (*capFile)(nil)

func capped(f *os.File, declared int64) whatsmeow.File {
	if declared <= 0 {
		return f
	}
	return &capFile{File: f, max: declared + 16 + 10}
}

func (c *capFile) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, fmt.Errorf("%w: more than the declared %s", channels.ErrTooLarge, mediaregistry.FormatSize(c.max-26))
	}
	n, err := c.File.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *capFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > c.max {
		return 0, fmt.Errorf("%w: more than the declared %s", channels.ErrTooLarge, mediaregistry.FormatSize(c.max-26))
	}
	return c.File.WriteAt(p, off)
}

func (c *capFile) Truncate(size int64) error {
	if size < c.n {
		c.n = size
	}
	return c.File.Truncate(size)
}

// ReadFrom hides os.File's own ReadFrom, which would bypass Write.
func (c *capFile) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c}, r)
}

// classify maps whatsmeow's errors onto the host's sentinels.
func classify(err error) error {
	switch {
	case errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith403),
		errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith404),
		errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith410),
		errors.Is(err, whatsmeow.ErrMediaNotAvailableOnPhone):
		return fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	return err
}

// setDirectPath points the sub-message at the re-uploaded file. The old URL
// is dropped because whatsmeow prefers a URL over the direct path.
func setDirectPath(msg downloadable, path string) {
	switch v := msg.(type) {
	case *waE2E.ImageMessage:
		v.URL, v.DirectPath = nil, &path
	case *waE2E.VideoMessage:
		v.URL, v.DirectPath = nil, &path
	case *waE2E.AudioMessage:
		v.URL, v.DirectPath = nil, &path
	case *waE2E.DocumentMessage:
		v.URL, v.DirectPath = nil, &path
	case *waE2E.StickerMessage:
		v.URL, v.DirectPath = nil, &path
	}
}

// mediaRetry sends a media retry receipt and waits (bounded) for the
// phone's answer, returning the new direct path.
func (w *WhatsApp) mediaRetry(ctx context.Context, cli client, m *media) (string, error) {
	key := m.Msg.GetMediaKey()
	ch, done := w.retries.wait(m.Info.ID)
	defer done()
	if err := cli.SendMediaRetryReceipt(ctx, &m.Info, key); err != nil {
		return "", fmt.Errorf("media retry request: %w", err)
	}
	t := time.NewTimer(w.retryTimeout)
	defer t.Stop()
	var evt *events.MediaRetry
	select {
	case evt = <-ch:
	case <-t.C:
		return "", fmt.Errorf("media expired on WhatsApp's server and the sender's phone did not re-upload it within %s (is the phone online?)", w.retryTimeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	notif, err := whatsmeow.DecryptMediaRetryNotification(evt, key)
	if err != nil {
		if errors.Is(err, whatsmeow.ErrMediaNotAvailableOnPhone) {
			return "", fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
		}
		return "", fmt.Errorf("media retry: %w", err)
	}
	switch notif.GetResult() {
	case waMmsRetry.MediaRetryNotification_SUCCESS:
		if p := notif.GetDirectPath(); p != "" {
			return p, nil
		}
		return "", errors.New("media retry: the phone answered without a new path")
	case waMmsRetry.MediaRetryNotification_NOT_FOUND:
		return "", fmt.Errorf("%w: %w", channels.ErrUnavailable, whatsmeow.ErrMediaNotAvailableOnPhone)
	default:
		return "", fmt.Errorf("media retry: the phone reported %s", notif.GetResult())
	}
}

// retryWaiters routes MediaRetry events (which arrive on whatsmeow's event
// goroutine) to the downloads waiting for them, by message id.
type retryWaiters struct {
	mu sync.Mutex
	m  map[string][]chan *events.MediaRetry
}

func (r *retryWaiters) wait(id string) (<-chan *events.MediaRetry, func()) {
	ch := make(chan *events.MediaRetry, 1)
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[string][]chan *events.MediaRetry)
	}
	r.m[id] = append(r.m[id], ch)
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		list := r.m[id]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(r.m, id)
		} else {
			r.m[id] = list
		}
	}
}

func (r *retryWaiters) deliver(evt *events.MediaRetry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range r.m[evt.MessageID] {
		select {
		case ch <- evt:
		default:
		}
	}
}
