package clock_test

import (
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/clock"
)

var start = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func fired(tm clock.Timer) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

func TestFakeTimers(t *testing.T) {
	c := clock.NewFake(start)
	soon := c.NewTimer(time.Minute)
	later := c.NewTimer(time.Hour)
	stopped := c.NewTimer(time.Minute)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer said it was not pending")
	}
	if now := c.NewTimer(0); !fired(now) {
		t.Error("a timer for now did not fire at once")
	}
	if fired(soon) || fired(later) {
		t.Fatal("a timer fired before the clock moved")
	}
	c.Advance(time.Minute)
	if !fired(soon) || fired(later) || fired(stopped) {
		t.Error("after a minute: want only the minute timer fired")
	}
	if got := c.Waiting(); len(got) != 1 || !got[0].Equal(start.Add(time.Hour)) {
		t.Errorf("Waiting = %v, want the hour timer", got)
	}
	c.Set(start) // backwards: ignored
	if got := c.Now(); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("Now after a backward Set = %v, want it unmoved", got)
	}
	c.Set(start.Add(2 * time.Hour))
	if !fired(later) {
		t.Error("the hour timer did not fire after Set past it")
	}
}

func TestFakeNowFromManyGoroutines(t *testing.T) {
	c := clock.NewFake(start)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			c.Advance(time.Second)
		}
	}()
	for range 100 {
		if c.Now().Before(start) {
			t.Fatal("Now went before the start")
		}
	}
	<-done
	if got := c.Now(); !got.Equal(start.Add(100 * time.Second)) {
		t.Errorf("Now = %v, want 100 s after the start", got)
	}
}

func TestRealClock(t *testing.T) {
	var c clock.Clock = clock.Real{}
	before := time.Now()
	if c.Now().Before(before) {
		t.Error("Real.Now is before time.Now")
	}
	tm := c.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("a 1 ms real timer did not fire")
	}
}
