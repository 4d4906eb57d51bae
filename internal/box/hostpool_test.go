//go:build unix

package box

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/internal/progress"
)

// Two views of one directory are two processes as far as flock is
// concerned: each opens the lock files itself.
func newHostPools(t *testing.T, n int) []*hostPool {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "box")
	out := make([]*hostPool, n)
	for i := range out {
		out[i] = &hostPool{dir: dir, slots: 8, unit: 1 << 20}
	}
	return out
}

func TestHostPoolSharesTheTotal(t *testing.T) {
	ps := newHostPools(t, 2)
	a, b := ps[0], ps[1]
	all, ok, err := a.tryAcquire(a.slots)
	if err != nil || !ok {
		t.Fatalf("the first taker of an empty pool: ok=%v err=%v", ok, err)
	}
	if _, ok, err := b.tryAcquire(1); err != nil || ok {
		t.Fatalf("another process took a unit of a full pool: ok=%v err=%v", ok, err)
	}

	// A waiter whose question ends gets its context's error, holding nothing.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		got, err := b.acquire(ctx, 1)
		got.release()
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait = %v, want context.Canceled", err)
	}

	// A waiter gets its units once the holder lets go.
	granted := make(chan held, 1)
	go func() {
		got, err := b.acquire(context.Background(), 3)
		if err != nil {
			t.Error(err)
		}
		granted <- got
	}()
	all.release()
	got := <-granted
	defer got.release()
	n := 0
	for _, f := range got {
		if f != nil {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("granted %d units, want 3", n)
	}
	// What is left is free to the first process.
	rest, ok, err := a.tryAcquire(a.slots - 3)
	if err != nil || !ok {
		t.Fatalf("the rest of the pool: ok=%v err=%v", ok, err)
	}
	rest.release()
	if _, ok, _ := a.tryAcquire(a.slots - 2); ok {
		t.Fatal("took more units than the pool has left")
	}
}

// However many processes ask at once, the units held never exceed the
// pool, and everyone is served.
func TestHostPoolNeverOverbooks(t *testing.T) {
	ps := newHostPools(t, 6)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			for j := range 20 {
				k := 1 + (i+j)%p.slots
				got, err := p.acquire(context.Background(), k)
				if err != nil {
					t.Error(err)
					return
				}
				now := inUse.Add(int64(k))
				for {
					old := peak.Load()
					if now <= old || peak.CompareAndSwap(old, now) {
						break
					}
				}
				inUse.Add(-int64(k))
				got.release()
			}
		})
	}
	wg.Wait()
	if peak.Load() > int64(ps[0].slots) {
		t.Fatalf("%d units held at once, the pool has %d", peak.Load(), ps[0].slots)
	}
}

// A process that dies holding units gives them back: the kernel drops
// its locks.
func TestHostPoolFreedWhenAHolderDies(t *testing.T) {
	if dir := os.Getenv("BOTD_TEST_HOSTPOOL_HOLD"); dir != "" {
		p := &hostPool{dir: dir, slots: 8, unit: 1 << 20}
		if _, ok, err := p.tryAcquire(p.slots); err != nil || !ok {
			os.Stdout.WriteString("failed\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("held\n")
		select {} // until killed
	}
	ps := newHostPools(t, 1)
	p := ps[0]
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostPoolFreedWhenAHolderDies$")
	cmd.Env = append(os.Environ(), "BOTD_TEST_HOSTPOOL_HOLD="+p.dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the holder said %q", line)
	}
	if _, ok, err := p.tryAcquire(1); err != nil || ok {
		t.Fatalf("a unit of a pool another process holds: ok=%v err=%v", ok, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	got, err := p.acquire(context.Background(), p.slots)
	if err != nil {
		t.Fatalf("the dead holder's units: %v", err)
	}
	got.release()
}

// A lock file planted as a symlink is never followed.
func TestHostPoolRefusesSymlinks(t *testing.T) {
	p := newHostPools(t, 1)[0]
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(target, filepath.Join(p.dir, "queue")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.tryAcquire(1); err == nil {
		t.Fatal("took the pool through a symlinked queue file")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink's target was made: %v", err)
	}
}

// A child waits for the host's units another botd holds, says it is
// queued, and runs once they are free; a question that ends meanwhile is
// answered busy.
func TestRunWaitsForTheHostPool(t *testing.T) {
	const total = 256 << 20
	dir := filepath.Join(t.TempDir(), "box")
	SetPool(total)
	SetHostPool(dir)
	t.Cleanup(func() { SetHostPool(""); SetPool(0) })
	other := &hostPool{dir: dir, slots: hostSlots, unit: (total + hostSlots - 1) / hostSlots}
	all, ok, err := other.tryAcquire(hostSlots)
	if err != nil || !ok {
		t.Fatalf("the other process's hold: ok=%v err=%v", ok, err)
	}
	job := Job{Func: "test-alloc", Stdin: []byte("1"), Limits: Limits{Memory: 64 << 20}}
	run := func(ctx context.Context) (chan struct{}, chan error) {
		queued, done := make(chan struct{}), make(chan error, 1)
		var once sync.Once
		ctx = progress.With(ctx, func(p progress.Progress) {
			if p.State == progress.Queued {
				once.Do(func() { close(queued) })
			}
		})
		go func() {
			r, err := Run(ctx, job)
			if err == nil && r.Waited <= 0 {
				err = errors.New("ran after waiting but says it did not wait")
			}
			done <- err
		}()
		return queued, done
	}

	ctx, cancel := context.WithCancel(context.Background())
	queued, done := run(ctx)
	<-queued
	cancel()
	if err := <-done; !errors.Is(err, ErrBusy) {
		t.Fatalf("a queued run whose question ended = %v, want busy", err)
	}

	queued, done = run(context.Background())
	<-queued
	all.release()
	if err := <-done; err != nil {
		t.Fatalf("run after the other process let go: %v", err)
	}
}
