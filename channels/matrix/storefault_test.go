package matrix

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/testwait"
)

// While the store refuses a message (its database held locked by another
// connection), the sync position does not move past it: no /sync from the
// next position, none saved. Stopped then, the next start syncs the batch
// again; once the store works, the message is stored once and the position
// moves on.
func TestSyncPositionHeldWhileTheStoreRefuses(t *testing.T) {
	h := newHarness(t)
	fs := chantest.NewFaultyStore(t)
	h.sink.OnDeliver = fs.StoreLike(h.sink)
	retry := backoff.Schedule{Initial: time.Millisecond, Max: 20 * time.Millisecond}
	h.mx.env.Inbox = channels.NewInbox(h.mx.log, nil, retry)
	stop := h.start(t, h.mx)
	before := h.fake.Position()
	h.fake.Wait(t, "the sync from the start position", func() bool { return h.fake.SyncedFrom(before) })

	fs.Lock(t)
	first := h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "one"})
	after := h.fake.Position()
	testwait.Until(t, "three refused writes", func() bool { return fs.Refused.Load() >= 3 })
	if h.fake.SyncedFrom(after) {
		t.Fatalf("a /sync from %s confirmed the batch the store refused", after)
	}
	stop() // botd stops while the store still refuses
	if st, err := loadState(StatePath(h.dataDir)); err != nil || st.Since == after {
		t.Fatalf("saved position %q (%v): the refused batch was confirmed", st.Since, err)
	}
	if got := fs.Stored(t, ChatID(family)); len(got) != 0 {
		t.Fatalf("stored %v while the database was locked", got)
	}

	// The next start, with the store working: the batch comes again.
	fs.Unlock(t)
	again := h.build(t)
	again.env.Inbox = channels.NewInbox(again.log, nil, retry)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); again.Wait() }()
	if err := again.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.fake.Wait(t, "a /sync past the message", func() bool { return h.fake.SyncedFrom(after) })
	if got := fs.Stored(t, ChatID(family)); !slices.Equal(got, []string{first}) {
		t.Errorf("stored %v, want [%s] once", got, first)
	}

	// And an outage while running: held, then caught up by itself.
	fs.Lock(t)
	refused := fs.Refused.Load()
	second := h.fake.Post(family, ann, obj{"msgtype": "m.text", "body": "two"})
	next := h.fake.Position()
	testwait.Until(t, "more refused writes", func() bool { return fs.Refused.Load() >= refused+3 })
	if h.fake.SyncedFrom(next) {
		t.Fatalf("a /sync from %s confirmed the batch the store refused", next)
	}
	fs.Unlock(t)
	h.fake.Wait(t, "a /sync past the second message", func() bool { return h.fake.SyncedFrom(next) })
	if got := fs.Stored(t, ChatID(family)); !slices.Equal(got, []string{first, second}) {
		t.Errorf("stored %v, want [%s %s]", got, first, second)
	}
}
