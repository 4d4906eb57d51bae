package whatsapp

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/testwait"
)

// whatsmeow sends a message's receipt only after the handler returned
// true. While the store refuses (its database held locked by another
// connection) the handler holds the message and does not return; once the
// store works it returns true with the message stored once. If receiving
// stops first it returns false: no receipt, WhatsApp hands it out again.
func TestReceiptWithheldWhileTheStoreRefuses(t *testing.T) {
	env := newTestChannel(t, Config{})
	w := env.w
	fs := chantest.NewFaultyStore(t)
	env.sink.OnDeliver = fs.StoreLike(env.sink)
	w.env.Inbox = channels.NewInbox(w.log, nil, backoff.Schedule{Initial: time.Millisecond, Max: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.mu.Lock()
	w.runCtx = ctx
	w.mu.Unlock()
	text := func(s string) *waE2E.Message { return &waE2E.Message{Conversation: proto.String(s)} }

	fs.Lock(t)
	acked := make(chan bool, 1)
	go func() { acked <- w.handle(groupMsg("3EB0ONE", text("one"))) }()
	testwait.Until(t, "three refused writes", func() bool { return fs.Refused.Load() >= 3 })
	select {
	case ok := <-acked:
		t.Fatalf("the handler returned %v while the store refused the message", ok)
	default:
	}
	fs.Unlock(t)
	if !<-acked {
		t.Fatal("the handler said not to acknowledge a message the store took")
	}
	if got := fs.Stored(t, groupID); !slices.Equal(got, []string{"3EB0ONE"}) {
		t.Errorf("stored %v, want [3EB0ONE]", got)
	}

	// Receiving stops while the store refuses: no receipt.
	fs.Lock(t)
	refused := fs.Refused.Load()
	go func() { acked <- w.handle(groupMsg("3EB0TWO", text("two"))) }()
	testwait.Until(t, "more refused writes", func() bool { return fs.Refused.Load() >= refused+2 })
	cancel()
	if <-acked {
		t.Error("the handler said to acknowledge a message the store never took")
	}
	fs.Unlock(t)
	if got := fs.Stored(t, groupID); !slices.Equal(got, []string{"3EB0ONE"}) {
		t.Errorf("stored %v, want [3EB0ONE]", got)
	}
}
