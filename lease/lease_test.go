package lease_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/lease"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

// instance is one botd instance as far as the lease goes: its own
// database handle and clock, a Keeper, and an active part that records
// when it ran, on the instance's clock.
type instance struct {
	name string
	st   *store.Store
	clk  *clock.Fake
	k    *lease.Keeper

	mu      sync.Mutex
	running bool
	starts  []time.Time
	stops   []time.Time
	runErr  chan error
	cancel  context.CancelFunc
}

func newInstance(t *testing.T, name string, c store.Config, clk *clock.Fake, mods ...func(*lease.Options)) *instance {
	t.Helper()
	in := &instance{name: name, st: storetest.Open(t, c), clk: clk, runErr: make(chan error, 1)}
	o := lease.Options{Store: in.st, Holder: name, Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, m := range mods {
		m(&o)
	}
	k, err := lease.New(o)
	if err != nil {
		t.Fatal(err)
	}
	in.k = k
	return in
}

func (in *instance) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() {
		in.runErr <- in.k.Run(ctx, func(ctx context.Context) error {
			in.mu.Lock()
			in.running = true
			in.starts = append(in.starts, in.clk.Now())
			in.mu.Unlock()
			<-ctx.Done()
			in.mu.Lock()
			in.running = false
			in.stops = append(in.stops, in.clk.Now())
			in.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-in.runErr
	})
}

func (in *instance) isRunning() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.running
}

func (in *instance) stopsAt() []time.Time {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.stops)
}

func (in *instance) role() lease.Role { return in.k.Status().Role }

// drive moves clk to its next timer, each time one is pending, until
// cond holds: a standby's tries, one by one, each at the moment it was
// due (its goroutine re-arms the timer after each try, so nothing is
// skipped however slowly it runs).
func drive(t *testing.T, clk *clock.Fake, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, func() bool {
		if cond() {
			return true
		}
		w := clk.Waiting()
		if len(w) == 0 {
			return false
		}
		clk.Set(slices.MinFunc(w, time.Time.Compare))
		// The clock moves on only once what the step woke has run: a
		// keeper re-arms its timer when its step (a database call) is
		// done. Moving on sooner would let a renewal's deadline pass
		// before the renewal ran, which no real clock does.
		testwait.Until(t, what+": the step done", func() bool { return cond() || len(clk.Waiting()) >= len(w) })
		return cond()
	})
}

func pending(clk *clock.Fake, at time.Time) bool {
	return slices.ContainsFunc(clk.Waiting(), at.Equal)
}

func TestKeeperRenewsAndReleases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		clk := clock.NewFake(t0)
		var aStoodBy, bStoodBy atomic.Int32
		a := newInstance(t, "A", c, clk, func(o *lease.Options) { o.StandingBy = func() { aStoodBy.Add(1) } })
		a.start(t)
		testwait.Until(t, "A active", a.isRunning)
		b := newInstance(t, "B", c, clk, func(o *lease.Options) { o.StandingBy = func() { bStoodBy.Add(1) } })
		b.start(t)
		testwait.Until(t, "B standing by", func() bool { return b.role() == lease.Standby && b.k.Status().Lease.Holder == "A" })

		// A renews every 10 s; B, trying every 5 s, never gets it.
		for _, at := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second} {
			testwait.Until(t, "A's renewal armed", func() bool { return pending(clk, t0.Add(at)) })
			clk.Set(t0.Add(at - 5*time.Second))
			clk.Set(t0.Add(at))
			testwait.Until(t, "A renewed", func() bool { return a.k.Status().Lease.Renewed.Equal(t0.Add(at)) })
		}
		if b.isRunning() || b.role() != lease.Standby {
			t.Fatal("B became active while A renewed")
		}
		// B was told once that it stands by, through eight refused tries;
		// A, active from its first, never.
		if n, m := aStoodBy.Load(), bStoodBy.Load(); n != 0 || m != 1 {
			t.Errorf("StandingBy calls: A %d, B %d; want 0 and 1", n, m)
		}
		if l := a.k.Status().Lease; l.Epoch != 1 || !l.Expires.Equal(t0.Add(70*time.Second)) {
			t.Errorf("A's lease = %+v", l)
		}
		// A stops cleanly: it releases, and B takes over at its next try.
		a.cancel()
		if err := <-a.runErr; err != nil {
			t.Fatal(err)
		}
		a.runErr <- nil // for the cleanup
		drive(t, clk, "B active", b.isRunning)
		if l := b.k.Status().Lease; l.Holder != "B" || l.Epoch != 2 || l.Acquired.Before(t0.Add(40*time.Second)) || l.Acquired.After(t0.Add(45*time.Second)) {
			t.Errorf("B's lease after A's release = %+v (want epoch 2, taken at B's next try after +40s)", l)
		}
	})
}

