package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/proto/waMmsRetry"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// encryptionOverhead is what a download holds beyond the declared length
// while whatsmeow decrypts it in place: up to 16 bytes of CBC padding and
// the 10-byte MAC.
const encryptionOverhead = 16 + 10

// DownloadLimit implements channels.DownloadLimiter: the length the sender
// declared plus the encryption overhead, so a lying sender or server
// cannot fill the disk (whatsmeow checks the length only after the whole
// download). 0 when nothing was declared: no limit of the channel's own.
func (w *WhatsApp) DownloadLimit(ref *mediaregistry.MediaReference) (int64, string) {
	m, err := decodeHandle(ref.Private)
	if err != nil {
		return 0, ""
	}
	declared := declaredSize(m.Msg)
	// A length past int64 (the proto field is unsigned) declares nothing.
	if declared <= 0 || declared > math.MaxInt64-encryptionOverhead {
		return 0, ""
	}
	return declared + encryptionOverhead, "the size the sender declared"
}

// DownloadTo implements channels.FileDownloader: whatsmeow fetches and
// decrypts a ref's media straight into dst, the media cache's temp file,
// which enforces the size cap on every write. Expired server copies are
// re-requested from the sender's phone (media retry), which must be online.
func (w *WhatsApp) DownloadTo(ctx context.Context, ref *mediaregistry.MediaReference, dst mediaregistry.File) error {
	if ref.Channel != "" && ref.Channel != channelName {
		return fmt.Errorf("whatsapp download %s: ref belongs to %s", ref.ID, ref.Channel)
	}
	m, err := decodeHandle(ref.Private)
	if err != nil {
		return fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	cli, err := w.client()
	if err != nil {
		return fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	if err := w.fetch(ctx, cli, m, dst); err != nil {
		return fmt.Errorf("whatsapp download %s: %w", ref.ID, err)
	}
	return nil
}

// fetch downloads into f, going through one media retry when the server no
// longer has the file.
func (w *WhatsApp) fetch(ctx context.Context, cli client, m *decoded, f mediaregistry.File) error {
	err := cli.DownloadToFile(ctx, m.Msg, f)
	if err == nil {
		return checkWritten(m.Msg, f)
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
	// The first attempt may have left bytes behind.
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := cli.DownloadToFile(ctx, m.Msg, f); err != nil {
		return fmt.Errorf("after media retry: %w", classify(err))
	}
	return checkWritten(m.Msg, f)
}

// errNothingDownloaded is a download whatsmeow reported as done without
// writing a byte of media the sender declared. It does so when WhatsApp
// names no media host: it then tries none, and checks no hash.
var errNothingDownloaded = errors.New("the download ended without error but wrote nothing (WhatsApp named no media host?)")

func checkWritten(msg downloadable, f mediaregistry.File) error {
	if declaredSize(msg) <= 0 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("size of the download: %w", err)
	}
	if fi.Size() == 0 {
		return errNothingDownloaded
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

// setDirectPath points the sub-message at the re-uploaded file. whatsmeow
// downloads by direct path only, from the media hosts WhatsApp names over
// the websocket; the URL still names the expired copy, so it goes too.
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
func (w *WhatsApp) mediaRetry(ctx context.Context, cli client, m *decoded) (string, error) {
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
