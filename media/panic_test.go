package media_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
)

// panicky is a channel whose downloader panics: a bug in a network
// library must not take the daemon down.
type panicky struct {
	gate  chan struct{}
	calls atomic.Int64
}

func (p *panicky) Name() string                    { return "slack" }
func (p *panicky) Start(ctx context.Context) error { return nil }
func (p *panicky) Send(ctx context.Context, m channels.OutMessage) (channels.Delivery, error) {
	return channels.Delivery{}, nil
}
func (p *panicky) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	p.calls.Add(1)
	<-p.gate
	panic("slack library bug")
}

var _ channels.Downloader = (*panicky)(nil)

func TestPanickingDownloaderFailsEveryWaiterAndServiceGoesOn(t *testing.T) {
	r := mediatest.New(t)
	bad := &panicky{gate: make(chan struct{})}
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "mixed", Chat: "slack:C1", Main: true}})
	if err != nil {
		t.Fatal(err)
	}
	svc := media.New(media.Options{Registry: r.Reg, Cache: r.Cache, Groups: set, GroupsDir: r.GroupsDir,
		Channels: map[string]channels.Channel{"telegram": r.TG, "slack": bad}})
	fam, _ := set.ByFolder("mixed")

	ref := mediaregistry.MediaReference{Chat: "slack:C1", Kind: mediaregistry.Image, FileName: "boom.png", Private: []byte("x")}
	if err := r.Reg.Register(context.Background(), &ref); err != nil {
		t.Fatal(err)
	}
	good := mediaregistry.MediaReference{Chat: "slack:C1", Kind: mediaregistry.Image, FileName: "ok.png", Private: []byte("y")}
	if err := r.Reg.Register(context.Background(), &good); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cache.Store(context.Background(), good.ID, "image/png", bytes.NewReader(mediatest.PNG(t, 3, 3)), 1<<20); err != nil {
		t.Fatal(err)
	}

	const n = 5
	var wg sync.WaitGroup
	errs := make([]*tools.Error, n)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svc.Fetch(context.Background(), fam, ref.ID)
		}()
	}
	close(bad.gate)
	wg.Wait()
	for i, e := range errs {
		if e == nil || e.Code != tools.CodeDownloadFailed {
			t.Fatalf("caller %d: err = %v, want %s", i, e, tools.CodeDownloadFailed)
		}
	}
	if bad.calls.Load() == 0 {
		t.Fatal("the panicking downloader was never called")
	}
	// The service still serves, the same ref included (no flight is left
	// hanging), and so does the in-process caller.
	if _, e := svc.Fetch(context.Background(), fam, good.ID); e != nil {
		t.Fatalf("fetch after the panic: %v", e)
	}
	var res tools.FetchMediaResult
	err = mediahost.New(mediahost.Options{Media: svc, Groups: set}).Caller("mixed").Call(context.Background(), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref.ID}, &res)
	if e, ok := err.(*tools.Error); !ok || e.Code != tools.CodeDownloadFailed {
		t.Fatalf("in-process fetch of the panicking ref: %v", err)
	}
}
