package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

// TestStaleInstanceCannotClaimARun: a scheduler whose instance lost the
// lease delivers (the agent's own writes are fenced too) but cannot record
// the (task, due) claim; the instance that took over claims it, once.
func TestStaleInstanceCannotClaimARun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		start := utc("2026-05-01T10:00:00Z")
		a := newRigOn(t, c, start, nil)
		if _, ok, err := a.st.TryAcquireLease(ctx, "A", start, 30*time.Second); !ok || err != nil {
			t.Fatal(ok, err)
		}
		task := a.schedule("family", KindIn, "1m")
		a.agent.set(nil, true) // stores the run's message; its answer is not the point here

		b := newRigOn(t, c, start, nil)
		if _, ok, err := b.st.TryAcquireLease(ctx, "B", start.Add(30*time.Second), 30*time.Second); !ok || err != nil {
			t.Fatal(ok, err)
		}
		a.clock.Set(start.Add(time.Minute))
		if err := a.s.RunDue(ctx); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale RunDue: %v, want ErrFenced", err)
		}
		if got := a.task(task.ID); !got.NextRun.Equal(task.NextRun) || got.Runs != 0 {
			t.Fatalf("the stale claim landed: %+v", got)
		}
		if _, ok, _ := a.s.lastRun(ctx, task.ID); ok {
			t.Fatal("a scheduled_runs row from the stale instance")
		}

		b.clock.Set(start.Add(time.Minute))
		b.runDue()
		b.runDue()
		if got := b.task(task.ID); got.Runs != 1 || got.State != StateDone {
			t.Errorf("after the new active's run: %+v", got)
		}
		if n := b.agent.count(); n != 1 {
			t.Errorf("the new active delivered %d times", n)
		}
	})
}
