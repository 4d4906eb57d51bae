package telegram

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
)

// Once another instance took the lease, nothing this one does reaches
// Telegram: not the typing loop's renewals, not the edits of a live
// answer begun before, not a message, a file, a typing indicator or a
// download. The fence sits in the channel's HTTP transport, so none of
// these call sites checks it itself.
func TestStaleInstanceReachesTelegramWithNothing(t *testing.T) {
	lease := chantest.NewLease(t)
	h := newFencedHarness(t, lease)
	h.tg.typingEvery = 5 * time.Millisecond
	ctx := context.Background()
	group := ChatID(groupID)
	h.fake.AddFile(telegramtest.File{ID: "AgAC-photo-l", Path: "photos/file_12.jpg", Data: []byte("jpeg")})
	ref := receiveRef(t, h, mediaCases[0].msg)

	// While the lease is held, all of it reaches the fake.
	if err := h.tg.SetTyping(ctx, group, true); err != nil {
		t.Fatal(err)
	}
	lm, err := h.tg.BeginStream(ctx, channels.OutMessage{Chat: group, Text: "Dinner"})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "typing renewed", func() bool { return len(sentBy(h.fake, "sendChatAction")) >= 2 })
	if got := sentBy(h.fake, "sendMessage"); len(got) != 1 || got[0].Text != "Dinner" {
		t.Fatalf("the live answer's first words: %v", got)
	}

	lease.Lose(t)
	// Whatever was in flight when the lease went has landed once the
	// typing loop was refused twice (its calls are sequential).
	testwait.Until(t, "the typing loop refused", func() bool { return lease.Refused() >= 2 })
	before := h.fake.AllCalls()
	lm.Update("Dinner is at seven")
	testwait.Until(t, "the live answer's edit refused", func() bool {
		return strings.Contains(h.logs.String(), "live answer update failed")
	})
	fenced := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s after the lease was lost: %v, want store.ErrFenced", what, err)
		}
	}
	_, err = lm.Finish(ctx, "Dinner is at seven.")
	fenced("finishing the live answer", err)
	_, err = h.tg.Send(ctx, channels.OutMessage{Chat: group, Text: "hello"})
	fenced("a message", err)
	_, err = h.tg.SendMedia(ctx, channels.OutMedia{Chat: group, File: chantest.OpenFile(t, writeTemp(t, "a.pdf", "%PDF-1.4")), FileName: "a.pdf"})
	fenced("a file", err)
	fenced("typing in another chat", h.tg.SetTyping(ctx, ChatID(dmUserID), true))
	_, _, err = h.tg.Download(ctx, &ref)
	fenced("a download", err)
	testwait.Until(t, "more typing renewals refused", func() bool {
		return strings.Count(h.logs.String(), "typing refresh failed") >= 3
	})
	if err := h.tg.SetTyping(ctx, group, false); err != nil {
		t.Fatal(err)
	}

	if after := h.fake.AllCalls(); after != before {
		t.Errorf("the fake got %d calls after the lease was lost; sent: %v", after-before, h.fake.Sent())
	}
	if text, _, _ := h.fake.Shown(groupID, sentBy(h.fake, "sendMessage")[0].MessageID); text != "Dinner" {
		t.Errorf("the live answer shows %q, want the words sent before the lease was lost", text)
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
