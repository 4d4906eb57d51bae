package channels_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

// An outage of the store (its database held locked by another connection)
// is logged once however many retries it takes, the retries back off on
// the schedule, and a Deliver whose ctx ends while the store still refuses
// returns ctx's error (the caller then confirms nothing) and holds nothing
// any more.
func TestInboxRetriesOnTheScheduleAndLogsOnce(t *testing.T) {
	fs := chantest.NewFaultyStore(t)
	sink := chantest.NewSink(ours)
	sink.OnDeliver = fs.StoreLike(sink)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	inbox := channels.NewInbox(log, clk, backoff.Schedule{Initial: time.Second, Max: 4 * time.Second})
	env := channels.Env{Sink: sink, Log: log, Inbox: inbox}

	fs.Lock(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- env.Deliver(ctx, channels.Inbound{ChatID: ours, ID: "1", Text: "hi", Time: start}) }()
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		testwait.Until(t, "a retry waiting", func() bool { return len(clk.Waiting()) == 1 })
		if at := clk.Waiting()[0]; !at.Equal(clk.Now().Add(wait)) {
			t.Fatalf("next retry at %v, want %v after %v", at, wait, clk.Now())
		}
		clk.Advance(wait)
	}
	testwait.Until(t, "a retry waiting", func() bool { return len(clk.Waiting()) == 1 })
	st := inbox.Status()
	if !st.FailingSince.Equal(start) || st.Held["telegram"] != 1 || !strings.Contains(st.LastError, "database is locked") {
		t.Errorf("status = %+v", st)
	}
	if n := strings.Count(logs.String(), "store refused a message"); n != 1 {
		t.Errorf("%d refusal lines for one outage, want 1:\n%s", n, logs.String())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver after its ctx ended while the store refused = %v, want context.Canceled", err)
	}
	if st := inbox.Status(); st.Waiting() != 0 {
		t.Errorf("%d messages still counted as held after Deliver gave up", st.Waiting())
	}
	if sink.Total() != 0 || len(fs.Stored(t, ours)) != 0 {
		t.Error("a message was recorded although the store never took it")
	}
}
