// Package diskbudget keeps the bytes botd stores for media (the download
// cache, each group's copies, inline copies) under one budget,
// media.max_disk_bytes, evicting the least recently used first.
//
// Use is recorded in a file's modification time (Touch), the way Go's
// build cache does it: the order survives restarts and is the same for the
// daemon's sweeper and `botd media prune` running in another process. A
// file a fetch is using is held with a shared lock (Hold) and never
// evicted: eviction takes the lock exclusively, without waiting, and then
// checks the file was not used since it was chosen.
//
// Nothing here runs on the write path. Writers report what they added
// (Added); the sweeper, a goroutine of its own, does the evicting.
//
// Groups share the budget fairly (SetShares): a file that is the only
// copy of its bytes (Area.Sole: a web upload, say) is never evicted to
// make room for another group, only while its own group holds more than
// its share; writers of such files ask GroupUse first and refuse past the
// share instead.
package diskbudget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/botd-dev/botd/groups"
)

// DefaultMaxBytes is media.max_disk_bytes when the config does not say.
const DefaultMaxBytes = 4 << 30

// lowWater is the share of the budget a sweep frees down to, so that the
// next few downloads do not each need a sweep of their own.
const lowWater = 0.9

// Area is one place botd keeps media bytes.
type Area struct {
	// Name identifies the area in reports: "cache", or a group folder.
	Name string
	// Open opens the area's root. A group's refuses a symlinked folder,
	// so nothing outside botd's folders is ever counted or removed.
	Open func() (*os.Root, error)
	// Dir is the folder inside the root that holds the bytes.
	Dir string
	// Busy reports a file being written (a temp name, relative to the
	// root): it counts toward the budget but is never evicted.
	Busy func(rel string) bool
	// Forget, when set, runs before a file is removed, while it is locked:
	// the cache drops the index rows that point at the blob. An error
	// wrapping ErrKeep keeps the file, counted as in use (a blob whose
	// only copy still waits for its upload).
	Forget func(ctx context.Context, rel string) error
	// Group is the group folder whose share the area's files count
	// against; empty for bytes of no one group (the download cache).
	Group string
	// GroupOf, when set, names the group of each file instead (an area
	// that holds several groups' files, like the web channel's rooms).
	GroupOf func(rel string) string
	// Sole reports a file that exists nowhere else: lost when evicted.
	// It is evicted only while its group holds more than its share.
	Sole func(rel string) bool
}

func (a Area) groupOf(rel string) string {
	if a.GroupOf != nil {
		return a.GroupOf(rel)
	}
	return a.Group
}

// File is one stored file as a sweep sees it.
type File struct {
	Area string
	Rel  string // relative to the area's root, slash-separated
	Size int64
	Used time.Time
	Busy bool
	// Group owns the file ("" for none); Sole marks the only copy.
	Group string
	Sole  bool
}

// AreaUsage is what one area holds.
type AreaUsage struct {
	Name   string
	Files  int
	Bytes  int64
	Oldest time.Time // least recent use; zero when empty
	Newest time.Time // most recent use
}

// Usage is what all areas hold, against the budget.
type Usage struct {
	Max   int64
	Total int64
	Files int
	Areas []AreaUsage
}

// Result says what a sweep or prune removed and what is left.
type Result struct {
	Files  int
	Freed  int64
	Left   int64
	InUse  int   // candidates skipped because a fetch held them
	Failed error // first removal error, if any
}

// Budget bounds the bytes of its areas.
type Budget struct {
	max   int64
	areas []Area
	log   *slog.Logger
	now   func() time.Time

	sweeping sync.Mutex    // one sweep or prune at a time
	kick     chan struct{} // wakes Run early
	last     atomic.Int64  // total after the last sweep
	added    atomic.Int64  // bytes reported since the last sweep
	sweeps   atomic.Int64  // sweeps done, for tests to wait on

	sharesMu sync.Mutex
	groups   int   // how many groups share the budget
	fixed    int64 // media.group_share; 0 = max / groups
	floor    int64

	handMu sync.Mutex
	handed map[string]handoff // by area: the file last handed to a caller
}

// handoff is a file a fetch handed to its caller by path, and until when
// a sweep leaves it.
type handoff struct {
	rel   string
	until time.Time
}

// HandOffGrace is how long a sweep leaves the file a fetch handed to its
// caller (HandOff): long past the moment the caller opens it.
const HandOffGrace = time.Minute

