package box

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The pool is host-wide when SetHostPool names a directory: the daemon and
// every `botd mcp` of the same data directory then share one memory total,
// instead of each process allowing itself all of it. The total is cut into
// hostSlots equal units; each unit is a lock file in the directory, held
// with flock(2) for as long as a child runs. The kernel drops the locks of
// a process that dies, so a crashed botd never keeps a unit. One waiter at
// a time collects units (it holds the queue file's lock meanwhile), so two
// waiters never each hold half of what both need.
const hostSlots = 64

var (
	hostMu  sync.Mutex
	hostDir string
)

// SetHostPool makes the pool of SetPool host-wide: every botd process that
// names the same dir (data/box) draws its children's memory from the one
// total. The directory is made (0700) when the first child needs it; if it
// cannot be, the pool stays the process's own and the reason is logged.
// Called at start, like SetPool.
func SetHostPool(dir string) {
	hostMu.Lock()
	hostDir = dir
	hostMu.Unlock()
}

// hostPool is one process's view of the host-wide pool.
type hostPool struct {
	dir   string
	slots int
	unit  int64
}

func currentHostPool(total int64) *hostPool {
	hostMu.Lock()
	defer hostMu.Unlock()
	if hostDir == "" || !hostLocks {
		return nil
	}
	return &hostPool{dir: hostDir, slots: hostSlots, unit: (total + hostSlots - 1) / hostSlots}
}

// units is how many units weight bytes take: at least one, at most all.
func (h *hostPool) units(weight int64) int {
	return int(min(max((weight+h.unit-1)/h.unit, 1), int64(h.slots)))
}

// held is the lock files of the units a child holds; closing them drops
// the locks.
type held []*os.File

func (hs held) release() {
	for _, f := range hs {
		if f != nil {
			f.Close()
		}
	}
}

// open opens (making it the first time) one lock file of the pool.
func (h *hostPool) open(name string) (*os.File, error) {
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return nil, err
	}
	return openLock(filepath.Join(h.dir, name))
}

// collect adds free units to got (indexed by slot) until it holds k of
// them or none is free; it answers how many it holds.
func (h *hostPool) collect(got held, k int) (int, error) {
	n := 0
	for _, f := range got {
		if f != nil {
			n++
		}
	}
	for i := 0; i < h.slots && n < k; i++ {
		if got[i] != nil {
			continue
		}
		f, err := h.open(fmt.Sprintf("unit-%02d", i))
		if err != nil {
			return n, err
		}
		ok, err := tryLock(f)
		if err != nil || !ok {
			f.Close()
			if err != nil {
				return n, err
			}
			continue
		}
		got[i] = f
		n++
	}
	return n, nil
}

// tryAcquire takes k units if they are free now, without waiting.
func (h *hostPool) tryAcquire(k int) (held, bool, error) {
	q, err := h.open("queue")
	if err != nil {
		return nil, false, err
	}
	defer q.Close()
	if ok, err := tryLock(q); err != nil || !ok {
		return nil, false, err
	}
	got := make(held, h.slots)
	n, err := h.collect(got, k)
	if err != nil || n < k {
		got.release()
		return nil, false, err
	}
	return got, true, nil
}

// acquire takes k units, waiting its turn (the queue) and then for the
// units, until ctx ends.
func (h *hostPool) acquire(ctx context.Context, k int) (held, error) {
	q, err := h.open("queue")
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var b pollBackoff
	for {
		ok, err := tryLock(q)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
		if err := b.wait(ctx); err != nil {
			return nil, err
		}
	}
	got := make(held, h.slots)
	b = pollBackoff{}
	for {
		n, err := h.collect(got, k)
		if err != nil {
			got.release()
			return nil, err
		}
		if n == k {
			return got, nil
		}
		if err := b.wait(ctx); err != nil {
			got.release()
			return nil, err
		}
	}
}

// pollBackoff spaces the looks at a lock held by another process: flock
// has no wait that a context can end.
type pollBackoff struct{ d time.Duration }

func (b *pollBackoff) wait(ctx context.Context) error {
	b.d = min(max(b.d*2, 2*time.Millisecond), 50*time.Millisecond)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// admit takes weight bytes of the pool for one child: the process's own
// semaphore and, when the pool is host-wide, the units of the host. queued
// is called once when it has to wait. The release func gives both back.
func admit(ctx context.Context, weight int64, log *slog.Logger, queued func()) (release func(), waited time.Duration, err error) {
	p, total := currentPool()
	weight = min(weight, total)
	start := time.Now()
	told := false
	tell := func() {
		if !told {
			told = true
			queued()
		}
	}
	if !p.TryAcquire(weight) {
		tell()
		if err := p.Acquire(ctx, weight); err != nil {
			return nil, 0, err
		}
	}
	release = func() { p.Release(weight) }
	h := currentHostPool(total)
	if h == nil {
		return release, waitedSince(told, start), nil
	}
	k := h.units(weight)
	units, ok, err := h.tryAcquire(k)
	if err == nil && !ok {
		tell()
		units, err = h.acquire(ctx, k)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			release()
			return nil, 0, err
		}
	}
	if err != nil {
		// The host's units cannot be reached (the directory): the
		// process's own pool still bounds what this process runs.
		log.Warn("box: the host-wide parse pool is unavailable; this process keeps its own", "dir", h.dir, "err", err)
		return release, waitedSince(told, start), nil
	}
	return func() { units.release(); p.Release(weight) }, waitedSince(told, start), nil
}

func waitedSince(waited bool, start time.Time) time.Duration {
	if !waited {
		return 0
	}
	return time.Since(start)
}
