// Package backoff computes the waits between retries: a capped geometric
// series, optionally jittered. It only computes; callers keep their own
// timers, attempt counters and persisted next-try times, so one schedule
// serves a loop that sleeps and a row in SQLite that holds the next poll.
package backoff

import "time"

// Schedule is Initial, then each wait Factor times the one before, never
// more than Max.
type Schedule struct {
	Initial time.Duration
	// Factor is what each wait is multiplied by; 0 means 2.
	Factor float64
	// Max caps the wait; 0 means no cap (the series still stops short of
	// overflowing).
	Max time.Duration
	// Jitter, when set, returns a number in [0, 1) and makes the wait
	// "equal jitter": half the step fixed, half random, so many daemons
	// restarted together do not retry in lockstep. Tests pass a fixed
	// source.
	Jitter func() float64
}

// Wait is the wait before retry n, counted from 0: Wait(0) is Initial.
func (s Schedule) Wait(n int) time.Duration {
	f := s.Factor
	if f == 0 {
		f = 2
	}
	d := s.Initial
	for i := 0; i < n; i++ {
		if s.Max > 0 && d >= s.Max {
			break
		}
		next := float64(d) * f
		// A larger float converts to an undefined Duration; the series
		// has long stopped meaning anything there anyway.
		if next >= float64(1<<62) {
			break
		}
		d = time.Duration(next)
	}
	if s.Max > 0 {
		d = min(d, s.Max)
	}
	if s.Jitter != nil {
		d = d/2 + time.Duration(s.Jitter()*float64(d/2))
	}
	return d
}