// HandOff records that rel, in the area named area, was just handed to a
// caller that opens it by its path after the fetch let go of it: a
// group's copy of a fetched file, which fetch_media's MCP half (in botd
// mcp or in-process) opens once the answer arrives, or a blob just
// downloaded, which the fetches waiting for it hold once they wake. Until HandOffGrace
// has passed, or the area hands off another file, a sweep of this budget
// leaves it; without that, a budget kept over by what may not be evicted
// (another group's sole copies) has every sweep woken by the fetch's own
// writes evict the copy before its caller can open it. One file per area,
// so what the sweeps leave is bounded; an explicit prune (another
// process) does not know of it and may remove it.
func (b *Budget) HandOff(area, rel string) {
	if b == nil {
		return
	}
	b.handMu.Lock()
	defer b.handMu.Unlock()
	if b.handed == nil {
		b.handed = map[string]handoff{}
	}
	b.handed[area] = handoff{rel: rel, until: b.now().Add(HandOffGrace)}
}

// handedOff reports a file a sweep must leave (HandOff).
func (b *Budget) handedOff(f File, now time.Time) bool {
	b.handMu.Lock()
	defer b.handMu.Unlock()
	h, ok := b.handed[f.Area]
	return ok && h.rel == f.Rel && now.Before(h.until)
}

// New returns a budget of max bytes over areas; it does no I/O.
func New(max int64, areas []Area, log *slog.Logger) *Budget {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Budget{max: max, areas: areas, log: log, now: time.Now, kick: make(chan struct{}, 1)}
}

// SetShares says how the budget is shared: by groups groups, each
// getting fixed bytes when fixed > 0, else an equal part of the budget
// but never less than floor (so that a group among many can still keep a
// few of the largest uploads; the shares may then add up to more than
// the budget, and sole copies keep it from being met rather than be
// lost).
func (b *Budget) SetShares(groups int, fixed, floor int64) {
	b.sharesMu.Lock()
	defer b.sharesMu.Unlock()
	b.groups, b.fixed, b.floor = max(groups, 1), fixed, floor
}

// Share is one group's share of the budget in bytes.
func (b *Budget) Share() int64 {
	b.sharesMu.Lock()
	defer b.sharesMu.Unlock()
	if b.fixed > 0 {
		return b.fixed
	}
	return max(b.max/int64(max(b.groups, 1)), b.floor)
}

// GroupUse is what one group holds that cannot be evicted for another.
type GroupUse struct {
	Group string
	Share int64
	// Sole is the bytes of the group's sole copies: what counts against
	// its share.
	Sole int64
}

// Free is how many more sole bytes the group may write (0 when none).
func (g GroupUse) Free() int64 { return max(g.Share-g.Sole, 0) }

