package matrix

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

// shownContent is what a Matrix client shows for the bot's event evID:
// its content, or that of the newest m.replace edit of it.
type shownContent struct {
	Body          string `json:"body"`
	FormattedBody string `json:"formatted_body"`
	Edits         int
}

func shown(t *testing.T, h *harness, evID string) shownContent {
	t.Helper()
	var out shownContent
	for _, s := range h.fake.Sends() {
		var c struct {
			Body          string          `json:"body"`
			FormattedBody string          `json:"formatted_body"`
			NewContent    json.RawMessage `json:"m.new_content"`
			RelatesTo     struct {
				RelType string `json:"rel_type"`
				EventID string `json:"event_id"`
			} `json:"m.relates_to"`
		}
		if err := json.Unmarshal(s.Content, &c); err != nil {
			t.Fatal(err)
		}
		switch {
		case s.EventID == evID:
			out.Body, out.FormattedBody = c.Body, c.FormattedBody
		case c.RelatesTo.RelType == "m.replace" && c.RelatesTo.EventID == evID && !s.Repeat:
			if err := json.Unmarshal(c.NewContent, &out); err != nil {
				t.Fatalf("an edit without m.new_content: %s", s.Content)
			}
			if !strings.HasPrefix(c.Body, "* ") {
				t.Errorf("an edit's fallback body %q lacks the \"* \" clients without edits show", c.Body)
			}
			out.Edits++
		}
	}
	return out
}

type liveHarness struct {
	*harness
	clk *clock.Fake
	ctx context.Context
}

func newLiveHarness(t *testing.T) *liveHarness {
	t.Helper()
	h := newHarness(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	h.mx.clock = clk
	h.start(t, h.mx)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &liveHarness{harness: h, clk: clk, ctx: ctx}
}

// paced waits until the live answer's pacing goroutine sleeps until its
// next edit.
func (h *liveHarness) paced(t *testing.T) {
	t.Helper()
	testwait.Until(t, "the live answer to wait for its next edit", func() bool { return len(h.clk.Waiting()) == 1 })
}

// TestLiveAnswerGrowsByEdits: the first words are posted as the reply,
// updates become one m.replace edit per editEvery however many arrive,
// Finish shows the whole answer, an answer past TextLimit goes on in a
// new message, and a retried answer that came out shorter redacts what
// it no longer needs.
func TestLiveAnswerGrowsByEdits(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.mx.BeginStream(h.ctx, channels.OutMessage{Chat: ChatID(family), ReplyTo: "$question", Text: "The **rota**"})
	if err != nil {
		t.Fatal(err)
	}
	sends := h.fake.Sends()
	if len(sends) != 1 {
		t.Fatalf("begin sent %d events", len(sends))
	}
	first := decodeSent(t, sends[0].Content)
	if first.RelatesTo == nil || first.RelatesTo.InReplyTo == nil || first.RelatesTo.InReplyTo.EventID != "$question" ||
		!strings.Contains(first.FormattedBody, "<strong>rota</strong>") {
		t.Fatalf("begin: %+v", first)
	}
	evID := sends[0].EventID
	h.paced(t)
	lm.Update("The **rota** is")
	lm.Update("The **rota** is weekly <script>x</script>")
	if n := len(h.fake.Sends()); n != 1 {
		t.Fatalf("%d events before editEvery passed", n)
	}
	h.clk.Advance(editEvery)
	testwait.Until(t, "the paced edit", func() bool { return len(h.fake.Sends()) == 2 })
	got := shown(t, h.harness, evID)
	if got.Edits != 1 || !strings.Contains(got.FormattedBody, "is weekly &lt;script&gt;") || strings.Contains(got.FormattedBody, "<script") {
		t.Fatalf("after the edit: %+v", got)
	}
	h.paced(t)

	long := "The rota is weekly.\n\n" + strings.Repeat("Each person takes a day in turn. ", 400)
	d, err := lm.Finish(h.ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MessageIDs) < 2 || d.MessageIDs[0] != evID {
		t.Fatalf("finish ids = %v", d.MessageIDs)
	}
	var all string
	for _, id := range d.MessageIDs {
		all += shown(t, h.harness, id).Body + " "
	}
	if strings.Join(strings.Fields(all), " ") != strings.Join(strings.Fields(long), " ") {
		t.Fatalf("shown %q\nwant %q", all, long)
	}

	// Retried shorter: the extra messages are redacted.
	lm2, err := h.mx.BeginStream(h.ctx, channels.OutMessage{Chat: ChatID(family), Text: long})
	if err != nil {
		t.Fatal(err)
	}
	ids := lm2.IDs()
	if len(ids) < 2 {
		t.Fatalf("a long begin posted %v", ids)
	}
	d, err = lm2.Finish(h.ctx, "short")
	if err != nil || len(d.MessageIDs) != 1 || d.MessageIDs[0] != ids[0] || shown(t, h.harness, ids[0]).Body != "short" {
		t.Fatalf("finish shorter: %+v %v", d, err)
	}
	if red := h.fake.Redacted(); strings.Join(red, ",") != strings.Join(ids[1:], ",") {
		t.Fatalf("redacted %v, want %v", red, ids[1:])
	}
}

func TestLiveAnswerCancelAndInterrupt(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.mx.BeginStream(h.ctx, channels.OutMessage{Chat: ChatID(family), ReplyTo: "$q", Text: "Half an"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lm.Cancel(h.ctx, ""); err != nil {
		t.Fatal(err)
	}
	ids := lm.IDs()
	if len(ids) != 1 || shown(t, h.harness, ids[0]).Body != "Half an\n\n_(stopped)_" {
		t.Fatalf("cancelled: %+v", shown(t, h.harness, ids[0]))
	}
	if _, err := lm.Finish(h.ctx, "late"); err != nil || shown(t, h.harness, ids[0]).Body != "Half an\n\n_(stopped)_" {
		t.Fatalf("a Finish after Cancel changed the message: %v", err)
	}
	if err := h.mx.InterruptStream(h.ctx, ChatID(family), ids, "Half an answer"); err != nil {
		t.Fatal(err)
	}
	if got := shown(t, h.harness, ids[0]); got.Body != "Half an answer"+interruptedNote || !strings.Contains(got.FormattedBody, "<em>(interrupted)</em>") {
		t.Fatalf("interrupted: %+v", got)
	}
}