// TestActiveThatCannotRenewStops: the active's database calls fail (its
// handle is closed) or block (another transaction holds the lease row): it
// stops its active part 15 s after its last renewal, and the standby takes
// over only when the lease lapses, 30 s after it.
func TestActiveThatCannotRenewStops(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		t.Run("fail", func(t *testing.T) {
			testCannotRenew(t, c, func(t *testing.T, a *instance) func() {
				a.st.DB.Close()
				return func() {}
			})
		})
	})
	t.Run("blocked", func(t *testing.T) {
		c := storetest.Config(t, sqldialect.Postgres)
		testCannotRenew(t, c, func(t *testing.T, a *instance) func() {
			lock := storetest.Open(t, c)
			tx, err := lock.DB.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`SELECT epoch FROM leases FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tx.Rollback() })
			return func() {
				// A, stopped, stands by with its try blocked too; once the
				// lock goes it would take its own lease back (a new epoch)
				// before the lapse, so it goes away first, as a dead one.
				a.cancel()
				<-a.runErr
				a.runErr <- nil
				tx.Rollback()
			}
		})
	})
}

func testCannotRenew(t *testing.T, c store.Config, breakIt func(*testing.T, *instance) (mend func())) {
	clk := clock.NewFake(t0)
	a := newInstance(t, "A", c, clk)
	a.start(t)
	testwait.Until(t, "A active", a.isRunning)
	// The standby watches through its own handle and clock, stepped with
	// A's below.
	bclk := clock.NewFake(t0)
	b := newInstance(t, "B", c, bclk)
	b.start(t)
	testwait.Until(t, "B standing by", func() bool { return b.role() == lease.Standby })

	mend := breakIt(t, a)
	for _, at := range []time.Duration{10 * time.Second, 12 * time.Second, 14 * time.Second} {
		clk.Set(t0.Add(at))
	}
	if !pending(clk, t0.Add(15*time.Second)) || !a.isRunning() {
		t.Fatalf("A stopped before 15 s without a renewal (give-up pending: %v)", pending(clk, t0.Add(15*time.Second)))
	}
	clk.Set(t0.Add(15 * time.Second))
	testwait.Until(t, "A stopped", func() bool { return !a.isRunning() })
	if stops := a.stopsAt(); len(stops) != 1 || !stops[0].Equal(t0.Add(15*time.Second)) {
		t.Errorf("A stopped at %v, want once at +15s", stops)
	}
	if err := a.st.AdvanceAgentCursor(context.Background(), "g", 1); !errors.Is(err, store.ErrFenced) {
		t.Errorf("A's cursor move after it stopped: %v, want ErrFenced", err)
	}
	mend()
	// The standby: nothing before the lapse at +30 s, then the lease.
	drive(t, bclk, "B active", b.isRunning)
	l := b.k.Status().Lease
	if l.Holder != "B" || l.Epoch != 2 || !l.Acquired.Equal(t0.Add(30*time.Second)) {
		t.Errorf("B's takeover = %+v; want epoch 2 at +30s, its first try after the lapse", l)
	}
	if stops := a.stopsAt(); len(stops) != 1 || !l.Acquired.After(stops[0]) {
		t.Errorf("A stopped at %v, B took over at %v", stops, l.Acquired)
	}
}

// TestTakeoversKeepOneEffectiveHolder: two keepers started at once on one
// database, then takeovers back and forth, each time the active frozen
// (its clock stopped, as SIGSTOP does) while the standby's clock runs past
// the lapse. Exactly one takes each epoch; the frozen one's fenced writes
// are refused while its successor's go through; thawed, it stops and
// stands by.
func TestTakeoversKeepOneEffectiveHolder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		a := newInstance(t, "A", c, clock.NewFake(t0))
		b := newInstance(t, "B", c, clock.NewFake(t0))
		a.start(t)
		b.start(t)
		testwait.Until(t, "one active, one standing by", func() bool {
			return (a.isRunning() && b.role() == lease.Standby) || (b.isRunning() && a.role() == lease.Standby)
		})
		if a.isRunning() && b.isRunning() {
			t.Fatal("both active")
		}
		h, s := a, b
		if b.isRunning() {
			h, s = b, a
		}
		epoch := h.k.Status().Lease.Epoch
		if epoch != 1 {
			t.Fatalf("first epoch = %d", epoch)
		}
		seq := int64(0)
		write := func(in *instance) error {
			seq++
			return in.st.AdvanceAgentCursor(ctx, "g", seq)
		}
		if err := write(h); err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 4; round++ {
			// h freezes; s's clock runs until it takes over.
			drive(t, s.clk, "standby takes over", s.isRunning)
			epoch++
			if l := s.k.Status().Lease; l.Epoch != epoch || l.Holder != s.name {
				t.Fatalf("round %d: takeover = %+v, want %s at epoch %d", round, l, s.name, epoch)
			}
			if cur, _, _ := s.st.CurrentLease(ctx); cur.Holder != s.name || cur.Epoch != epoch {
				t.Fatalf("round %d: the database says %+v", round, cur)
			}
			// Frozen, h still believes it is active; its writes are refused.
			if !h.isRunning() || h.role() != lease.Active {
				t.Fatalf("round %d: the frozen active stopped on its own", round)
			}
			if err := write(h); !errors.Is(err, store.ErrFenced) {
				t.Fatalf("round %d: the frozen active's write: %v, want ErrFenced", round, err)
			}
			if err := write(s); err != nil {
				t.Fatalf("round %d: the new active's write: %v", round, err)
			}
			// h thaws: its clock catches up and it stops. Before its
			// timers noticed, its channels' calls are refused: its last
			// renewal is more than GiveUp ago, so the fence asks the
			// database, which names the new epoch.
			h.clk.Set(s.clk.Now())
			if err := h.k.CheckFence(ctx); !errors.Is(err, store.ErrFenced) {
				t.Fatalf("round %d: the thawed active's fence: %v, want ErrFenced", round, err)
			}
			if err := s.k.CheckFence(ctx); err != nil {
				t.Fatalf("round %d: the new active's fence: %v", round, err)
			}
			testwait.Until(t, "thawed active stands by", func() bool { return !h.isRunning() && h.role() == lease.Standby })
			if !s.isRunning() {
				t.Fatalf("round %d: the new active stopped", round)
			}
			h, s = s, h
		}
		if cur, _ := a.st.AgentCursor(ctx, "g"); cur != seq {
			t.Errorf("cursor = %d, want %d (every refused write left it)", cur, seq)
		}
	})
}

// TestCheckFenceWithinGiveUp: the fence every channel call asks answers
// from the Keeper's own state within GiveUp of the last renewal (nobody
// can hold the lease before it lapses, TTL after it), without a query:
// here the database handle is closed and it still says yes until +15 s,
// then it asks the database and refuses. Standing by, it refuses.
func TestCheckFenceWithinGiveUp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		clk := clock.NewFake(t0)
		a := newInstance(t, "A", c, clk)
		b := newInstance(t, "B", c, clk)
		a.start(t)
		testwait.Until(t, "A active", a.isRunning)
		b.start(t)
		testwait.Until(t, "B standing by", func() bool { return b.role() == lease.Standby })
		if err := a.k.CheckFence(ctx); err != nil {
			t.Fatalf("the active's fence: %v", err)
		}
		if err := b.k.CheckFence(ctx); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("the standby's fence: %v, want ErrFenced", err)
		}
		a.st.DB.Close()
		clk.Set(t0.Add(lease.DefaultGiveUp - time.Millisecond))
		if err := a.k.CheckFence(ctx); err != nil {
			t.Fatalf("within GiveUp of the last renewal: %v", err)
		}
		clk.Set(t0.Add(lease.DefaultGiveUp))
		if err := a.k.CheckFence(ctx); err == nil {
			t.Fatal("GiveUp after the last renewal, with the database unreachable, the fence still says yes")
		}
	})
}

// BenchmarkCheckFence: what each call a channel makes pays for the fence,
// answered by the Keeper within GiveUp of a renewal, and by the database
// (store.CheckFence, what an overdue renewal or a thaw falls back to).
func BenchmarkCheckFence(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, c store.Config) {
		ctx := context.Background()
		st := storetest.Open(b, c)
		k, err := lease.New(lease.Options{Store: st, Holder: "A", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- k.Run(rctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
		}()
		defer func() { cancel(); <-done }()
		if !testwait.Eventually(func() bool { return k.Status().Role == lease.Active }) {
			b.Fatal("not active")
		}
		for _, bc := range []struct {
			name  string
			check func(context.Context) error
		}{{"keeper", k.CheckFence}, {"database", st.CheckFence}} {
			b.Run(bc.name, func(b *testing.B) {
				for b.Loop() {
					if err := bc.check(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// TestSoleKeeperRunsOnThroughFailedRenewals: the one instance on SQLite
// (Sole) whose renewals fail — here a trigger makes the lease's update
// fail as a full disk would — runs on far past GiveUp and the lease's
// lapse, logs the failure once and its end once, and Status reports it
// meanwhile; a renewal that succeeds again clears it.
func TestSoleKeeperRunsOnThroughFailedRenewals(t *testing.T) {
	c := storetest.Config(t, sqldialect.SQLite)
	clk := clock.NewFake(t0)
	var logs syncBuffer
	a := newInstance(t, "A", c, clk, func(o *lease.Options) {
		o.Sole, o.TakeAtStart = true, true
		o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	a.start(t)
	testwait.Until(t, "A active", a.isRunning)
	other := storetest.Open(t, c)
	if _, err := other.DB.Exec(`CREATE TRIGGER full_disk BEFORE UPDATE ON leases BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	// Renewal at +10 s, then a retry every 2 s, to twice the lease's time.
	// Each failure is seen by the retry it arms (RenewError stays set from
	// the first, so it cannot tell one failure from the next).
	at := lease.DefaultRenewEvery
	testwait.Until(t, "the first renewal armed", func() bool { return pending(clk, t0.Add(at)) })
	for ; at <= 2*lease.DefaultTTL; at += lease.DefaultRetryRenew {
		clk.Set(t0.Add(at))
		next := t0.Add(at + lease.DefaultRetryRenew)
		testwait.Until(t, "the renewal failed and the next retry armed", func() bool { return pending(clk, next) })
	}
	if a.k.Status().RenewError == "" {
		t.Fatal("no renewal error recorded")
	}
	st := a.k.Status()
	if !a.isRunning() || st.Role != lease.Active {
		t.Fatalf("A stopped while its renewals failed: %+v", st)
	}
	if !strings.Contains(st.RenewError, "database or disk is full") || !st.FailingSince.Equal(t0.Add(lease.DefaultRenewEvery)) {
		t.Errorf("status = %+v, want the failure since +10s", st)
	}
	if _, err := other.DB.Exec(`DROP TRIGGER full_disk`); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(at))
	testwait.Until(t, "A renewed again", func() bool { return a.k.Status().Lease.Renewed.Equal(t0.Add(at)) })
	if st := a.k.Status(); st.RenewError != "" || !st.FailingSince.IsZero() || st.Role != lease.Active {
		t.Errorf("after a renewal: %+v", st)
	}
	if err := a.k.CheckFence(context.Background()); err != nil {
		t.Errorf("fence after recovery: %v", err)
	}
	out := logs.String()
	if n, m := strings.Count(out, "renewal failing"), strings.Count(out, "renewed again"); n != 1 || m != 1 {
		t.Errorf("logged the failure %d and the recovery %d times, want once each:\n%s", n, m, out)
	}
	if strings.Contains(out, "stopping") {
		t.Errorf("A logged a stop:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestTakeAtStart: the one instance on SQLite, restarted after a crash,
// takes the lease at once (a new epoch fencing out the old process)
// instead of waiting for the crashed one's lease to lapse.
func TestTakeAtStart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		clk := clock.NewFake(t0)
		old := newInstance(t, "old", c, clk)
		if _, ok, err := old.st.TryAcquireLease(context.Background(), "old", t0, lease.DefaultTTL); !ok || err != nil {
			t.Fatal(ok, err)
		}
		clk.Set(t0.Add(time.Second))
		in := newInstance(t, "new", c, clk, func(o *lease.Options) { o.TakeAtStart = true })
		in.start(t)
		testwait.Until(t, "the restarted instance active", in.isRunning)
		if l := in.k.Status().Lease; l.Epoch != 2 || !l.Acquired.Equal(t0.Add(time.Second)) {
			t.Errorf("lease = %+v, want epoch 2 taken at once", l)
		}
		if err := old.st.AdvanceAgentCursor(context.Background(), "g", 1); !errors.Is(err, store.ErrFenced) {
			t.Errorf("the old process's write: %v, want ErrFenced", err)
		}
	})
}

func TestInstanceID(t *testing.T) {
	if got := lease.InstanceID("botd-1"); got != "botd-1" {
		t.Errorf("configured id = %q", got)
	}
	x, y := lease.InstanceID(""), lease.InstanceID("")
	if x == y || x == "" {
		t.Errorf("generated ids %q and %q are not distinct", x, y)
	}
}

func TestOptionsRefused(t *testing.T) {
	c := storetest.Config(t, sqldialect.SQLite)
	st := storetest.Open(t, c)
	for _, o := range []lease.Options{
		{Holder: "A"},
		{Store: st},
		{Store: st, Holder: "A", GiveUp: 30 * time.Second},
		{Store: st, Holder: "A", RenewEvery: 20 * time.Second},
	} {
		if _, err := lease.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
