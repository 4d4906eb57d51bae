package telegram

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// Updates must not be confirmed to Telegram (by polling past them) before
// the sink has them: a crash in between would lose them for good.
func TestUpdatesConfirmedOnlyAfterTheSinkHasThem(t *testing.T) {
	h := newHarness(t)
	// Every delivery is held until released, like a sink stuck on a busy
	// disk when the process is killed.
	entered, release := make(chan struct{}, 1), make(chan struct{})
	store := h.sink.OnDeliver
	h.sink.OnDeliver = func(ctx context.Context, in channels.Inbound) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return store(ctx, in)
	}
	chat := telegramtest.Group(groupID, "Family")
	from := telegramtest.Person(7, "Ann")
	h.fake.Enqueue(
		telegramtest.Text(chat, from, 1, "one"),
		telegramtest.Text(chat, from, 2, "two"),
		telegramtest.Text(chat, from, 3, "three"),
	)
	var held atomic.Bool
	h.tg.acks.onHold = func() { held.Store(true) }
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	h.start(t)
	t.Cleanup(free) // cleanups run last-first: free before the harness waits for the stop
	<-entered
	// The library polls again as soon as it has queued the batch. That
	// poll either confirms the batch at the fake (the bug) or is held
	// back at the gate; wait for whichever happens rather than for a
	// time an eager poller "should" have needed.
	testwait.Until(t, "held.Load() || h.fake.Pending() < 3", func() bool { return held.Load() || h.fake.Pending() < 3 })
	if n := h.fake.Pending(); n != 3 {
		t.Fatalf("%d of 3 updates still unconfirmed while the first is being stored, want 3", n)
	}
	if n := h.fake.Calls("getUpdates"); n != 1 {
		t.Errorf("%d polls reached Telegram while the first update was being stored, want 1", n)
	}
	free()
	h.waitInbound(t, 3)
	testwait.Until(t, "h.fake.Pending() == 0", func() bool { return h.fake.Pending() == 0 })
}
