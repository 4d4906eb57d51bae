package slack

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
)

// Once another instance took the lease, nothing this one does reaches
// Slack: not the appends of a live answer begun before, not its end, a
// message, a file or the typing status. The fence sits in the channel's
// HTTP transport, so none of these call sites checks it itself.
func TestStaleInstanceReachesSlackWithNothing(t *testing.T) {
	lease := chantest.NewLease(t)
	h := newFencedLiveHarness(t, lease)

	// While the lease is held, it reaches the fake.
	if err := h.sl.SetTyping(h.ctx, h.chat, true); err != nil {
		t.Fatal(err)
	}
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "The rota"})
	if err != nil {
		t.Fatal(err)
	}
	if got := methods(h.fake.Log()); len(got) != 2 || got[0] != "assistant.threads.setStatus" || got[1] != "chat.startStream" {
		t.Fatalf("while holding the lease: %v", got)
	}
	ts := h.fake.Log()[1].TS
	h.paced(t)

	lease.Lose(t)
	// Nothing is in flight: every call so far returned.
	before := h.fake.AllCalls()
	lm.Update("The rota changes")
	h.clk.Advance(time.Second)
	testwait.Until(t, "the live answer's append refused", func() bool { return lease.Refused() >= 1 })
	fenced := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s after the lease was lost: %v, want store.ErrFenced", what, err)
		}
	}
	_, err = lm.Finish(h.ctx, "The rota changes on Monday.")
	fenced("finishing the live answer", err)
	fenced("typing", h.sl.SetTyping(h.ctx, h.chat, false))
	_, err = h.sl.Send(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "hello"})
	fenced("a message", err)
	p := filepath.Join(t.TempDir(), "a.pdf")
	if err := os.WriteFile(p, []byte("%PDF-1.4"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = h.sl.SendMedia(h.ctx, channels.OutMedia{Chat: h.chat, ThreadID: h.root, File: chantest.OpenFile(t, p), FileName: "a.pdf"})
	fenced("a file", err)

	if after := h.fake.AllCalls(); after != before {
		t.Errorf("the fake got %d calls after the lease was lost: %v", after-before, methods(h.fake.Log()))
	}
	if got := h.text(t, ts); got != "The rota" {
		t.Errorf("the live answer shows %q, want the words sent before the lease was lost", got)
	}
}
