package telegram

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

// boldHTML stands in for format.Render in these tests: **x** becomes
// <b>x</b>, everything else escaped; escape false makes it a formatter
// that forgot to escape, whose output Telegram cannot parse.
func boldHTML(escape bool) func(string, int) []string {
	return func(md string, limit int) []string {
		pieces := channels.Split(md, limit)
		for i, p := range pieces {
			if escape {
				p = escapeHTML(p)
			}
			parts := strings.Split(p, "**")
			var b strings.Builder
			for j, part := range parts {
				switch {
				case j == 0:
				case j%2 == 1 && j < len(parts)-1:
					b.WriteString("<b>")
				case j%2 == 0:
					b.WriteString("</b>")
				default:
					b.WriteString("**") // unpaired: shown as written
				}
				b.WriteString(part)
			}
			pieces[i] = b.String()
		}
		return pieces
	}
}

type liveHarness struct {
	*harness
	clk *clock.Fake
}

func newLiveHarness(t testing.TB) *liveHarness {
	t.Helper()
	h := newHarness(t)
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	h.tg.clk = clk
	h.tg.render = boldHTML(true)
	return &liveHarness{harness: h, clk: clk}
}

func (h *liveHarness) begin(t testing.TB, chat int64, first string) *live {
	t.Helper()
	lm, err := h.tg.BeginStream(context.Background(), channels.OutMessage{Chat: ChatID(chat), Text: first, ReplyTo: "77"})
	if err != nil {
		t.Fatal(err)
	}
	l := lm.(*live)
	t.Cleanup(func() {
		l.stop()
		<-l.done
	})
	return l
}

// settle waits until the live loop has nothing to do before the clock
// moves: idle with nothing owed, or parked on a timer.
func (h *liveHarness) settle(t testing.TB, l *live) {
	t.Helper()
	testwait.Until(t, "the live loop to settle", func() bool {
		l.mu.Lock()
		owed := l.owed
		l.mu.Unlock()
		switch l.state.Load() {
		case loopIdle:
			return !owed
		case loopPacing:
			return len(h.clk.Waiting()) > 0
		case loopEnded:
			return true
		}
		return false
	})
}

// stream feeds words one per step, moving the clock by step after each.
func (h *liveHarness) stream(t testing.TB, l *live, text string, words []string, step time.Duration) string {
	t.Helper()
	for _, w := range words {
		text += " " + w
		l.Update(text)
		h.settle(t, l)
		h.clk.Advance(step)
	}
	h.settle(t, l)
	return text
}

func words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", i)
	}
	return out
}

func TestLiveGroupGrowsByThrottledEdits(t *testing.T) {
	h := newLiveHarness(t)
	l := h.begin(t, groupID, "**Rota**:")
	first := sentBy(h.fake, "sendMessage")
	if len(first) != 1 || first[0].Text != "<b>Rota</b>:" || first[0].ParseMode != "HTML" || first[0].ReplyTo != 77 {
		t.Fatalf("first words: %v", first)
	}
	// 30 s of answer, a word every 100 ms.
	text := h.stream(t, l, "**Rota**:", words(300), 100*time.Millisecond)
	edits := sentBy(h.fake, "editMessageText")
	// At most one a second per message, and at most 20 calls a minute
	// in a group: 6 at once plus 14 a minute, 7 of them in 30 s.
	if max := groupBurst + groupPerMinute/2; len(edits)+1 > max {
		t.Errorf("%d edits plus the first message in 30 s, want at most %d", len(edits), max)
	}
	if len(edits) < 5 {
		t.Fatalf("only %d edits in 30 s: the message did not grow", len(edits))
	}
	for i, e := range edits {
		if e.MessageID != first[0].MessageID {
			t.Errorf("edit %d of message %d, want %d", i, e.MessageID, first[0].MessageID)
		}
		if i > 0 && !strings.HasPrefix(e.Text, edits[i-1].Text) {
			t.Errorf("edit %d does not extend the one before", i)
		}
	}
	d, err := l.Finish(context.Background(), text+" **done**")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MessageIDs) != 1 || d.MessageIDs[0] != fmt.Sprint(first[0].MessageID) {
		t.Errorf("delivery %v, want the one message", d.MessageIDs)
	}
	got, mode, _ := h.fake.Shown(groupID, first[0].MessageID)
	if want := boldHTML(true)(text+" **done**", MaxMessageRunes)[0]; got != want || mode != "HTML" {
		t.Errorf("final message shows %q (%s), want %q", got, mode, want)
	}
	if n := len(sentBy(h.fake, "sendMessage")); n != 1 {
		t.Errorf("%d messages sent, want one growing message", n)
	}
}

