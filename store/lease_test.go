package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

const ttl = 30 * time.Second

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func TestLeaseAcquireRenewLapseTakeover(t *testing.T) { drivers(t, testLeaseAcquireRenewLapseTakeover) }

func testLeaseAcquireRenewLapseTakeover(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c) // two instances on one database

	if _, found, err := a.CurrentLease(ctx); err != nil || found {
		t.Fatalf("lease before anyone took it: found=%v, %v", found, err)
	}
	la, ok, err := a.TryAcquireLease(ctx, "A", t0, ttl)
	if err != nil || !ok || la.Epoch != 1 || la.Holder != "A" || !la.Expires.Equal(t0.Add(ttl)) {
		t.Fatalf("first acquire = %+v, %v, %v", la, ok, err)
	}
	if a.FenceEpoch() != 1 {
		t.Errorf("A's fence = %d, want 1", a.FenceEpoch())
	}
	// Held: B is told who has it.
	lb, ok, err := b.TryAcquireLease(ctx, "B", t0.Add(29*time.Second), ttl)
	if err != nil || ok || lb.Holder != "A" || lb.Epoch != 1 {
		t.Fatalf("B's acquire of a held lease = %+v, %v, %v", lb, ok, err)
	}
	// Renewals keep it: B still cannot take it 30 s after the first take.
	if la, err = a.RenewLease(ctx, "A", 1, t0.Add(10*time.Second), ttl); err != nil || !la.Expires.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("renew = %+v, %v", la, err)
	}
	if _, ok, _ := b.TryAcquireLease(ctx, "B", t0.Add(35*time.Second), ttl); ok {
		t.Fatal("B took a lease renewed 25 s before")
	}
	// Only the holder at its epoch renews.
	for _, r := range []struct {
		holder string
		epoch  int64
	}{{"B", 1}, {"A", 2}, {"A", 0}} {
		if _, err := b.RenewLease(ctx, r.holder, r.epoch, t0.Add(11*time.Second), ttl); !errors.Is(err, ErrFenced) {
			t.Errorf("renew by %s at epoch %d: %v, want ErrFenced", r.holder, r.epoch, err)
		}
	}
	// Lapsed (no renewal for 30 s): B takes it over and the epoch rises.
	lb, ok, err = b.TryAcquireLease(ctx, "B", t0.Add(40*time.Second), ttl)
	if err != nil || !ok || lb.Epoch != 2 || lb.Holder != "B" || !lb.Acquired.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("takeover = %+v, %v, %v", lb, ok, err)
	}
	if _, err := a.RenewLease(ctx, "A", 1, t0.Add(41*time.Second), ttl); !errors.Is(err, ErrFenced) {
		t.Errorf("the old holder renewed after the takeover: %v", err)
	}
	cur, found, err := a.CurrentLease(ctx)
	if err != nil || !found || cur.Holder != "B" || cur.Epoch != 2 || !cur.Live(t0.Add(69*time.Second)) || cur.Live(t0.Add(70*time.Second)) {
		t.Errorf("current lease = %+v, %v, %v", cur, found, err)
	}
	// The same holder taking it again (a restart under one instance id)
	// is a new epoch too: writes from before the restart are stale.
	if lb, ok, err = b.TryAcquireLease(ctx, "B", t0.Add(45*time.Second), ttl); err != nil || !ok || lb.Epoch != 3 {
		t.Fatalf("re-acquire by the holder = %+v, %v, %v", lb, ok, err)
	}
	// A clean stop releases it: the next try takes it at once.
	if err := b.ReleaseLease(ctx, "B", 3, t0.Add(50*time.Second)); err != nil {
		t.Fatal(err)
	}
	if b.FenceEpoch() != fenceNone {
		t.Errorf("fence after release = %d", b.FenceEpoch())
	}
	if la, ok, err = a.TryAcquireLease(ctx, "A", t0.Add(51*time.Second), ttl); err != nil || !ok || la.Epoch != 4 {
		t.Fatalf("acquire after release = %+v, %v, %v", la, ok, err)
	}
	// A single instance's start takes it whoever holds it.
	if lb, err = b.TakeLease(ctx, "B2", t0.Add(52*time.Second), ttl); err != nil || lb.Epoch != 5 || lb.Holder != "B2" {
		t.Fatalf("take = %+v, %v", lb, err)
	}
	if _, err := a.RenewLease(ctx, "A", 4, t0.Add(53*time.Second), ttl); !errors.Is(err, ErrFenced) {
		t.Errorf("renew after a take: %v", err)
	}
	if la, ok, err = a.TryAcquireLease(ctx, "A", t0.Add(54*time.Second), ttl); err != nil || ok {
		t.Fatalf("acquire of a taken lease = %+v, %v, %v", la, ok, err)
	}
	if err := b.ReleaseLease(ctx, "B2", 5, t0.Add(55*time.Second)); err != nil {
		t.Fatal(err)
	}
	if la, ok, err = a.TryAcquireLease(ctx, "A", t0.Add(56*time.Second), ttl); err != nil || !ok || la.Epoch != 6 {
		t.Fatalf("acquire after release = %+v, %v, %v", la, ok, err)
	}
	// A stale release (B at epoch 3) leaves A's lease alone.
	if err := b.ReleaseLease(ctx, "B", 3, t0.Add(52*time.Second)); err != nil {
		t.Fatal(err)
	}
	if cur, _, _ := a.CurrentLease(ctx); !cur.Expires.Equal(t0.Add(86 * time.Second)) {
		t.Errorf("a stale release moved the lease: %+v", cur)
	}
}

