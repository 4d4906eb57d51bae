package media_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
)

// A ref past its lifetime whose bytes are still cached is served from the
// cache; one whose bytes are gone answers expired with its age and why.
func TestExpiredRefs(t *testing.T) {
	r := newRig(t) // refs live 30 minutes here
	cached := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "kept.png"}, chantest.Media{Data: pngBytes(t, 2, 2)})
	gone := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "gone.png"}, chantest.Media{Data: pngBytes(t, 3, 3)})
	c := r.client("family")
	if err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: cached}, nil); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Hour)

	var res ipc.FetchMediaResult
	if err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: cached}, &res); err != nil || !res.Cached {
		t.Fatalf("expired but cached ref: %v (cached=%v), want it served from the cache", err, res.Cached)
	}
	err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: gone}, nil)
	var herr *ipc.Error
	if !errors.As(err, &herr) || herr.Code != ipc.CodeExpired {
		t.Fatalf("expired, never fetched ref: %v, want expired", err)
	}
	for _, want := range []string{"shared 2h ago", "expired 1h ago", "telegram", "30m", "media.ref_ttl"} {
		if !strings.Contains(herr.Message, want) {
			t.Errorf("expired message %q does not say %q", herr.Message, want)
		}
	}
	if n := r.tg.Downloads(); n != 1 {
		t.Errorf("downloads = %d, want 1 (expired refs are not downloaded)", n)
	}
}
