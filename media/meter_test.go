package media_test

import (
	"sync"
	"testing"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
)

// meter records what the service counts.
type meter struct {
	mu      sync.Mutex
	fetches []string // network/result
	bytes   map[string]int64
}

func (m *meter) MediaFetched(network, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fetches = append(m.fetches, network+"/"+result)
}

func (m *meter) MediaDownloaded(network string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bytes[network] += n
}

// Each fetch_media call is counted with its result, and the bytes of the
// one download once: a cached answer downloads nothing.
func TestMeterCountsFetchesAndBytes(t *testing.T) {
	m := &meter{bytes: map[string]int64{}}
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) { o.Meter = m })
	img := mediatest.PNG(t, 40, 30)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "cat.png", MIME: "image/png", Size: int64(len(img))}, chantest.Media{Data: img})
	gone := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "gone.png"}, chantest.Media{Err: channels.ErrUnavailable})
	c := r.Client("family")
	var res tools.FetchMediaResult
	for _, ref := range []string{id, id} {
		if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil {
			t.Fatal(err)
		}
	}
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: gone}, &res); err == nil {
		t.Fatal("a ref its network no longer has was fetched")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := []string{"telegram/downloaded", "telegram/cached", "telegram/failed"}
	if len(m.fetches) != len(want) {
		t.Fatalf("fetches counted = %v, want %v", m.fetches, want)
	}
	for i := range want {
		if m.fetches[i] != want[i] {
			t.Errorf("fetch %d counted as %s, want %s", i, m.fetches[i], want[i])
		}
	}
	if got := m.bytes["telegram"]; got != int64(len(img)) {
		t.Errorf("bytes downloaded = %d, want %d (one download)", got, len(img))
	}
}
