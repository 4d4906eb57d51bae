package whatsapp

import (
	"context"
	"testing"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
)

// After Start's ctx ends, Wait returns only once the message being handed
// to the sink was handed over and the session store was closed, and a
// message whatsmeow dispatches afterwards does not reach the sink:
// shutdown can close the store once Wait returned.
func TestWaitAfterCancel(t *testing.T) {
	env := newTestChannel(t, Config{})
	w := env.w
	entered, release := make(chan struct{}), make(chan struct{})
	env.sink.OnDeliver = func(_ context.Context, in channels.Inbound) error {
		if in.ID == "3EB0TWO" {
			close(entered)
			<-release
		}
		return nil
	}
	text := func(s string) *waE2E.Message { return &waE2E.Message{Conversation: proto.String(s)} }

	c := &fakeConn{onConnect: make(chan int, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.onConnect // the login launch waits for
		w.handleEvent(&events.Connected{})
	}()
	closed := make(chan struct{})
	if err := w.launch(ctx, c, func() { close(closed) }); err != nil {
		t.Fatal(err)
	}
	w.handleEvent(groupMsg("3EB0ONE", text("one")))
	// whatsmeow dispatches on its own goroutines; this one is held in the
	// sink while the channel stops.
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		w.handleEvent(groupMsg("3EB0TWO", text("two")))
	}()
	<-entered
	cancel()
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		chantest.WaitReturns(t, w)
	}()
	close(release)
	<-waited
	if got := env.sink.Total(); got != 2 {
		t.Fatalf("%d messages handed over when Wait returned, want 2", got)
	}
	select {
	case <-closed:
	default:
		t.Error("the session store was still open when Wait returned")
	}
	if c.IsConnected() {
		t.Error("still connected after Wait")
	}
	<-dispatched

	w.handleEvent(groupMsg("3EB0LATE", text("late")))
	if got := env.sink.Total(); got != 2 {
		t.Errorf("%d messages delivered after Wait returned, want none", got-2)
	}
}
