package channels

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
)

// Inbox is the one way a network's receive loop hands a message to the
// sink. Deliver returns only once the store holds the message: a write
// the store refused (disk full, database locked or unreachable) is tried
// again with backoff for as long as the store fails, and Deliver returns
// an error only when ctx ended first. A receive loop confirms an update to
// its network only after Deliver returned nil, so while the store fails
// nothing new is confirmed, the network keeps what botd has not stored,
// and botd catches up by itself once the store works again: a fault
// delays answers, never loses them.
//
// Inbox also keeps the store's state for the log and the dashboard: one
// warning when the store starts refusing, one line when it takes messages
// again, never one per retry.
type Inbox struct {
	clk   clock.Clock
	sched backoff.Schedule
	log   *slog.Logger

	mu       sync.Mutex
	since    time.Time // first refusal of the current outage; zero while the store works
	lastErr  string
	attempts int            // failed attempts in the current outage
	held     map[string]int // per channel: messages being retried
}

// InboxStatus is the store's state as the channels see it.
type InboxStatus struct {
	// FailingSince is when the store started refusing messages; zero
	// while it takes them.
	FailingSince time.Time
	LastError    string
	// Held counts messages received and not yet stored, by channel; their
	// updates are not confirmed to the network.
	Held map[string]int
}

// Waiting is the number of messages held across channels.
func (s InboxStatus) Waiting() int {
	n := 0
	for _, c := range s.Held {
		n += c
	}
	return n
}

// DefaultRetry is how often a refused store write is tried again: quickly
// at first (a locked database frees within milliseconds), then at most
// every 10 s, so botd catches up within 10 s of the store's return.
var DefaultRetry = backoff.Schedule{Initial: 100 * time.Millisecond, Factor: 2, Max: 10 * time.Second}

// NewInbox returns an inbox that retries on sched (DefaultRetry when its
// Initial is 0) and logs the store's outages to log.
func NewInbox(log *slog.Logger, clk clock.Clock, sched backoff.Schedule) *Inbox {
	if clk == nil {
		clk = clock.Real{}
	}
	if sched.Initial <= 0 {
		sched = DefaultRetry
	}
	if log == nil {
		log = slog.Default()
	}
	return &Inbox{clk: clk, sched: sched, log: log, held: map[string]int{}}
}

// fallbackInbox serves an Env built without one (tests, tools).
var fallbackInbox = NewInbox(nil, nil, backoff.Schedule{})

// Status returns the store's state and the messages held.
func (b *Inbox) Status() InboxStatus {
	if b == nil {
		return InboxStatus{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := InboxStatus{FailingSince: b.since, LastError: b.lastErr, Held: map[string]int{}}
	for c, n := range b.held {
		if n > 0 {
			st.Held[c] = n
		}
	}
	return st
}

// Deliver hands in to sink until it took it (nil) or ctx ended (ctx's
// error). The sink's upsert on chat and message id makes a retried
// delivery store the message once.
func (b *Inbox) Deliver(ctx context.Context, sink Sink, log *slog.Logger, in Inbound) error {
	return b.retry(ctx, log, in, func() error { return sink.Deliver(ctx, in) })
}

// retry runs write until it succeeds or ctx ends; in names the message
// for the log and the count of held messages.
func (b *Inbox) retry(ctx context.Context, log *slog.Logger, in Inbound, write func() error) error {
	if log == nil {
		log = b.log
	}
	channel, _, _ := strings.Cut(in.ChatID, ":")
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil {
			if attempt > 0 {
				b.stored(log, channel)
			}
			return nil
		}
		var perm permanent
		if errors.As(err, &perm) {
			if attempt > 0 {
				b.release(channel)
			}
			return perm.err
		}
		if ctx.Err() != nil {
			if attempt > 0 {
				b.release(channel)
			}
			log.Warn("receiving stopped before the store took a message; it stays unconfirmed for the network to hand out again",
				"chat", in.ChatID, "id", in.ID)
			return ctx.Err()
		}
		b.refused(log, channel, in, err, attempt == 0)
		t := b.clk.NewTimer(b.sched.Wait(attempt))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			b.release(channel)
			log.Warn("receiving stopped while the store refused a message; it stays unconfirmed for the network to hand out again",
				"chat", in.ChatID, "id", in.ID)
			return ctx.Err()
		}
	}
}

// refused notes a failed write; the first of an outage is logged.
func (b *Inbox) refused(log *slog.Logger, channel string, in Inbound, err error, first bool) {
	b.mu.Lock()
	start := b.since.IsZero()
	if start {
		b.since = b.clk.Now()
	}
	b.lastErr = err.Error()
	b.attempts++
	if first {
		b.held[channel]++
	}
	b.mu.Unlock()
	if start {
		log.Warn("store refused a message; holding it and confirming nothing newer to the network until the store takes it (retrying with backoff)",
			"chat", in.ChatID, "id", in.ID, "err", err)
	}
}

// stored notes that a held message reached the store: the outage, if one
// was going on, is over.
func (b *Inbox) stored(log *slog.Logger, channel string) {
	b.mu.Lock()
	since, attempts := b.since, b.attempts
	b.since, b.lastErr, b.attempts = time.Time{}, "", 0
	b.held[channel]--
	b.mu.Unlock()
	if !since.IsZero() {
		log.Info("store takes messages again; catching up on the held ones",
			"failing_for", b.clk.Now().Sub(since).Round(time.Millisecond).String(), "failed_attempts", attempts)
	}
}

func (b *Inbox) release(channel string) {
	b.mu.Lock()
	b.held[channel]--
	b.mu.Unlock()
}

// Deliver hands in to the sink through e.Inbox (see Inbox.Deliver): nil
// once the store holds it, ctx's error if ctx ended first, in which case
// the caller must not confirm the update to its network.
func (e Env) Deliver(ctx context.Context, in Inbound) error {
	if e.Sink == nil {
		return errors.New("no sink")
	}
	return e.inbox().Deliver(ctx, e.Sink, e.logger(), in)
}

func (e Env) inbox() *Inbox {
	if e.Inbox == nil {
		return fallbackInbox
	}
	return e.Inbox
}

// permanent is an error retrying cannot cure: retry returns it at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }
