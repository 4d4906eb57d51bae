package web

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/testwait"
)

// While the store refuses what a channel received (its database held
// locked by another connection), the dashboard says so: since when, why,
// and how many messages are held unconfirmed; once it works again the
// line is gone, and the message counts once.
func TestDashboardShowsTheStoreRefusingMessages(t *testing.T) {
	mon := NewMonitor()
	h := newHarness(t, func(_ *Config, o *Options) { o.Monitor = mon })
	inbox := channels.NewInbox(slog.New(slog.DiscardHandler), nil, backoff.Schedule{Initial: time.Millisecond, Max: 20 * time.Millisecond})
	mon.WatchInbox(inbox)
	fs := chantest.NewFaultyStore(t)
	sink := chantest.NewSink("telegram:-100")
	sink.OnDeliver = fs.StoreLike(sink)
	mon.Started("telegram", nil)
	env := channels.Env{Sink: mon.Sink(sink), Inbox: inbox}

	fs.Lock(t)
	done := make(chan error, 1)
	go func() {
		done <- env.Deliver(context.Background(), channels.Inbound{ChatID: "telegram:-100", ID: "1", Text: "hi", Time: time.Now()})
	}()
	testwait.Until(t, "two refused writes", func() bool { return fs.Refused.Load() >= 2 })
	admin := h.admin()
	resp, page := h.get(admin, "/admin")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dashboard: %d", resp.StatusCode)
	}
	for _, want := range []string{`id="intake"`, "The store has refused messages since", "database is locked",
		"1 received message held (telegram 1), not confirmed to their networks"} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard lacks %q while the store refuses:\n%s", want, between(page, `id="channels"`, "</section>"))
		}
	}
	fs.Unlock(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, page = h.get(admin, "/admin")
	if strings.Contains(page, `id="intake"`) {
		t.Errorf("the dashboard still shows the outage after recovery:\n%s", between(page, `id="channels"`, "</section>"))
	}
	for _, st := range mon.States() {
		if st.Name == "telegram" && st.Events != 1 {
			t.Errorf("telegram events = %d, want 1: a retried message counts once", st.Events)
		}
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return s
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
