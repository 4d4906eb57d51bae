package diskbudget_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/internal/testwait"
)

// area is a folder of the test under a temp dir, with a media/ inside.
type area struct {
	name string
	dir  string // the root
}

func newArea(t *testing.T, name string) area {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "media"), 0o750); err != nil {
		t.Fatal(err)
	}
	return area{name: name, dir: dir}
}

func (a area) spec() diskbudget.Area {
	return diskbudget.Area{Name: a.name, Open: func() (*os.Root, error) { return os.OpenRoot(a.dir) }, Dir: "media",
		Busy: func(rel string) bool { return strings.HasPrefix(filepath.Base(rel), ".tmp-") }}
}

// put writes size bytes at media/name, last used at used.
func (a area) put(t *testing.T, name string, size int, used time.Time) string {
	t.Helper()
	p := filepath.Join(a.dir, "media", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, used, used); err != nil {
		t.Fatal(err)
	}
	return p
}

func (a area) has(name string) bool {
	_, err := os.Lstat(filepath.Join(a.dir, "media", name))
	return err == nil
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

func TestSweepEvictsLeastRecentlyUsedFirst(t *testing.T) {
	a, c := newArea(t, "family"), newArea(t, "cache")
	b := diskbudget.New(1000, []diskbudget.Area{c.spec(), a.spec()}, nil)
	// 1600 bytes over two areas, used in this order: c0 a1 c2 a3 ... a7.
	for i := range 8 {
		ar := []area{c, a}[i%2]
		ar.put(t, fmt.Sprintf("f%d", i), 200, at(i))
	}
	u, err := b.Scan(context.Background())
	if err != nil || u.Total != 1600 || u.Files != 8 {
		t.Fatalf("scan = %+v, %v; want 8 files, 1600 bytes", u, err)
	}
	res, err := b.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Down to 90% of the budget (900): four files of 200 stay.
	if res.Files != 4 || res.Freed != 800 || res.Left != 800 {
		t.Errorf("sweep = %+v, want 4 files and 800 bytes freed, 800 left", res)
	}
	for i := range 8 {
		ar := []area{c, a}[i%2]
		if got, want := ar.has(fmt.Sprintf("f%d", i)), i >= 4; got != want {
			t.Errorf("f%d kept = %v, want %v (the four least recently used go)", i, got, want)
		}
	}
	// Under budget now: a second sweep removes nothing.
	if res, err := b.Sweep(context.Background()); err != nil || res.Files != 0 {
		t.Errorf("second sweep = %+v, %v; want nothing removed", res, err)
	}
}

func TestSweepUnderBudgetRemovesNothing(t *testing.T) {
	a := newArea(t, "family")
	for i := range 5 {
		a.put(t, fmt.Sprintf("f%d", i), 100, at(i))
	}
	b := diskbudget.New(500, []diskbudget.Area{a.spec()}, nil)
	res, err := b.Sweep(context.Background())
	if err != nil || res.Files != 0 || res.Left != 500 {
		t.Fatalf("sweep = %+v, %v; want nothing removed, 500 left", res, err)
	}
}

// A touched file is the most recently used, whatever its age on disk.
func TestTouchMakesAFileRecent(t *testing.T) {
	a := newArea(t, "family")
	for i := range 4 {
		a.put(t, fmt.Sprintf("f%d", i), 100, at(i))
	}
	b := diskbudget.New(300, []diskbudget.Area{a.spec()}, nil)
	b.SetClock(func() time.Time { return at(10) })
	root, err := os.OpenRoot(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, err := b.Acquire(root, "media/f0")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := b.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"f0": true, "f1": false, "f2": false, "f3": true} {
		if a.has(name) != want {
			t.Errorf("%s kept = %v, want %v", name, a.has(name), want)
		}
	}
}

// A file a fetch holds is never evicted; once released, it can be.
func TestSweepNeverEvictsAFileInUse(t *testing.T) {
	a := newArea(t, "family")
	for i := range 4 {
		a.put(t, fmt.Sprintf("f%d", i), 100, at(i))
	}
	b := diskbudget.New(300, []diskbudget.Area{a.spec()}, nil) // evicts down to 270
	b.SetClock(func() time.Time { return at(0) })              // the hold keeps f0 the oldest
	root, err := os.OpenRoot(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	held, err := b.Acquire(root, "media/f0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !a.has("f0") || res.InUse != 1 {
		t.Fatalf("held file: kept=%v, in use=%d; want kept and counted as in use", a.has("f0"), res.InUse)
	}
	if a.has("f1") || a.has("f2") || !a.has("f3") || res.Left != 200 {
		t.Errorf("sweep = %+v, kept f1=%v f2=%v f3=%v; want f1 and f2 evicted in f0's stead", res, a.has("f1"), a.has("f2"), a.has("f3"))
	}
	held.Close()
	b2 := diskbudget.New(100, []diskbudget.Area{a.spec()}, nil)
	if _, err := b2.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.has("f0") {
		t.Errorf("released file still kept over budget")
	}
}

// The sweep of another process (botd media prune) respects the hold too:
// the lock is the kernel's, not a map in memory. Here a second Budget over
// the same folder stands in for it.
func TestHoldIsSeenByAnotherBudget(t *testing.T) {
	a := newArea(t, "family")
	a.put(t, "f0", 100, at(0))
	root, err := os.OpenRoot(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	held, err := diskbudget.New(1, []diskbudget.Area{a.spec()}, nil).Acquire(root, "media/f0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	res, err := diskbudget.New(1, []diskbudget.Area{a.spec()}, nil).Prune(context.Background(), diskbudget.Filter{})
	if err != nil || res.Files != 0 || res.InUse != 1 || !a.has("f0") {
		t.Fatalf("prune of a held file = %+v, %v, kept=%v; want it kept", res, err, a.has("f0"))
	}
}

// Acquire of a file a sweep removed says so (the fetch downloads again).
func TestAcquireGone(t *testing.T) {
	a := newArea(t, "family")
	root, err := os.OpenRoot(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	b := diskbudget.New(100, []diskbudget.Area{a.spec()}, nil)
	if _, err := b.Acquire(root, "media/none"); !errorsIs(err, diskbudget.ErrGone) {
		t.Errorf("Acquire(missing) = %v, want ErrGone", err)
	}
	// A FIFO planted under the name: refused, and without hanging.
	if err := mkfifo(filepath.Join(a.dir, "media", "fifo")); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := b.Acquire(root, "media/fifo"); !errorsIs(err, diskbudget.ErrGone) {
		t.Errorf("Acquire(FIFO) = %v, want ErrGone", err)
	}
}

// Links a local process plants are neither counted nor followed: the
// file they point at outside the area stays, and so does the link's
// target inside another folder.
func TestLinksAreNotOurs(t *testing.T) {
	a := newArea(t, "family")
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, make([]byte, 5000), 0o640); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Dir(outside)
	if err := os.Symlink(outside, filepath.Join(a.dir, "media", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outDir, filepath.Join(a.dir, "media", "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(a.dir, "media", "hard")); err != nil {
		t.Fatal(err)
	}
	a.put(t, "mine", 100, at(0))
	b := diskbudget.New(1, []diskbudget.Area{a.spec()}, nil)
	u, err := b.Scan(context.Background())
	if err != nil || u.Total != 100 || u.Files != 1 {
		t.Fatalf("scan = %+v, %v; want only the 100-byte file of our own", u, err)
	}
	if _, err := b.Prune(context.Background(), diskbudget.Filter{}); err != nil {
		t.Fatal(err)
	}
	if a.has("mine") {
		t.Errorf("our file was not pruned")
	}
	if fi, err := os.Stat(outside); err != nil || fi.Size() != 5000 {
		t.Errorf("the file outside the area was touched: %v", err)
	}
}

// Files being written count toward the budget but are never evicted.
func TestBusyFilesCountButStay(t *testing.T) {
	a := newArea(t, "family")
	a.put(t, ".tmp-half", 300, at(0))
	a.put(t, "done", 100, at(1))
	b := diskbudget.New(200, []diskbudget.Area{a.spec()}, nil)
	res, err := b.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !a.has(".tmp-half") || a.has("done") || res.Left != 300 {
		t.Errorf("sweep = %+v; want the temp file kept and counted, the other evicted", res)
	}
}

func TestPruneByAreaAndAge(t *testing.T) {
	a, c := newArea(t, "family"), newArea(t, "cache")
	for i := range 4 {
		a.put(t, fmt.Sprintf("a%d", i), 10, at(i))
		c.put(t, fmt.Sprintf("c%d", i), 10, at(i))
	}
	b := diskbudget.New(1<<30, []diskbudget.Area{c.spec(), a.spec()}, nil)
	b.SetClock(func() time.Time { return at(4) })
	res, err := b.Prune(context.Background(), diskbudget.Filter{Areas: []string{"family"}, UsedBefore: at(2)})
	if err != nil || res.Files != 2 {
		t.Fatalf("prune = %+v, %v; want a0 and a1", res, err)
	}
	var kept []string
	for _, n := range []string{"a0", "a1", "a2", "a3"} {
		if a.has(n) {
			kept = append(kept, n)
		}
	}
	if !slices.Equal(kept, []string{"a2", "a3"}) {
		t.Errorf("family kept %v, want [a2 a3]", kept)
	}
	for i := range 4 {
		if !c.has(fmt.Sprintf("c%d", i)) {
			t.Errorf("c%d of another area was pruned", i)
		}
	}
}

// Forget runs before removal, with the file still there to be locked.
func TestForgetBeforeRemove(t *testing.T) {
	a := newArea(t, "cache")
	a.put(t, "blob", 10, at(0))
	var mu sync.Mutex
	var forgot []string
	spec := a.spec()
	spec.Forget = func(_ context.Context, rel string) error {
		mu.Lock()
		defer mu.Unlock()
		if !a.has("blob") {
			t.Errorf("Forget ran after the file was removed")
		}
		forgot = append(forgot, rel)
		return nil
	}
	b := diskbudget.New(1, []diskbudget.Area{spec}, nil)
	if _, err := b.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(forgot, []string{"media/blob"}) || a.has("blob") {
		t.Errorf("forgot %v, kept=%v; want media/blob forgotten and removed", forgot, a.has("blob"))
	}
}

// Added past the budget wakes the sweeper at once, not at its next tick.
func TestAddedWakesTheSweeper(t *testing.T) {
	a := newArea(t, "family")
	b := diskbudget.New(250, []diskbudget.Area{a.spec()}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx, time.Hour) }()
	defer func() { cancel(); <-done }()
	testwait.Until(t, "the sweep at start", func() bool { return diskbudget.Sweeps(b) >= 1 })
	for i := range 4 {
		a.put(t, fmt.Sprintf("f%d", i), 100, at(i))
	}
	b.Added(400)
	// Only a kick can bring the next sweep: the tick is an hour away.
	testwait.Until(t, "a sweep woken by Added", func() bool { return diskbudget.Sweeps(b) >= 2 })
	if u, err := b.Scan(context.Background()); err != nil || u.Total > 250 {
		t.Fatalf("after the woken sweep: %+v, %v; want at most 250 bytes", u, err)
	}
	if a.has("f0") || !a.has("f3") {
		t.Errorf("the sweeper woken by Added evicted the wrong file")
	}
}

// A file handed off (HandOff) is left by sweeps until HandOffGrace passes
// or its area hands off another; an explicit Prune removes it still.
func TestSweepLeavesTheFileHandedOff(t *testing.T) {
	a := newArea(t, "family")
	now := at(10)
	b := diskbudget.New(100, []diskbudget.Area{a.spec()}, nil)
	b.SetClock(func() time.Time { return now })
	a.put(t, "old", 200, at(1))
	a.put(t, "copy", 200, at(2))
	a.put(t, "next", 200, at(3))
	b.HandOff("family", "media/copy")
	b.HandOff("elsewhere", "media/old") // another area's name: nothing here
	sweep := func() {
		t.Helper()
		if _, err := b.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	sweep()
	if a.has("old") || a.has("next") || !a.has("copy") {
		t.Fatalf("after a sweep over budget: old=%v copy=%v next=%v; want only the handed-off copy", a.has("old"), a.has("copy"), a.has("next"))
	}
	now = now.Add(diskbudget.HandOffGrace - time.Second)
	sweep()
	if !a.has("copy") {
		t.Fatal("evicted within its grace")
	}
	now = now.Add(2 * time.Second)
	sweep()
	if a.has("copy") {
		t.Fatal("left past its grace")
	}

	// Another file handed off: the first is no longer left.
	a.put(t, "copy", 200, at(4))
	a.put(t, "next", 200, at(5))
	b.HandOff("family", "media/copy")
	b.HandOff("family", "media/next")
	sweep()
	if a.has("copy") || !a.has("next") {
		t.Fatalf("copy=%v next=%v; want only the last handed off", a.has("copy"), a.has("next"))
	}
	if _, err := b.Prune(context.Background(), diskbudget.Filter{}); err != nil {
		t.Fatal(err)
	}
	if a.has("next") {
		t.Error("an explicit prune left the handed-off file")
	}
}