// GroupUse measures group's sole copies against its share. It walks the
// areas that may hold the group's files, so it costs a directory walk:
// writers call it once per upload, not per byte.
func (b *Budget) GroupUse(ctx context.Context, group string) (GroupUse, error) {
	gu := GroupUse{Group: group, Share: b.Share()}
	for _, a := range b.areas {
		if a.Sole == nil || (a.GroupOf == nil && a.Group != group) {
			continue
		}
		err := walk(ctx, a, func(dir, name string, size int64, _ time.Time) {
			rel := name
			if dir != "." {
				rel = dir + "/" + name
			}
			if a.groupOf(rel) == group && a.Sole(rel) {
				gu.Sole += size
			}
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return gu, fmt.Errorf("media area %s: %w", a.Name, err)
		}
	}
	return gu, nil
}

// Max is the budget in bytes.
func (b *Budget) Max() int64 { return b.max }

// SetClock replaces the time source that Touch stamps and prune ages
// are judged by (tests).
func (b *Budget) SetClock(now func() time.Time) { b.now = now }

// Now is the budget's time.
func (b *Budget) Now() time.Time { return b.now() }

// Added reports n bytes written into an area. When the estimate passes
// the budget the sweeper is woken; the writer never waits for it.
func (b *Budget) Added(n int64) {
	if b == nil || n <= 0 {
		return
	}
	if b.last.Load()+b.added.Add(n) > b.max {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// Run sweeps at start, every interval, and whenever Added reports the
// budget passed, until ctx ends.
func (b *Budget) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		res, err := b.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			b.log.Warn("media disk budget: sweep failed", "err", err)
		case res.Files > 0:
			b.log.Info("media disk budget: evicted least recently used files", "files", res.Files,
				"freed", res.Freed, "left", res.Left, "max", b.max)
		}
		if res.Left > b.max {
			b.log.Warn("media disk budget: still over budget, the rest is in use or could not be removed",
				"left", res.Left, "max", b.max, "in_use", res.InUse, "err", res.Failed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.kick:
		}
	}
}

// Scan measures every area without changing anything.
func (b *Budget) Scan(ctx context.Context) (Usage, error) {
	_, u, err := b.collect(ctx, nil, false)
	return u, err
}

// Sweep evicts the least recently used files, oldest first, until the
// areas hold at most 90% of the budget; under budget it removes nothing.
func (b *Budget) Sweep(ctx context.Context) (Result, error) {
	b.sweeping.Lock()
	defer b.sweeping.Unlock()
	defer b.sweeps.Add(1)
	b.added.Store(0)
	_, u, err := b.collect(ctx, nil, false)
	if err != nil {
		return Result{Left: u.Total}, err
	}
	if u.Total <= b.max {
		b.last.Store(u.Total)
		return Result{Left: u.Total}, nil
	}
	// Over: list the files (a second walk, only now) to choose from.
	files, u, err := b.collect(ctx, nil, true)
	if err != nil {
		return Result{Left: u.Total}, err
	}
	target := int64(float64(b.max) * lowWater)
	// A sole copy goes only while its own group is past its share: never
	// to make room for another group.
	share := b.Share()
	sole := map[string]int64{}
	for _, f := range files {
		if f.Sole {
			sole[f.Group] += f.Size
		}
	}
	now := b.now()
	res := b.evict(ctx, files, u.Total, func(f File, left int64) bool {
		return left > target && (!f.Sole || (f.Group != "" && sole[f.Group] > share)) && !b.handedOff(f, now)
	}, func(f File) {
		if f.Sole {
			sole[f.Group] -= f.Size
		}
	})
	b.last.Store(res.Left)
	return res, ctx.Err()
}

// Filter chooses what Prune removes.
type Filter struct {
	// Areas limits pruning to these area names; empty means all.
	Areas []string
	// UsedBefore removes only files last used before it; zero means any.
	UsedBefore time.Time
	// Only, when set, must also accept a file.
	Only func(File) bool
}

// Prune removes every file that f selects, except those in use.
func (b *Budget) Prune(ctx context.Context, f Filter) (Result, error) {
	b.sweeping.Lock()
	defer b.sweeping.Unlock()
	files, u, err := b.collect(ctx, f.Areas, true)
	if err != nil {
		return Result{Left: u.Total}, err
	}
	res := b.evict(ctx, files, u.Total, func(fl File, _ int64) bool {
		return (f.UsedBefore.IsZero() || fl.Used.Before(f.UsedBefore)) && (f.Only == nil || f.Only(fl))
	}, nil)
	if len(f.Areas) == 0 {
		b.last.Store(res.Left)
	}
	return res, ctx.Err()
}

// evict removes files oldest first while want says so; removed, when
// set, hears of each file removed.
func (b *Budget) evict(ctx context.Context, files []File, total int64, want func(File, int64) bool, removed func(File)) Result {
	slices.SortFunc(files, func(x, y File) int {
		return cmp.Or(x.Used.Compare(y.Used), cmp.Compare(x.Area, y.Area), cmp.Compare(x.Rel, y.Rel))
	})
	res := Result{Left: total}
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		if f.Busy || !want(f, res.Left) {
			continue
		}
		a := b.area(f.Area)
		root, ok := roots[a.Name]
		if !ok {
			var err error
			if root, err = a.Open(); err != nil {
				if res.Failed == nil {
					res.Failed = fmt.Errorf("media area %s: %w", a.Name, err)
				}
				continue
			}
			roots[a.Name] = root
		}
		freed, err := remove(ctx, root, a, f)
		switch {
		case errors.Is(err, errInUse):
			res.InUse++
		case errors.Is(err, errChanged):
		case err != nil:
			if res.Failed == nil {
				res.Failed = err
			}
		default:
			res.Files++
			res.Freed += freed
			res.Left -= freed
			if removed != nil {
				removed(f)
			}
		}
	}
	return res
}

func (b *Budget) area(name string) Area {
	for _, a := range b.areas {
		if a.Name == name {
			return a
		}
	}
	return Area{}
}

// ErrKeep, from an area's Forget, keeps the file: it may not be evicted yet.
var ErrKeep = errors.New("file must be kept")

var (
	errInUse   = errors.New("file in use")
	errChanged = errors.New("file changed since it was chosen")
)

