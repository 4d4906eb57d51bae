package media_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
)

// fetchInProcess is the built-in agent's path: no IPC host in between.
func fetchInProcess(t *testing.T, r *mediatest.Rig, group, ref string) (*tools.FetchMediaResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	var res tools.FetchMediaResult
	err := r.Host.Caller(group).Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res)
	return &res, err
}

// stallingReader sends some bytes, then nothing more until closed.
func stallingReader(prefix []byte) func() io.ReadCloser {
	return func() io.ReadCloser {
		pr, pw := io.Pipe()
		go func() {
			pw.Write(prefix)
			pw.Write([]byte("never read")) // blocks until the reader closes
		}()
		return pr
	}
}

// A download that stops moving is cut by the idle deadline, whether it
// stalls before the first byte or halfway; nothing of it is kept.
func TestStalledDownloadIsCut(t *testing.T) {
	tests := []struct {
		name  string
		media func() chantest.Media
	}{
		{"no first byte", func() chantest.Media { return chantest.Media{Gate: make(chan struct{})} }},
		{"stalls midway", func() chantest.Media {
			return chantest.Media{Reader: stallingReader(bytes.Repeat([]byte("x"), 3000))}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Only the idle deadline can end these downloads: the overall
			// one is an hour away and the streams never resume.
			r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
				o.DownloadIdleTimeout = 50 * time.Millisecond
				o.DownloadTimeout = time.Hour
			})
			id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: "big.bin"}, tt.media())
			_, err := fetchInProcess(t, r, "family", id)
			var herr *tools.Error
			if !errors.As(err, &herr) || herr.Code != tools.CodeDownloadFailed || !strings.Contains(herr.Message, "stalled") {
				t.Fatalf("fetch = %v, want download_failed saying it stalled", err)
			}
			if es, _ := os.ReadDir(filepath.Join(r.CacheDir, "tmp")); len(es) != 0 {
				t.Errorf("partial download kept: %v", es)
			}
			// Nothing was cached: the next fetch downloads again.
			fetchInProcess(t, r, "family", id)
			if n := r.TG.Downloads(); n != 2 {
				t.Errorf("downloads = %d, want 2", n)
			}
		})
	}
}

// tricklingReader sends a byte every few milliseconds, forever: never
// idle, never done.
type tricklingReader struct{ closed chan struct{} }

func (r *tricklingReader) Read(p []byte) (int, error) {
	select {
	case <-r.closed:
		return 0, io.ErrClosedPipe
	case <-time.After(2 * time.Millisecond):
	}
	p[0] = 'x'
	return 1, nil
}

func (r *tricklingReader) Close() error {
	select {
	case <-r.closed:
	default:
		close(r.closed)
	}
	return nil
}

func TestDownloadOverallDeadline(t *testing.T) {
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		o.DownloadIdleTimeout = time.Hour
		o.DownloadTimeout = 200 * time.Millisecond
	})
	id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "slow.mp4"},
		chantest.Media{Reader: func() io.ReadCloser { return &tricklingReader{closed: make(chan struct{})} }})
	_, err := fetchInProcess(t, r, "family", id)
	var herr *tools.Error
	if !errors.As(err, &herr) || herr.Code != tools.CodeDownloadFailed || !strings.Contains(herr.Message, "took longer than") {
		t.Fatalf("fetch = %v, want download_failed saying it took too long", err)
	}
}

// A group's slow downloads hold its download slots, not the group: its
// cached media, lists and sends are served meanwhile, and a download over
// the slots waits for one instead of failing.
func TestSlowDownloadsDoNotBlockTheGroup(t *testing.T) {
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) { o.DownloadsPerGroup = 2 })
	gate := make(chan struct{})
	var slow []string
	for _, n := range []string{"a.png", "b.png", "c.png"} {
		slow = append(slow, r.Register("telegram:-100", mediaregistry.MediaReference{FileName: n}, chantest.Media{Data: mediatest.PNG(t, 2, 2), Gate: gate}))
	}
	cached := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "cached.png"}, chantest.Media{Data: mediatest.PNG(t, 3, 3)})
	if _, err := fetchInProcess(t, r, "family", cached); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(slow))
	for i, id := range slow[:2] {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = fetchInProcess(t, r, "family", id) }()
	}
	testwait.Until(t, "r.TG.Downloads() == 3", func() bool { return r.TG.Downloads() == 3 }) // cached + two slow ones at the network
	wg.Add(1)
	go func() { defer wg.Done(); _, errs[2] = fetchInProcess(t, r, "family", slow[2]) }()

	if _, err := fetchInProcess(t, r, "family", cached); err != nil {
		t.Fatalf("cached fetch while the slots are busy: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var list tools.ListMediaResult
	if err := r.Host.Caller("family").Call(ctx, tools.ListMedia, tools.ListMediaArgs{}, &list); err != nil || len(list.Items) != 4 {
		t.Fatalf("list while the slots are busy: %v, %d items", err, len(list.Items))
	}
	if err := r.Host.Caller("family").Call(ctx, tools.SendMessage, tools.SendMessageArgs{Text: "still here"}, nil); err != nil {
		t.Fatalf("send while the slots are busy: %v", err)
	}
	if n := r.TG.Downloads(); n != 3 {
		t.Errorf("downloads = %d with both slots busy, want 3 (the third waits for a slot)", n)
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("slow fetch %d: %v", i, err)
		}
	}
	if n := r.TG.Downloads(); n != 4 {
		t.Errorf("downloads = %d, want 4", n)
	}
}

// The timeouts read again (SetTimeouts) bound the downloads that start
// after: an idle deadline of an hour lowered to 50 ms cuts the next
// stalled download, and says the new value.
func TestSetTimeoutsBoundTheNextDownload(t *testing.T) {
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		o.DownloadIdleTimeout = time.Hour
		o.DownloadTimeout = time.Hour
	})
	r.Media.SetTimeouts(media.Timeouts{Idle: 50 * time.Millisecond})
	id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: "big.bin"},
		chantest.Media{Reader: stallingReader(bytes.Repeat([]byte("x"), 3000))})
	_, err := fetchInProcess(t, r, "family", id)
	var herr *tools.Error
	if !errors.As(err, &herr) || herr.Code != tools.CodeDownloadFailed || !strings.Contains(herr.Message, "stalled") ||
		!strings.Contains(herr.Message, "50ms") {
		t.Fatalf("fetch = %v, want download_failed saying it stalled for 50ms", err)
	}
}
