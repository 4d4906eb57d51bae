package mediaregistry_test

import (
	"context"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
)

// Web refs are refs like any other: their own prefix, a month's life,
// and placeholders that parse.
func TestWebRefs(t *testing.T) { storetest.Each(t, testWebRefs) }

func testWebRefs(t *testing.T, db store.Config) {
	ctx := context.Background()
	st := openStore(t, db)
	reg := mediaregistry.New(st.DB, 0)
	ref := &mediaregistry.MediaReference{Channel: "web", Chat: "web:main", Kind: mediaregistry.Image, FileName: "a.png", Private: []byte("f")}
	if err := reg.Register(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref.ID, "wb_") || !mediaregistry.ValidRefID(ref.ID) {
		t.Fatalf("id %q", ref.ID)
	}
	if got := ref.Expires.Sub(ref.Created); got != 30*24*time.Hour {
		t.Errorf("a web ref lives %v", got)
	}
	if ps := mediaregistry.Parse(mediaregistry.Render(ref)); len(ps) != 1 || ps[0].Ref != ref.ID {
		t.Fatalf("placeholder %q parsed as %+v", mediaregistry.Render(ref), ps)
	}
}
