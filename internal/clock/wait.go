package clock

import (
	"context"
	"math"
	"time"
)

// Forever, as Wait's d, says nothing is due: only wake or ctx ends the
// wait. Any other negative d is due at once, as with a timer.
const Forever time.Duration = math.MinInt64

// Wait blocks until d has passed on c, wake receives, or ctx ends, and
// reports whether ctx is still live: the sleep of every loop that works
// when something is due or when it is told to look again.
func Wait(ctx context.Context, c Clock, d time.Duration, wake <-chan struct{}) bool {
	var due <-chan time.Time
	if d != Forever {
		t := c.NewTimer(max(d, 0))
		defer t.Stop()
		due = t.C()
	}
	select {
	case <-ctx.Done():
	case <-wake:
	case <-due:
	}
	return ctx.Err() == nil
}

// Every calls fn every d on a real ticker until ctx ends, and returns
// then: the loop of every periodic chore (sweeps, typing refreshes). A
// call still running when a tick is due delays the next one, never
// overlaps it.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
