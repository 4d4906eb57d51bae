package media_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
)

// Fetching more than the disk budget keeps the bytes stored for media
// (the cache and the group's copies) under it, evicting the least recently
// used first; a ref evicted is downloaded again when asked.
func TestDiskBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	const size = 10 << 10 // each fetch stores 20 KiB: the cache's blob and the group's copy
	const max = 100 << 10 // five fetched documents
	var budget *diskbudget.Budget
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		budget = diskbudget.New(max, media.Areas(o.Cache, o.GroupsDir, o.Groups.All()), nil)
		o.Budget = budget
	})
	budget.SetClock(r.Clock.Now)
	refs := make([]string, 10)
	for i := range refs {
		data := make([]byte, size)
		rand.Read(data)
		refs[i] = r.Register("telegram:-100", mediaregistry.MediaReference{FileName: fmt.Sprintf("doc%d.bin", i), Kind: mediaregistry.Document},
			chantest.Media{Data: data})
	}
	c := r.Client("family")
	fetch := func(ref string) tools.FetchMediaResult {
		t.Helper()
		r.Clock.Advance(time.Minute)
		var res tools.FetchMediaResult
		if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil {
			t.Fatalf("fetch %s: %v", ref, err)
		}
		return res
	}
	paths := map[string]string{}
	for i, ref := range refs {
		paths[ref] = fetch(ref).Path
		if i > 0 {
			fetch(refs[0]) // doc0 is asked about again and again
		}
		// The sweeper's pass (woken by Added in the daemon).
		if _, err := budget.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		u, err := budget.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if u.Total > max {
			t.Fatalf("after fetching doc%d: %d bytes stored, over the budget of %d", i, u.Total, max)
		}
	}
	onDisk := func(ref string) bool {
		_, err := os.Stat(filepath.Join(r.GroupsDir, "family", paths[ref]))
		return err == nil
	}
	// Kept: doc0 (used last of all) and the most recent ones. Evicted:
	// the oldest used, doc1 first.
	if !onDisk(refs[0]) || !onDisk(refs[9]) || !onDisk(refs[8]) {
		t.Errorf("recently used copies evicted: doc0=%v doc8=%v doc9=%v", onDisk(refs[0]), onDisk(refs[8]), onDisk(refs[9]))
	}
	if onDisk(refs[1]) || onDisk(refs[2]) {
		t.Errorf("least recently used copies kept: doc1=%v doc2=%v", onDisk(refs[1]), onDisk(refs[2]))
	}
	// doc1's bytes left the cache too: asking again downloads again.
	before := r.TG.Downloads()
	if res := fetch(refs[1]); res.Cached || r.TG.Downloads() != before+1 {
		t.Errorf("evicted doc1: cached=%v downloads %d→%d, want one new download", res.Cached, before, r.TG.Downloads())
	}
	if res := fetch(refs[0]); !res.Cached {
		t.Errorf("doc0, used all along, was not served from the cache")
	}
}

// A ref whose cached blob and group copy vanished behind botd's back (a
// prune in another process, an operator's rm) is downloaded again rather
// than failing.
func TestFetchAfterTheCacheLostABlob(t *testing.T) {
	r := mediatest.New(t)
	ref := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "a.png"}, chantest.Media{Data: mediatest.PNG(t, 4, 4)})
	c := r.Client("family")
	var first tools.FetchMediaResult
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &first); err != nil {
		t.Fatal(err)
	}
	// Gone from the cache and the group folder, index rows still there.
	os.Remove(r.Cache.Path(first.SHA256))
	os.Remove(filepath.Join(r.GroupsDir, "family", first.Path))
	var again tools.FetchMediaResult
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &again); err != nil {
		t.Fatalf("fetch after the blob vanished: %v", err)
	}
	if again.Cached || r.TG.Downloads() != 2 || again.SHA256 != first.SHA256 {
		t.Errorf("refetch: cached=%v downloads=%d sha match=%v; want a fresh download of the same bytes", again.Cached, r.TG.Downloads(), again.SHA256 == first.SHA256)
	}
	if _, err := os.Stat(filepath.Join(r.GroupsDir, "family", again.Path)); err != nil {
		t.Errorf("the group's copy was not placed again: %v", err)
	}
}

// The copy a fetch hands to its caller (who opens it by its path once the
// answer arrives) is left by every sweep for diskbudget.HandOffGrace, even
// with the budget over and nothing else to evict; the cached blob is not.
// Past the grace, or once the group's next fetch hands over another file,
// it may go, and a fetch of the ref whose copy was evicted places it again
// with the same bytes.
func TestHandedOffCopyOutlivesSweeps(t *testing.T) {
	const size = 10 << 10
	var budget *diskbudget.Budget
	r := mediatest.NewWith(t, mediatest.MaxDownload, func(o *media.Options) {
		// Smaller than one file: every sweep wants everything gone.
		budget = diskbudget.New(1<<10, media.Areas(o.Cache, o.GroupsDir, o.Groups.All()), nil)
		o.Budget = budget
	})
	budget.SetClock(r.Clock.Now)
	data := make([]byte, size)
	rand.Read(data)
	ref := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "notes.bin", Kind: mediaregistry.Document}, chantest.Media{Data: data})
	other := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "other.bin", Kind: mediaregistry.Document}, chantest.Media{Data: []byte("other")})
	c := r.Client("family")
	fetch := func(ref string) tools.FetchMediaResult {
		t.Helper()
		var res tools.FetchMediaResult
		if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: ref}, &res); err != nil {
			t.Fatalf("fetch %s: %v", ref, err)
		}
		return res
	}
	sweep := func() {
		t.Helper()
		if _, err := budget.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	copyOf := func(res tools.FetchMediaResult) ([]byte, error) {
		return os.ReadFile(filepath.Join(r.GroupsDir, "family", res.Path))
	}

	res := fetch(ref)
	sweep()
	if got, err := copyOf(res); err != nil || string(got) != string(data) {
		t.Fatalf("the handed-off copy after a sweep: %d bytes, %v; want the %d fetched", len(got), err, size)
	}
	// The blob just downloaded is handed to the fetches waiting for it;
	// once another is downloaded it may go.
	fetch(other)
	if _, err := os.Stat(r.Cache.Path(res.SHA256)); err != nil {
		t.Fatalf("the cached blob before a sweep: %v", err)
	}
	sweep()
	if _, err := os.Stat(r.Cache.Path(res.SHA256)); err == nil {
		t.Error("the cached blob, no longer handed to anyone, survived a sweep over budget")
	}
	if _, err := copyOf(res); !os.IsNotExist(err) {
		t.Errorf("the copy no longer handed over survived a sweep over budget: %v", err)
	}

	// Fetched again, the evicted copy is placed again with its bytes
	// downloaded again; past the grace it goes.
	before := r.TG.Downloads()
	again := fetch(ref)
	if got, err := copyOf(again); err != nil || string(got) != string(data) || again.Path != res.Path {
		t.Fatalf("fetched again: %s, %d bytes, %v; want the same bytes at %s", again.Path, len(got), err, res.Path)
	}
	if r.TG.Downloads() != before+1 {
		t.Errorf("downloads %d→%d: the evicted bytes must be brought back", before, r.TG.Downloads())
	}
	r.Clock.Advance(diskbudget.HandOffGrace + time.Second)
	sweep()
	if _, err := copyOf(again); !os.IsNotExist(err) {
		t.Errorf("the copy past its grace survived a sweep over budget: %v", err)
	}
}
