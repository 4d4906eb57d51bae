package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
)

// queueRig is a queue alone, with a scripted unit of work per group.
type queueRig struct {
	q *queue

	mu       sync.Mutex
	runs     map[string]int
	notified map[string]int
	inflight int
	most     int // most runs in flight at once
}

func newQueueRig(t *testing.T, o IntakeOptions, work func(ctx context.Context, folder string, n int) runResult) *queueRig {
	t.Helper()
	r := &queueRig{runs: map[string]int{}, notified: map[string]int{}}
	o.RetryDelay = func(int) time.Duration { return time.Millisecond }
	o = o.withDefaults(DefaultConfig())
	run := func(ctx context.Context, folder string) runResult {
		r.mu.Lock()
		r.runs[folder]++
		n := r.runs[folder]
		r.inflight++
		r.most = max(r.most, r.inflight)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inflight--
			r.mu.Unlock()
		}()
		return work(ctx, folder, n)
	}
	notify := func(ctx context.Context, folder string, res runResult) {
		r.mu.Lock()
		r.notified[folder]++
		r.mu.Unlock()
	}
	r.q = newQueue(o, slog.New(slog.NewTextHandler(io.Discard, nil)), run, notify)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.q.start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); r.q.wait() })
	return r
}

func (r *queueRig) idle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chantest.HangGuard)
	defer cancel()
	if err := r.q.waitIdle(ctx); err != nil {
		t.Fatalf("the queue never went idle: %v", err)
	}
}

func (r *queueRig) count(folder string) (runs, notified int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[folder], r.notified[folder]
}

// A failing group is retried until MaxTries, its chat told once per
// streak; a fresh trigger after giving up starts a new streak, told
// again. A delivery failure is retried but never told.
func TestQueueRetriesAStreakAndTellsItOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcome  outcome
		notified int
	}{
		{"model failed", outcomeModelFailed, 1},
		{"delivery failed", outcomeDeliveryFailed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newQueueRig(t, IntakeOptions{MaxTries: 3}, func(ctx context.Context, folder string, n int) runResult {
				return runResult{outcome: tc.outcome, err: errors.New("down"), chat: "telegram:1"}
			})
			r.q.kick("fam", true)
			r.idle(t)
			if runs, told := r.count("fam"); runs != 3 || told != tc.notified {
				t.Fatalf("first streak: %d runs, told %d times; want 3 and %d", runs, told, tc.notified)
			}
			r.q.kick("fam", true)
			r.idle(t)
			if runs, told := r.count("fam"); runs != 6 || told != 2*tc.notified {
				t.Fatalf("second streak: %d runs, told %d times; want 6 and %d", runs, told, 2*tc.notified)
			}
		})
	}
}

// Triggers that arrive while a group runs fold into one more run; a
// group that is skipped (its folder refused) does not run at all.
func TestQueueFoldsTriggersDuringARun(t *testing.T) {
	release := make(chan struct{})
	r := newQueueRig(t, IntakeOptions{}, func(ctx context.Context, folder string, n int) runResult {
		if n == 1 {
			<-release
		}
		return runResult{outcome: outcomeDone}
	})
	r.q.skip = func(folder string) bool { return folder == "refused" }
	r.q.kick("fam", true)
	testwait.Until(t, "the first run", func() bool { runs, _ := r.count("fam"); return runs == 1 })
	for range 3 {
		r.q.kick("fam", true)
	}
	r.q.kick("refused", true)
	close(release)
	r.idle(t)
	if runs, _ := r.count("fam"); runs != 2 {
		t.Errorf("%d runs, want 2 (the three triggers during the first fold into one)", runs)
	}
	if runs, _ := r.count("refused"); runs != 0 {
		t.Errorf("a refused group ran %d times", runs)
	}
}

// agent.max_concurrent bounds runs across groups: with one slot, a second
// group's worker waits (load says so) until the first run ends.
func TestQueueSlotsBoundRunsAcrossGroups(t *testing.T) {
	release := make(chan struct{})
	r := newQueueRig(t, IntakeOptions{MaxConcurrent: 1}, func(ctx context.Context, folder string, n int) runResult {
		if folder == "fam" {
			<-release
		}
		return runResult{outcome: outcomeDone}
	})
	r.q.kick("fam", true)
	testwait.Until(t, "fam's run", func() bool { runs, _ := r.count("fam"); return runs == 1 })
	r.q.kick("work", true)
	testwait.Until(t, "work waiting for the slot", func() bool { running, waiting := r.q.load(); return running == 1 && waiting == 1 })
	if runs, _ := r.count("work"); runs != 0 {
		t.Fatalf("work ran while fam held the only slot")
	}
	close(release)
	r.idle(t)
	runs, _ := r.count("work")
	r.mu.Lock()
	most := r.most
	r.mu.Unlock()
	if runs != 1 || most != 1 {
		t.Errorf("work ran %d times, at most %d runs at once; want 1 and 1", runs, most)
	}
}

// Stop ends the group's run in flight through its context, with the
// cause the run reads as stopped from the chat; without a run it is
// false.
func TestQueueStopEndsTheRunInFlight(t *testing.T) {
	var cause error
	r := newQueueRig(t, IntakeOptions{}, func(ctx context.Context, folder string, n int) runResult {
		return runResult{outcome: outcomeDone}
	})
	r.q.run = func(ctx context.Context, folder string) runResult {
		runCtx, stop := context.WithCancelCause(ctx)
		forget := r.q.stoppable(folder, stop)
		defer forget()
		r.mu.Lock()
		r.runs[folder]++
		r.mu.Unlock()
		<-runCtx.Done()
		cause = context.Cause(runCtx)
		return runResult{outcome: outcomeDone}
	}
	if r.q.stop("fam") {
		t.Fatal("stopped a run that was not going")
	}
	r.q.kick("fam", true)
	testwait.Until(t, "the run", func() bool { runs, _ := r.count("fam"); return runs == 1 })
	testwait.Until(t, "the run stoppable", func() bool { return r.q.stop("fam") })
	r.idle(t)
	if !errors.Is(cause, errStoppedByUser) {
		t.Errorf("the run ended with %v, want errStoppedByUser", cause)
	}
}