func TestLivePrivateUsesDraftsThenOneMessage(t *testing.T) {
	h := newLiveHarness(t)
	l := h.begin(t, dmUserID, "Hi")
	text := h.stream(t, l, "Hi", words(50), 100*time.Millisecond)
	drafts := sentBy(h.fake, "sendMessageDraft")
	if len(drafts) < 3 || len(drafts) > 6+1 {
		t.Errorf("%d drafts in 5 s, want a few, at most one a second", len(drafts))
	}
	if n := len(sentBy(h.fake, "sendMessage")); n != 0 {
		t.Fatalf("%d messages before Finish, want drafts only", n)
	}
	if _, err := l.Finish(context.Background(), text); err != nil {
		t.Fatal(err)
	}
	msgs := sentBy(h.fake, "sendMessage")
	if len(msgs) != 1 || msgs[0].Text != text || msgs[0].ChatID != dmUserID || msgs[0].ReplyTo != 77 {
		t.Fatalf("after Finish: %v, want one message with the whole answer", msgs)
	}
	if n := len(sentBy(h.fake, "editMessageText")); n != 0 {
		t.Errorf("%d edits in a private chat with drafts", n)
	}
}

func TestLivePrivateWithoutDraftsEdits(t *testing.T) {
	h := newLiveHarness(t)
	h.fake.FailNext("sendMessageDraft", telegramtest.Failure{Status: 404, Description: "Not Found: method not found"})
	l := h.begin(t, dmUserID, "Hi")
	text := h.stream(t, l, "Hi", words(30), 100*time.Millisecond)
	if _, err := l.Finish(context.Background(), text); err != nil {
		t.Fatal(err)
	}
	msgs := sentBy(h.fake, "sendMessage")
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want one growing by edits", len(msgs))
	}
	if got, _, _ := h.fake.Shown(dmUserID, msgs[0].MessageID); got != text {
		t.Errorf("shows %q, want %q", got, text)
	}
}

// paragraphs is an answer of n paragraphs of about 500 characters.
func paragraphs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Paragraph %d: %s.", i, strings.Repeat("lorem ipsum ", 40))
	}
	return out
}

func TestLiveContinuesPast4096AtAParagraph(t *testing.T) {
	for _, c := range []struct {
		name string
		chat int64
	}{{"group", groupID}, {"private", dmUserID}} {
		t.Run(c.name, func(t *testing.T) {
			h := newLiveHarness(t)
			paras := paragraphs(20) // ~10 000 characters: three messages
			text := paras[0]
			l := h.begin(t, c.chat, text)
			for _, p := range paras[1:] {
				text += "\n\n" + p
				l.Update(text)
				h.settle(t, l)
				h.clk.Advance(5 * time.Second)
			}
			h.settle(t, l)
			d, err := l.Finish(context.Background(), text)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.MessageIDs) != 3 {
				t.Fatalf("answer spans %d messages, want 3", len(d.MessageIDs))
			}
			var shown []string
			for _, id := range d.MessageIDs {
				s, _, ok := h.fake.Shown(c.chat, optInt(id))
				if !ok {
					t.Fatalf("message %s is gone", id)
				}
				if n := len([]rune(s)); n > MaxMessageRunes {
					t.Errorf("message %s has %d characters", id, n)
				}
				if !strings.HasPrefix(s, "Paragraph ") || !strings.HasSuffix(s, ".") {
					t.Errorf("message %s is not cut at a paragraph: %q…%q", id, s[:20], s[len(s)-20:])
				}
				shown = append(shown, s)
			}
			if got := strings.Join(shown, "\n\n"); got != text {
				t.Error("the messages together are not the answer")
			}
		})
	}
}

