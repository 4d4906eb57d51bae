package discord

import (
	"slices"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/testwait"
)

// Discord's gateway has nothing to withhold; what botd can do is hold
// the message: while the store refuses (its database held locked by
// another connection) the message is retried and later ones wait behind
// it; once the store works, all are stored once, in order.
func TestMessagesHeldWhileTheStoreRefuses(t *testing.T) {
	h := newHarness(t)
	fs := chantest.NewFaultyStore(t)
	h.sink.OnDeliver = fs.StoreLike(h.sink)
	inbox := channels.NewInbox(h.dc.log, nil, backoff.Schedule{Initial: time.Millisecond, Max: 20 * time.Millisecond})
	h.dc.env.Inbox = inbox
	h.start(t)
	fs.Lock(t)
	one, _ := h.fake.Post(discordfake.Message{Content: "one"})
	two, _ := h.fake.Post(discordfake.Message{Content: "two"})
	testwait.Until(t, "three refused writes", func() bool { return fs.Refused.Load() >= 3 })
	if st := inbox.Status(); st.FailingSince.IsZero() || st.Held["discord"] != 1 {
		t.Errorf("inbox status while failing = %+v, want failing and one discord message held", st)
	}
	if got := fs.Stored(t, chatChannel); len(got) != 0 {
		t.Fatalf("stored %v while the database was locked", got)
	}
	fs.Unlock(t)
	if a, b := h.next(t), h.next(t); a.ID != one || b.ID != two {
		t.Fatalf("delivered %s, %s; want %s, %s", a.ID, b.ID, one, two)
	}
	if got := fs.Stored(t, chatChannel); !slices.Equal(got, []string{one, two}) {
		t.Errorf("stored %v, want [%s %s]: each once, in order", got, one, two)
	}
	if st := inbox.Status(); !st.FailingSince.IsZero() || st.Waiting() != 0 {
		t.Errorf("inbox status after recovery = %+v", st)
	}
}