// TestLeaseRacingAcquires: instances trying at once when the lease is
// free or lapsed; exactly one gets each epoch.
func TestLeaseRacingAcquires(t *testing.T) { drivers(t, testLeaseRacingAcquires) }

func testLeaseRacingAcquires(t *testing.T, c Config) {
	ctx := context.Background()
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = open(t, c)
	}
	for round, at := range []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)} {
		wins := make(chan int64, n)
		errs := make(chan error, n)
		for i, s := range stores {
			go func() {
				l, ok, err := s.TryAcquireLease(ctx, string(rune('A'+i)), at, ttl)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					wins <- l.Epoch
				}
				errs <- nil
			}()
		}
		for range stores {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		close(wins)
		var got []int64
		for e := range wins {
			got = append(got, e)
		}
		if len(got) != 1 || got[0] != int64(round+1) {
			t.Fatalf("round %d: winners' epochs %v, want exactly one at %d", round, got, round+1)
		}
	}
}

// TestFencedWritesOfAStaleHolder: once another instance took the lease,
// every fenced write of the old holder is refused and changes nothing,
// while the new holder's go through.
func TestFencedWritesOfAStaleHolder(t *testing.T) { drivers(t, testFencedWritesOfAStaleHolder) }

func testFencedWritesOfAStaleHolder(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	a.RequireLease()
	b.RequireLease()
	// Standing by, nothing fenced is written.
	if err := b.AdvanceAgentCursor(ctx, "fam", 1); !errors.Is(err, ErrFenced) {
		t.Fatalf("cursor move without the lease: %v", err)
	}
	if _, ok, err := a.TryAcquireLease(ctx, "A", t0, ttl); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// A, active, moves the cursor, queues a video job and a batch (the
	// outbox's fenced writes are tested with its queries, in
	// agent/outboxdb).
	if err := a.AdvanceAgentCursor(ctx, "fam", 5); err != nil {
		t.Fatal(err)
	}
	job, err := a.AddMediaJob(ctx, MediaJob{Folder: "fam", ChatID: "telegram:1", Provider: "p", Model: "m", RemoteID: "r", Prompt: "a cat"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.HandOffBatch(ctx, Batch{ID: "run1", Folder: "fam", ChatID: "telegram:1", UpToSeq: 6, Provider: "p", Model: "m", Request: "{}"}); err != nil {
		t.Fatal(err)
	}

	// A stops renewing; B takes over after the lapse.
	if _, ok, err := b.TryAcquireLease(ctx, "B", t0.Add(ttl), ttl); !ok || err != nil {
		t.Fatal(ok, err)
	}
	stale := map[string]func() error{
		"cursor move": func() error { return a.AdvanceAgentCursor(ctx, "fam", 9) },
		"cursor set":  func() error { return a.SetCursor(ctx, "other", "x") },
		"video sending": func() error {
			_, err := a.UpdateMediaJob(ctx, JobSubmitted, MediaJob{ID: job, State: JobSending})
			return err
		},
		"batch result": func() error { return a.BatchEnded(ctx, "run1", `{"text":"x"}`, "") },
		"batch submit": func() error { return a.BatchSubmitted(ctx, "run1", "b1", t0) },
		"batch hand-off": func() error {
			return a.HandOffBatch(ctx, Batch{ID: "run2", Folder: "fam", ChatID: "telegram:1", UpToSeq: 8, Provider: "p", Model: "m", Request: "{}"})
		},
	}
	for what, write := range stale {
		if err := write(); !errors.Is(err, ErrFenced) {
			t.Errorf("%s by the stale holder: %v, want ErrFenced", what, err)
		}
	}
	// Nothing of it landed.
	if cur, _ := b.AgentCursor(ctx, "fam"); cur != 6 {
		t.Errorf("cursor = %d, want 6 (the batch hand-off's)", cur)
	}
	if v, _ := b.Cursor(ctx, "other"); v != "" {
		t.Errorf("stale cursor set landed: %q", v)
	}
	if j, _ := b.MediaJob(ctx, "fam", job); j.State != JobSubmitted {
		t.Errorf("video job = %s, want submitted", j.State)
	}
	if bt, _ := b.Batch(ctx, "run1"); bt.State != BatchPending {
		t.Errorf("batch = %s, want pending", bt.State)
	}
	if _, err := b.Batch(ctx, "run2"); err == nil {
		t.Error("the stale hand-off stored a batch")
	}
	// The new holder does them all.
	if err := b.AdvanceAgentCursor(ctx, "fam", 7); err != nil {
		t.Fatal(err)
	}
	if cur, _ := b.AgentCursor(ctx, "fam"); cur != 7 {
		t.Errorf("cursor after B's move = %d, want 7", cur)
	}
	if ok, err := b.UpdateMediaJob(ctx, JobSubmitted, MediaJob{ID: job, State: JobSending}); !ok || err != nil {
		t.Errorf("B's video sending: %v, %v", ok, err)
	}
	if err := b.BatchEnded(ctx, "run1", `{"text":"x"}`, ""); err != nil {
		t.Errorf("B's batch result: %v", err)
	}
	if err := b.AnswerBatch(ctx, "run1", nil); err != nil {
		t.Errorf("B's batch answer: %v", err)
	}
}

func TestCheckFence(t *testing.T) { drivers(t, testCheckFence) }

// CheckFence answers for sends that have no fenced write of their own:
// yes for a store that never asked for the lease and for the holder at
// its epoch; ErrFenced standing by, and for a holder whose lease another
// instance took, before its own timers dropped it (a thawed process).
func testCheckFence(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	if err := a.CheckFence(ctx); err != nil {
		t.Fatalf("a store that never asked for the lease: %v", err)
	}
	a.RequireLease()
	b.RequireLease()
	if err := a.CheckFence(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("standing by: %v, want ErrFenced", err)
	}
	if _, ok, err := a.TryAcquireLease(ctx, "A", t0, ttl); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := a.CheckFence(ctx); err != nil {
		t.Fatalf("the holder: %v", err)
	}
	if _, ok, err := b.TryAcquireLease(ctx, "B", t0.Add(ttl), ttl); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := a.CheckFence(ctx); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "its epoch is 1, the lease's is 2") {
		t.Errorf("the holder after a takeover: %v, want ErrFenced naming both epochs", err)
	}
	if err := b.CheckFence(ctx); err != nil {
		t.Errorf("the new holder: %v", err)
	}
}