func TestLiveObeys429(t *testing.T) {
	h := newLiveHarness(t)
	l := h.begin(t, groupID, "Hello")
	h.fake.FailNext("editMessageText", telegramtest.Failure{Status: 429, Description: "Too Many Requests: retry after 5", RetryAfter: 5})
	text := "Hello there"
	l.Update(text)
	h.settle(t, l)
	h.clk.Advance(time.Second) // the edit is due: it gets the 429
	h.settle(t, l)
	if h.fake.Calls("editMessageText") != 1 {
		t.Fatalf("%d edit calls, want the one refused", h.fake.Calls("editMessageText"))
	}
	// Nothing until retry_after has passed, however much text arrives.
	for i := range 5 {
		text += fmt.Sprint(" more", i)
		l.Update(text)
		h.settle(t, l)
		h.clk.Advance(time.Second - time.Millisecond)
		h.settle(t, l)
		if n := h.fake.Calls("editMessageText"); n != 1 {
			t.Fatalf("%d edit calls %d s into a 5 s retry_after", n, i+1)
		}
	}
	h.clk.Advance(time.Second)
	h.settle(t, l)
	edits := sentBy(h.fake, "editMessageText")
	if len(edits) != 1 || edits[0].Text != text {
		t.Fatalf("after retry_after: %v, want one edit with the newest text", edits)
	}
	// A 429 on the final edit is waited out too: the answer arrives.
	h.fake.FailNext("editMessageText", telegramtest.Failure{Status: 429, RetryAfter: 1})
	if _, err := l.Finish(context.Background(), text+" end"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := h.fake.Shown(groupID, edits[0].MessageID); got != text+" end" {
		t.Errorf("final text %q", got)
	}
}

func TestCantParseFallsBackToPlain(t *testing.T) {
	const md = "if a < b then **bold** & done"
	const plain = "if a < b then bold & done"
	cases := []struct {
		name string
		run  func(t *testing.T, h *liveHarness) (chat int64, id int)
	}{
		{"send", func(t *testing.T, h *liveHarness) (int64, int) {
			d, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: md})
			if err != nil {
				t.Fatal(err)
			}
			return groupID, optInt(d.MessageIDs[0])
		}},
		{"live group", func(t *testing.T, h *liveHarness) (int64, int) {
			l := h.begin(t, groupID, "if a")
			l.Update(md)
			h.settle(t, l)
			h.clk.Advance(time.Second)
			h.settle(t, l)
			d, err := l.Finish(context.Background(), md)
			if err != nil {
				t.Fatal(err)
			}
			return groupID, optInt(d.MessageIDs[0])
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newLiveHarness(t)
			h.tg.render = boldHTML(false)
			chat, id := c.run(t, h)
			got, mode, _ := h.fake.Shown(chat, id)
			if got != plain || mode != "" {
				t.Errorf("shows %q in mode %q, want %q plain", got, mode, plain)
			}
			if !strings.Contains(h.logs.String(), "sending it plain") {
				t.Error("the fallback was not logged")
			}
		})
	}
	t.Run("well-formed HTML is kept", func(t *testing.T) {
		h := newLiveHarness(t)
		d, err := h.tg.Send(context.Background(), channels.OutMessage{Chat: ChatID(groupID), Text: md + " **unpaired"})
		if err != nil {
			t.Fatal(err)
		}
		got, mode, _ := h.fake.Shown(groupID, optInt(d.MessageIDs[0]))
		if want := "if a &lt; b then <b>bold</b> &amp; done **unpaired"; got != want || mode != "HTML" {
			t.Errorf("shows %q (%s), want %q", got, mode, want)
		}
	})
}

