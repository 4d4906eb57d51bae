package web

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

// Once another instance took the lease, the assistant shows nothing in a
// web room: no message or file (written to the database every instance's
// pages read), no draft of a live answer, no typing. Each room asks
// Env.Fence before it shows anything.
func TestStaleInstanceShowsNothingInARoom(t *testing.T) {
	h := newHarness(t)
	lease := chantest.NewLease(t)
	for _, r := range h.w.rooms {
		r.fence = lease // what New takes from Env.Fence
	}
	ctx := context.Background()
	rows := func() int {
		t.Helper()
		msgs, err := h.st.WebRoomMessages(ctx, "main", 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}
	if _, err := h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := h.w.SetTyping(ctx, "web:main", true); err != nil {
		t.Fatal(err)
	}
	lm, err := h.w.BeginStream(ctx, channels.OutMessage{Chat: "web:main", Text: "Dinner"})
	if err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Fatalf("%d messages while holding the lease, want 1", n)
	}

	lease.Lose(t)
	h.w.rooms["main"].dropDraft(lm.IDs()[0])
	fenced := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s after the lease was lost: %v, want store.ErrFenced", what, err)
		}
	}
	lm2, err := h.w.BeginStream(ctx, channels.OutMessage{Chat: "web:main", Text: "Lunch"})
	if err != nil {
		t.Fatal(err)
	}
	if d := h.w.rooms["main"].drafts; len(d) != 0 {
		t.Errorf("a draft was shown after the lease was lost: %+v", d)
	}
	_, err = lm2.Finish(ctx, "Lunch is at one.")
	fenced("finishing a live answer", err)
	_, err = lm.Finish(ctx, "Dinner is at seven.")
	fenced("finishing the live answer begun before", err)
	_, err = h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: "hello again"})
	fenced("a message", err)
	fenced("typing", h.w.SetTyping(ctx, "web:main", true))
	p := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(p, []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = h.w.SendMedia(ctx, channels.OutMedia{Chat: "web:main", File: chantest.OpenFile(t, p), FileName: "a.txt"})
	fenced("a file", err)
	if n := rows(); n != 1 {
		t.Errorf("%d messages in the room after the lease was lost, want the 1 from before", n)
	}
}
