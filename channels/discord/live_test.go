package discord

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

type liveHarness struct {
	*harness
	clk *clock.Fake
	q   string // the question's message id
}

func newLiveHarness(t *testing.T) *liveHarness {
	t.Helper()
	h := newHarness(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	h.dc.clock = clk
	h.start(t)
	q, _ := h.post(t, discordfake.Message{Content: "<@" + discordfake.BotUserID + "> explain the rota"})
	return &liveHarness{harness: h, clk: clk, q: q.ID}
}

// paced waits until the live answer's pacing goroutine sleeps until its
// next edit.
func (h *liveHarness) paced(t *testing.T) {
	t.Helper()
	testwait.Until(t, "the live answer to wait for its next edit", func() bool { return len(h.clk.Waiting()) == 1 })
}

// TestLiveAnswerGrowsByEdits: the first words are posted as the reply,
// updates become one edit per second however many arrive, Finish shows
// the whole answer and an answer past 2000 characters goes on in a new
// message.
func TestLiveAnswerGrowsByEdits(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.dc.BeginStream(h.ctx, channels.OutMessage{Chat: chatChannel, ReplyTo: h.q, Text: "The rota"})
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.SentMessages()
	if len(sent) != 1 || sent[0].ReplyTo != h.q || sent[0].Content != "The rota" {
		t.Fatalf("begin: %+v", sent)
	}
	id := sent[0].ID
	h.paced(t)
	lm.Update("The rota is")
	lm.Update("The rota is weekly, @everyone")
	if n := len(h.fake.Edits()); n != 0 {
		t.Fatalf("%d edits before the second passed", n)
	}
	h.clk.Advance(time.Second)
	testwait.Until(t, "the paced edit", func() bool { return len(h.fake.Edits()) == 1 })
	if got := h.fake.Content(id); !strings.HasPrefix(got, "The rota is weekly, @") || strings.Contains(got, "@everyone") {
		t.Fatalf("after the edit: %q", got)
	}
	h.paced(t)

	long := "The rota is weekly.\n\n" + strings.Repeat("Each person takes a day in turn. ", 80)
	d, err := lm.Finish(h.ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MessageIDs) != 2 || d.MessageIDs[0] != id {
		t.Fatalf("finish ids = %v", d.MessageIDs)
	}
	var shown string
	for _, mid := range d.MessageIDs {
		c := h.fake.Content(mid)
		if utf8.RuneCountInString(c) > MaxMessageRunes {
			t.Fatalf("message %s has %d characters", mid, utf8.RuneCountInString(c))
		}
		shown += c + " "
	}
	if strings.Join(strings.Fields(shown), " ") != strings.Join(strings.Fields(long), " ") {
		t.Fatalf("shown %q\nwant %q", shown, long)
	}

	// A retried answer that came out shorter removes what it no longer needs.
	lm2, err := h.dc.BeginStream(h.ctx, channels.OutMessage{Chat: chatChannel, Text: ""})
	if err != nil {
		t.Fatal(err)
	}
	if got := lm2.IDs(); len(got) != 0 {
		t.Fatalf("an empty begin posted %v", got)
	}
	d, err = lm2.Finish(h.ctx, "short")
	if err != nil || len(d.MessageIDs) != 1 || h.fake.Content(d.MessageIDs[0]) != "short" {
		t.Fatalf("finish of an empty stream: %v %v", d, err)
	}
}

func TestLiveAnswerCancelAndInterrupt(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.dc.BeginStream(h.ctx, channels.OutMessage{Chat: chatChannel, ReplyTo: h.q, Text: "Half an"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lm.Cancel(h.ctx, ""); err != nil {
		t.Fatal(err)
	}
	ids := lm.IDs()
	if len(ids) != 1 || h.fake.Content(ids[0]) != "Half an\n\n_(stopped)_" {
		t.Fatalf("cancelled: %q", h.fake.Content(ids[0]))
	}
	if err := h.dc.InterruptStream(h.ctx, chatChannel, ids, "Half an answer"); err != nil {
		t.Fatal(err)
	}
	if got := h.fake.Content(ids[0]); got != "Half an answer"+interruptedNote {
		t.Fatalf("interrupted: %q", got)
	}
}

func TestLiveShowsOpenCodeBlockClosed(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.dc.BeginStream(h.ctx, channels.OutMessage{Chat: chatChannel, Text: "Run:\n```sh\nmake"})
	if err != nil {
		t.Fatal(err)
	}
	id := lm.IDs()[0]
	if got := h.fake.Content(id); got != "Run:\n```sh\nmake\n```" {
		t.Fatalf("partial: %q", got)
	}
	if _, err := lm.Finish(h.ctx, "Run:\n```sh\nmake test\n```\nDone."); err != nil {
		t.Fatal(err)
	}
	if got := h.fake.Content(id); got != "Run:\n```sh\nmake test\n```\nDone." {
		t.Fatalf("final: %q", got)
	}
}
