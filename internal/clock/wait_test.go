package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

// Cases that need no clock movement: each returns at once.
func TestWaitReturnsAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		d      time.Duration
		woken  bool // wake holds a signal already
		cancel bool
		want   bool
	}{
		{name: "due now", d: 0, want: true},
		{name: "overdue", d: -time.Minute, want: true},
		{name: "woken before due", d: time.Hour, woken: true, want: true},
		{name: "woken with nothing due", d: clock.Forever, woken: true, want: true},
		{name: "context ended", d: time.Hour, cancel: true, want: false},
		{name: "context ended with nothing due", d: clock.Forever, cancel: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clock.NewFake(start)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			wake := make(chan struct{}, 1)
			if tt.woken {
				wake <- struct{}{}
			}
			if got := clock.Wait(ctx, c, tt.d, wake); got != tt.want {
				t.Fatalf("Wait = %v, want %v", got, tt.want)
			}
			if w := c.Waiting(); len(w) != 0 {
				t.Errorf("timers left pending after Wait: %v", w)
			}
		})
	}
}

func TestWaitUntilDue(t *testing.T) {
	c := clock.NewFake(start)
	done := make(chan bool, 1)
	go func() { done <- clock.Wait(context.Background(), c, time.Minute, nil) }()
	testwait.Until(t, "Wait's timer", func() bool { return len(c.Waiting()) == 1 })
	if w := c.Waiting(); !w[0].Equal(start.Add(time.Minute)) {
		t.Fatalf("timer due at %v, want a minute after start", w[0])
	}
	c.Advance(time.Minute)
	select {
	case got := <-done:
		if !got {
			t.Fatal("Wait = false after its time passed, want true")
		}
	case <-time.After(testwait.HangGuard):
		t.Fatal("Wait did not return once its time passed")
	}
}

// Every keeps calling until ctx ends and then returns; fn here ends ctx
// on its third call, so a loop that stopped early or never returned
// fails the guard.
func TestEveryRunsUntilCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		clock.Every(ctx, time.Millisecond, func() {
			calls++
			if calls == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Every did not return after ctx ended")
	}
	// A tick due together with the end of ctx may still run once more.
	if calls < 3 {
		t.Fatalf("fn ran %d times, want at least 3 (ctx ended on the third)", calls)
	}
}
