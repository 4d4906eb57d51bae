package whatsapp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/store"
)

// Once another instance took the lease, nothing this one does reaches
// WhatsApp: its client (every call the channel makes) asks the fence
// first, so a message, a file, typing or a live answer's finish are
// refused without a call.
func TestStaleInstanceReachesWhatsAppWithNothing(t *testing.T) {
	e := newTestChannel(t, Config{Enabled: true})
	lease := chantest.NewLease(t)
	e.w.env.Fence = lease
	ctx := context.Background()
	if _, err := e.w.Send(ctx, channels.OutMessage{Chat: groupID, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	lm, err := e.w.BeginStream(ctx, channels.OutMessage{Chat: groupID, Text: "Dinner"})
	if err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		e.cli.mu.Lock()
		defer e.cli.mu.Unlock()
		return len(e.cli.sent) + len(e.cli.uploads) + len(e.cli.presence) + e.cli.downloads + e.cli.retryReceipts
	}
	if n := calls(); n != 2 {
		t.Fatalf("while holding the lease: %d calls, want a message and the typing presence", n)
	}

	lease.Lose(t)
	fenced := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s after the lease was lost: %v, want store.ErrFenced", what, err)
		}
	}
	_, err = lm.Finish(ctx, "Dinner is at seven.")
	fenced("finishing the live answer", err)
	_, err = e.w.Send(ctx, channels.OutMessage{Chat: groupID, Text: "hello again"})
	fenced("a message", err)
	fenced("typing", e.w.SetTyping(ctx, groupID, true))
	p := filepath.Join(t.TempDir(), "a.pdf")
	if err := os.WriteFile(p, []byte("%PDF-1.4"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = e.w.SendMedia(ctx, channels.OutMedia{Chat: groupID, File: chantest.OpenFile(t, p), FileName: "a.pdf"})
	fenced("a file", err)
	if n := calls(); n != 2 {
		t.Errorf("%d calls reached the client after the lease was lost", n-2)
	}
}
