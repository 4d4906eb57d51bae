package media_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/mediaregistry"
)

// A ref past its lifetime whose bytes are still cached is served from the
// cache; one whose bytes are gone answers expired with its age and why.
func TestExpiredRefs(t *testing.T) {
	r := mediatest.New(t) // refs live 30 minutes here
	cached := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "kept.png"}, chantest.Media{Data: mediatest.PNG(t, 2, 2)})
	gone := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "gone.png"}, chantest.Media{Data: mediatest.PNG(t, 3, 3)})
	c := r.Client("family")
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: cached}, nil); err != nil {
		t.Fatal(err)
	}
	r.Clock.Advance(2 * time.Hour)

	var res tools.FetchMediaResult
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: cached}, &res); err != nil || !res.Cached {
		t.Fatalf("expired but cached ref: %v (cached=%v), want it served from the cache", err, res.Cached)
	}
	err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: gone}, nil)
	var herr *tools.Error
	if !errors.As(err, &herr) || herr.Code != tools.CodeExpired {
		t.Fatalf("expired, never fetched ref: %v, want expired", err)
	}
	for _, want := range []string{"shared 2h ago", "expired 1h ago", "telegram", "30m", "media.ref_ttl"} {
		if !strings.Contains(herr.Message, want) {
			t.Errorf("expired message %q does not say %q", herr.Message, want)
		}
	}
	if n := r.TG.Downloads(); n != 1 {
		t.Errorf("downloads = %d, want 1 (expired refs are not downloaded)", n)
	}
}
