// Package clock is botd's one way to let tests own time. A component that
// only reads the time takes a func() time.Time (time.Now in the daemon,
// (*Fake).Now in a test); one that also sleeps until a moment takes a
// Clock, so that "fires at 09:00" is checked without waiting.
package clock

import (
	"sync"
	"time"
)

// Clock is time with timers: the wall clock in the daemon, a Fake in tests.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer whose channel receives once it expires.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Fake is a Clock a test moves by hand, safe to read from the goroutines
// under test. Timers fire when Set or Advance passes their deadline, never
// by themselves.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFake returns a Fake that reads t until moved.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Fake) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Set moves the clock to t (forward only) and fires the timers due.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.at.After(c.now) {
			tm.ch <- c.now
			continue
		}
		keep = append(keep, tm)
	}
	c.timers = keep
}

// Advance moves the clock forward by d and fires the timers due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	t := c.now.Add(d)
	c.mu.Unlock()
	c.Set(t)
}

// Waiting lists the deadlines of the timers not fired yet.
func (c *Fake) Waiting() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for _, t := range c.timers {
		out = append(out, t.at)
	}
	return out
}

type fakeTimer struct {
	c  *Fake
	ch chan time.Time
	at time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, tm := range t.c.timers {
		if tm == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}
