package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/backoff"
)

func TestWait(t *testing.T) {
	const s, m = time.Second, time.Minute
	tests := []struct {
		name  string
		sched backoff.Schedule
		want  []time.Duration // Wait(0), Wait(1), ...
	}{
		// The schedules the README documents.
		{"video polls: 5 s, growing by half up to a minute",
			backoff.Schedule{Initial: 5 * s, Factor: 1.5, Max: m},
			[]time.Duration{5 * s, 7500 * time.Millisecond, 11250 * time.Millisecond, 16875 * time.Millisecond,
				25312500 * time.Microsecond, 37968750 * time.Microsecond, 56953125 * time.Microsecond, m, m}},
		{"task delivery: 10 s, 30 s, 90 s… up to 10 minutes",
			backoff.Schedule{Initial: 10 * s, Factor: 3, Max: 10 * m},
			[]time.Duration{10 * s, 30 * s, 90 * s, 270 * s, 10 * m, 10 * m}},
		{"uploads: 5 s, 15 s, 45 s… at most 10 minutes",
			backoff.Schedule{Initial: 5 * s, Factor: 3, Max: 10 * m},
			[]time.Duration{5 * s, 15 * s, 45 * s, 135 * s, 405 * s, 10 * m}},
		{"batch poll: 1 min doubling to 10",
			backoff.Schedule{Initial: m, Max: 10 * m},
			[]time.Duration{m, 2 * m, 4 * m, 8 * m, 10 * m, 10 * m}},
		{"no cap", backoff.Schedule{Initial: 500 * time.Millisecond},
			[]time.Duration{500 * time.Millisecond, s, 2 * s, 4 * s}},
		{"equal jitter at its bottom is half the step",
			backoff.Schedule{Initial: 2 * s, Max: 5 * m, Jitter: func() float64 { return 0 }},
			[]time.Duration{s, 2 * s, 4 * s, 8 * s}},
		{"equal jitter at its top is the whole step",
			backoff.Schedule{Initial: 2 * s, Max: 5 * m, Jitter: func() float64 { return 1 }},
			[]time.Duration{2 * s, 4 * s, 8 * s, 16 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n, want := range tt.want {
				if got := tt.sched.Wait(n); got != want {
					t.Errorf("Wait(%d) = %v, want %v", n, got, want)
				}
			}
		})
	}
}

func TestWaitNeverOverflows(t *testing.T) {
	tests := []backoff.Schedule{
		{Initial: time.Second},
		{Initial: time.Second, Factor: 3},
		{Initial: time.Second, Max: time.Hour, Jitter: func() float64 { return 0.5 }},
	}
	for _, sched := range tests {
		prev := time.Duration(0)
		for _, n := range []int{0, 10, 40, 62, 63, 64, 1000, math.MaxInt32} {
			got := sched.Wait(n)
			if got <= 0 || got < prev {
				t.Fatalf("%+v: Wait(%d) = %v after %v: want positive and not shrinking", sched, n, got, prev)
			}
			prev = got
		}
	}
}