// remove is the one place stored media bytes are deleted. The file must
// still be what the sweep saw (same file, same last use), a regular file
// with one link, and not held by a fetch.
func remove(ctx context.Context, root *os.Root, a Area, f File) (int64, error) {
	h, err := openNoBlock(root, f.Rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, errChanged
		}
		return 0, fmt.Errorf("evict %s/%s: %w", a.Name, f.Rel, err)
	}
	defer h.Close()
	if !tryLockExclusive(h) {
		return 0, errInUse
	}
	opened, err := h.Stat()
	if err != nil {
		return 0, fmt.Errorf("evict %s/%s: %w", a.Name, f.Rel, err)
	}
	now, err := root.Lstat(f.Rel)
	if err != nil || !os.SameFile(opened, now) || !groups.SoleRegular(now) || !now.ModTime().Equal(f.Used) {
		return 0, errChanged
	}
	if a.Forget != nil {
		if err := a.Forget(ctx, f.Rel); errors.Is(err, ErrKeep) {
			return 0, errInUse
		} else if err != nil {
			return 0, fmt.Errorf("evict %s/%s: %w", a.Name, f.Rel, err)
		}
	}
	if err := root.Remove(f.Rel); err != nil {
		return 0, fmt.Errorf("evict %s/%s: %w", a.Name, f.Rel, err)
	}
	return now.Size(), nil
}

// collect measures the named areas (all when names is empty) and, when
// keep is set, lists their files. Measuring alone allocates little: the
// periodic sweep under budget, by far the common case, keeps nothing.
// An area whose folder does not exist yet is empty.
func (b *Budget) collect(ctx context.Context, names []string, keep bool) ([]File, Usage, error) {
	u := Usage{Max: b.max}
	var files []File
	for _, a := range b.areas {
		if len(names) > 0 && !slices.Contains(names, a.Name) {
			continue
		}
		au := AreaUsage{Name: a.Name}
		err := walk(ctx, a, func(dir, name string, size int64, used time.Time) {
			au.Files++
			au.Bytes += size
			if au.Oldest.IsZero() || used.Before(au.Oldest) {
				au.Oldest = used
			}
			if used.After(au.Newest) {
				au.Newest = used
			}
			if keep {
				rel := name
				if dir != "." {
					rel = dir + "/" + name
				}
				files = append(files, File{Area: a.Name, Rel: rel, Size: size, Used: used, Busy: a.Busy != nil && a.Busy(rel),
					Group: a.groupOf(rel), Sole: a.Sole != nil && a.Sole(rel)})
			}
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return files, u, fmt.Errorf("media area %s: %w", a.Name, err)
		}
		u.Areas = append(u.Areas, au)
		u.Files += au.Files
		u.Total += au.Bytes
	}
	return files, u, nil
}

// walk visits the regular, singly linked files under a.Dir, by folder
// (slash-separated, relative to the root) and name. Links are neither
// followed nor counted: what a local process plants is not ours. Every
// stat is relative to a folder opened inside the root and does not follow
// the name, so nothing outside the area is ever looked at.
func walk(ctx context.Context, a Area, visit func(dir, name string, size int64, used time.Time)) error {
	root, err := a.Open()
	if err != nil {
		return err
	}
	defer root.Close()
	dirs := []string{path.Clean(a.Dir)}
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		d, err := root.Open(dir)
		if err != nil {
			if dir == path.Clean(a.Dir) {
				return err
			}
			continue
		}
		for {
			if err := ctx.Err(); err != nil {
				d.Close()
				return err
			}
			names, rerr := d.Readdirnames(1024)
			err := statNames(root, d, dir, names, func(name string, e entry) {
				switch {
				case e.dir:
					dirs = append(dirs, path.Join(dir, name))
				case e.regular && e.links == 1:
					visit(dir, name, e.size, e.mtime)
				}
			})
			if err != nil {
				d.Close()
				return err
			}
			if rerr != nil {
				break
			}
		}
		d.Close()
	}
	return nil
}

// entry is what walk needs of a stat.
type entry struct {
	dir, regular bool
	links        uint64
	size         int64
	mtime        time.Time
}

// Touch records a use of the file at rel inside root: it becomes the most
// recently used. Call it while holding the file (Hold), so the file cannot
// be evicted between the use and the stamp.
func (b *Budget) Touch(root *os.Root, rel string) error {
	if b == nil {
		return nil
	}
	t := b.now()
	return root.Chtimes(rel, t, t)
}

// ErrGone: the file was removed (or replaced) before it could be held.
var ErrGone = errors.New("stored media file is gone")

// Acquire opens the file at rel inside root for a use: held (Hold) so no
// sweep evicts it until the caller closes it, checked to be a regular
// file with one link that is still at rel, and touched as the most
// recently used. A file a sweep removed first answers ErrGone.
func (b *Budget) Acquire(root *os.Root, rel string) (*os.File, error) {
	f, err := openNoBlock(root, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", rel, ErrGone)
	}
	if err != nil {
		return nil, err
	}
	if err := Hold(f); err != nil {
		f.Close()
		return nil, err
	}
	held, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	now, err := root.Lstat(rel)
	if err != nil || !os.SameFile(held, now) || !groups.SoleRegular(now) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", rel, ErrGone)
	}
	if err := b.Touch(root, rel); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