func TestInterruptStream(t *testing.T) {
	h := newLiveHarness(t)
	l := h.begin(t, groupID, "Half an")
	l.Update("Half an answer")
	h.settle(t, l)
	h.clk.Advance(time.Second)
	h.settle(t, l)
	ids := l.IDs()
	// The daemon crashed here; after the restart the outbox marks it.
	if err := h.tg.InterruptStream(context.Background(), ChatID(groupID), ids, "Half an answer"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := h.fake.Shown(groupID, optInt(ids[0])); got != "Half an answer\n\n(interrupted)" {
		t.Errorf("shows %q", got)
	}
}

func TestLiveCancel(t *testing.T) {
	t.Run("with a note", func(t *testing.T) {
		h := newLiveHarness(t)
		l := h.begin(t, groupID, "Half an answer")
		ids := l.IDs()
		if err := l.Cancel(context.Background(), "(stopped)"); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := h.fake.Shown(groupID, optInt(ids[0])); got != "Half an answer\n\n(stopped)" {
			t.Errorf("shows %q", got)
		}
	})
	t.Run("without a note", func(t *testing.T) {
		h := newLiveHarness(t)
		l := h.begin(t, groupID, "Half an answer")
		ids := l.IDs()
		if err := l.Cancel(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := h.fake.Shown(groupID, optInt(ids[0])); ok {
			t.Error("the message is still there")
		}
	})
}

func TestLiveFinishReplacesNeverDuplicates(t *testing.T) {
	h := newLiveHarness(t)
	long := strings.Join(paragraphs(10), "\n\n") // two messages
	l := h.begin(t, groupID, long)
	if n := len(l.IDs()); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
	// A fallback model's answer is short: one message, the other goes.
	d, err := l.Finish(context.Background(), "A short answer.")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.MessageIDs) != 1 || len(sentBy(h.fake, "deleteMessage")) != 1 {
		t.Fatalf("delivery %v, deleted %v", d.MessageIDs, sentBy(h.fake, "deleteMessage"))
	}
	if got, _, _ := h.fake.Shown(groupID, optInt(d.MessageIDs[0])); got != "A short answer." {
		t.Errorf("shows %q", got)
	}
}

// BenchmarkLiveEditsPerMinute is a 60 s answer with a delta every 50 ms
// on a fake clock, against the fake Bot API: calls per minute the chat
// sees (edits in a group, drafts in a private chat).
func BenchmarkLiveEditsPerMinute(b *testing.B) {
	for _, c := range []struct {
		name   string
		chat   int64
		method string
	}{{"group", groupID, "editMessageText"}, {"private", dmUserID, "sendMessageDraft"}} {
		b.Run(c.name, func(b *testing.B) {
			var calls int
			for range b.N {
				h := newLiveHarness(b)
				l := h.begin(b, c.chat, "Start")
				h.stream(b, l, "Start", words(1200), 50*time.Millisecond)
				if _, err := l.Finish(context.Background(), "done"); err != nil {
					b.Fatal(err)
				}
				calls += len(sentBy(h.fake, c.method))
			}
			b.ReportMetric(float64(calls)/float64(b.N), c.method+"/min")
		})
	}
}

func TestTypingRenewalIsFree(t *testing.T) {
	h := newHarness(t)
	h.tg.typingEvery = time.Hour // only the first "on" and renewals could call
	ctx := context.Background()
	for range 50 {
		if err := h.tg.SetTyping(ctx, ChatID(groupID), true); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(sentBy(h.fake, "sendChatAction")); n != 1 {
		t.Errorf("%d chat actions for one \"on\" and 49 renewals, want 1", n)
	}
	if err := h.tg.SetTyping(ctx, ChatID(groupID), false); err != nil {
		t.Fatal(err)
	}
	if err := h.tg.SetTyping(ctx, ChatID(groupID), true); err != nil {
		t.Fatal(err)
	}
	if n := len(sentBy(h.fake, "sendChatAction")); n != 2 {
		t.Errorf("%d chat actions after off and on again, want 2", n)
	}
	_ = h.tg.SetTyping(ctx, ChatID(groupID), false)
}
