package slack

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

// liveHarness is a started channel whose live answers are paced by a fake
// clock, and a question asked in a thread of testChannel.
type liveHarness struct {
	*harness
	clk  *clock.Fake
	chat string
	root string // the thread the question was asked in
}

func newLiveHarness(t *testing.T) *liveHarness {
	t.Helper()
	return newFencedLiveHarness(t, nil)
}

// newFencedLiveHarness is newLiveHarness with fence as Env.Fence.
func newFencedLiveHarness(t *testing.T, fence channels.Fence) *liveHarness {
	t.Helper()
	h := newFencedHarness(t, nil, fence)
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	h.sl.clock = clk
	h.start(t)
	root := nextTS()
	h.send(t, message(testChannel, human, "<@"+slackfake.BotUserID+"> explain the rota", map[string]any{"thread_ts": root}))
	if in := h.next(t); in.ThreadID != root {
		t.Fatalf("question not in its thread: %+v", in)
	}
	return &liveHarness{harness: h, clk: clk, chat: "slack:" + testChannel, root: root}
}

// paced waits until the live answer's pacing goroutine sleeps until its
// next edit: what Update is given now waits for the clock.
func (h *liveHarness) paced(t *testing.T) {
	t.Helper()
	testwait.Until(t, "the live answer to wait for its next edit", func() bool { return len(h.clk.Waiting()) == 1 })
}

// methods lists the methods of a call log.
func methods(log []slackfake.Call) []string {
	var out []string
	for _, c := range log {
		out = append(out, c.Method)
	}
	return out
}

func (h *liveHarness) text(t *testing.T, ts string) string {
	t.Helper()
	m, ok := h.fake.Message(ts)
	if !ok {
		t.Fatalf("message %s is gone", ts)
	}
	return m.Text
}

// TestLiveAnswerStreamsIntoThread: where the workspace has chat streaming,
// the thread answer grows by appends, at most one a second however fast
// the model writes, and ends complete and closed.
func TestLiveAnswerStreamsIntoThread(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "The rota"})
	if err != nil {
		t.Fatal(err)
	}
	start := h.fake.Log()
	if len(start) != 1 || start[0].Method != "chat.startStream" || start[0].Error != "" {
		t.Fatalf("log = %+v", start)
	}
	if c := start[0]; c.ThreadTS != h.root || c.RecipientUser != human || c.RecipientTeam != slackfake.TeamID || c.Text != "The rota" {
		t.Errorf("startStream = %+v", c)
	}
	ts := start[0].TS
	if ids := lm.IDs(); !slices.Equal(ids, []string{ts}) {
		t.Errorf("IDs = %v, want [%s]", ids, ts)
	}

	h.paced(t)
	lm.Update("The rota changes")
	lm.Update("The rota changes on Monday")
	if got := methods(h.fake.Log()); len(got) != 1 {
		t.Fatalf("before the second passed: %v", got)
	}
	h.clk.Advance(time.Second)
	testwait.Until(t, "the newest text to be streamed", func() bool { return h.text(t, ts) == "The rota changes on Monday" })
	appends := h.fake.Log()[1:]
	if len(appends) != 1 || appends[0].Method != "chat.appendStream" || appends[0].Text != " changes on Monday" {
		t.Fatalf("after one second: %+v (want one append of the newest text)", appends)
	}

	h.paced(t)
	lm.Update("The rota changes on Monday, with Ann")
	final := "The rota changes on Monday, with Ann & Bob <3."
	d, err := lm.Finish(h.ctx, final)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := h.fake.Message(ts)
	if m.Streaming || m.Text != "The rota changes on Monday, with Ann &amp; Bob &lt;3." {
		t.Errorf("final message = %+v", m)
	}
	if !slices.Equal(d.MessageIDs, []string{ts}) {
		t.Errorf("delivery = %v", d.MessageIDs)
	}
	want := []string{"chat.startStream", "chat.appendStream", "chat.appendStream", "chat.stopStream"}
	if got := methods(h.fake.Log()); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if n := len(h.fake.Thread(testChannel, h.root)); n != 1 {
		t.Errorf("thread holds %d answers, want 1", n)
	}
}

// TestLiveAnswerFallsBackToUpdates: a workspace without chat streaming
// gets a posted message edited about once a second, and botd stops asking
// for streams for the rest of the process.
func TestLiveAnswerFallsBackToUpdates(t *testing.T) {
	for _, code := range []string{"unknown_method", "not_allowed"} {
		t.Run(code, func(t *testing.T) {
			h := newLiveHarness(t)
			h.fake.FailMethod("chat.startStream", code)
			for round := range 2 {
				before := len(h.fake.Log())
				lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "The rota"})
				if err != nil {
					t.Fatal(err)
				}
				log := h.fake.Log()[before:]
				want := []string{"chat.startStream", "chat.postMessage"}
				if round > 0 {
					want = want[1:] // the fallback holds for the process
				}
				if got := methods(log); !slices.Equal(got, want) {
					t.Fatalf("round %d began with %v, want %v", round, got, want)
				}
				post := log[len(log)-1]
				if post.ThreadTS != h.root || post.Text != "The rota" || post.Mrkdwn == "false" {
					t.Errorf("post = %+v", post)
				}
				h.paced(t)
				lm.Update("The rota changes")
				lm.Update("The rota changes on Monday")
				h.clk.Advance(time.Second)
				testwait.Until(t, "the message to show the newest text", func() bool { return h.text(t, post.TS) == "The rota changes on Monday" })
				updates := h.fake.Log()[before+len(log):]
				if len(updates) != 1 || updates[0].Method != "chat.update" || updates[0].TS != post.TS {
					t.Fatalf("after one second: %+v (want one chat.update with the newest text)", updates)
				}
				h.paced(t)
				d, err := lm.Finish(h.ctx, "The rota changes on **Monday**.")
				if err != nil {
					t.Fatal(err)
				}
				if got := h.text(t, post.TS); got != "The rota changes on *Monday*." { // Slack's mrkdwn bold
					t.Errorf("final text = %q", got)
				}
				if !slices.Equal(d.MessageIDs, []string{post.TS}) {
					t.Errorf("delivery = %v", d.MessageIDs)
				}
			}
		})
	}
}

// TestLiveAnswerPastTheLimit: a top-level answer (Slack streams only in
// threads) that grows past TextLimit continues in a new message; a retry
// that comes out shorter edits the first and removes the rest.
func TestLiveAnswerPastTheLimit(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, Text: "Para one."})
	if err != nil {
		t.Fatal(err)
	}
	long := "Para one.\n\n" + strings.Repeat("x", TextLimit-20) + "\n\n" + strings.Repeat("y", 100)
	h.paced(t)
	lm.Update(long)
	h.clk.Advance(time.Second)
	testwait.Until(t, "the answer to continue in a second message", func() bool { return len(lm.IDs()) == 2 })
	top := h.fake.Thread(testChannel, "")
	if len(top) != 2 || top[1].Text != strings.Repeat("y", 100) || !strings.HasPrefix(top[0].Text, "Para one.") {
		t.Fatalf("top-level messages = %d, want the first paragraphs and then the y's", len(top))
	}
	if slices.Contains(methods(h.fake.Log()), "chat.startStream") {
		t.Error("a top-level answer was streamed")
	}
	h.paced(t)
	d, err := lm.Finish(h.ctx, "Retried: short.")
	if err != nil {
		t.Fatal(err)
	}
	top = h.fake.Thread(testChannel, "")
	if len(top) != 1 || top[0].Text != "Retried: short." || !slices.Equal(d.MessageIDs, []string{top[0].TS}) {
		t.Errorf("after Finish: %+v, delivery %v", top, d.MessageIDs)
	}
}

// TestLiveAnswerStreamReplaced: a retried answer that does not extend
// what was streamed replaces it in the same message, never a second copy.
func TestLiveAnswerStreamReplaced(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "The first model sa"})
	if err != nil {
		t.Fatal(err)
	}
	h.paced(t)
	d, err := lm.Finish(h.ctx, "The fallback model's whole answer.")
	if err != nil {
		t.Fatal(err)
	}
	thread := h.fake.Thread(testChannel, h.root)
	if len(thread) != 1 || thread[0].Text != "The fallback model's whole answer." || thread[0].Streaming {
		t.Fatalf("thread = %+v", thread)
	}
	if !slices.Equal(d.MessageIDs, []string{thread[0].TS}) {
		t.Errorf("delivery = %v", d.MessageIDs)
	}
	want := []string{"chat.startStream", "chat.stopStream", "chat.update"}
	if got := methods(h.fake.Log()); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

// TestLiveAnswerCancelAndInterrupt: a stopped run's answer says so; a
// crash leaves what was shown marked interrupted.
func TestLiveAnswerCancelAndInterrupt(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "Let me"})
	if err != nil {
		t.Fatal(err)
	}
	h.paced(t)
	lm.Update("Let me check")
	if err := lm.Cancel(h.ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	ts := lm.IDs()[0]
	if m, _ := h.fake.Message(ts); m.Text != "Let me check\n\n_(stopped)_" || m.Streaming {
		t.Errorf("cancelled = %+v", m)
	}

	// A message shown by chat.update before a crash.
	h.fake.FailMethod("chat.startStream", "unknown_method")
	lm, err = h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "Half an"})
	if err != nil {
		t.Fatal(err)
	}
	ids := lm.IDs()
	if err := h.sl.InterruptStream(h.ctx, h.chat, ids, "Half an"); err != nil {
		t.Fatal(err)
	}
	if got := h.text(t, ids[0]); got != "Half an\n\n_(interrupted)_" {
		t.Errorf("interrupted = %q", got)
	}
	if _, err := lm.Finish(h.ctx, "Half an answer."); err != nil {
		t.Fatal(err)
	}
}

// TestSetTypingUsesAssistantStatus: "typing…" is Slack's assistant status
// in the thread the bot was addressed in; nothing for a top-level
// question, and nothing more once Slack said the method is not there.
func TestSetTypingUsesAssistantStatus(t *testing.T) {
	h := newLiveHarness(t)
	for _, on := range []bool{true, false} {
		if err := h.sl.SetTyping(h.ctx, h.chat, on); err != nil {
			t.Fatal(err)
		}
	}
	log := h.fake.Log()
	if len(log) != 2 || log[0].Method != "assistant.threads.setStatus" || log[0].ThreadTS != h.root ||
		log[0].Status != "is typing…" || log[1].Status != "" {
		t.Fatalf("log = %+v", log)
	}

	h.fake.FailMethod("assistant.threads.setStatus", "unknown_method")
	for range 2 {
		if err := h.sl.SetTyping(h.ctx, h.chat, true); err != nil {
			t.Errorf("SetTyping where Slack has no status: %v", err)
		}
	}
	if n := h.fake.Calls("assistant.threads.setStatus"); n != 3 {
		t.Errorf("setStatus asked %d times, want 3 (once refused, then never again)", n)
	}

	// A top-level question has no thread to show a status in.
	h.send(t, message(testChannel, human, "<@"+slackfake.BotUserID+"> and now?", nil))
	h.next(t)
	h.fake.FailMethod("assistant.threads.setStatus", "")
	h.sl.noStatus.Store(false)
	if err := h.sl.SetTyping(h.ctx, h.chat, true); err != nil {
		t.Fatal(err)
	}
	if n := h.fake.Calls("assistant.threads.setStatus"); n != 3 {
		t.Errorf("setStatus asked for a top-level question")
	}
}

// TestSendsGoThroughRender: every text send is formatted by the one render
// hook (format.Render once merged) and goes as mrkdwn.
func TestSendsGoThroughRender(t *testing.T) {
	old := render
	t.Cleanup(func() { render = old })
	render = func(md string, limit int) []string {
		return []string{strings.ReplaceAll(md, "**", "*")}
	}
	h := newHarness(t, nil)
	if _, err := h.sl.Send(h.ctx, channels.OutMessage{Chat: "slack:" + testChannel, Text: "a **bold** claim"}); err != nil {
		t.Fatal(err)
	}
	post := h.fake.Log()[0]
	if post.Text != "a *bold* claim" || post.Mrkdwn == "false" {
		t.Errorf("post = %+v", post)
	}
}

// BenchmarkLiveEditsPerMinute: a 60 s answer written at 20 updates a
// second costs about one Slack call a second, whichever way it is shown.
// Reported as edits/min (the pacing), with the real HTTP fake behind it.
func BenchmarkLiveEditsPerMinute(b *testing.B) {
	for _, tc := range []struct {
		name   string
		thread bool
	}{{"update", false}, {"stream", true}} {
		b.Run(tc.name, func(b *testing.B) {
			fake := slackfake.New(b)
			sl, err := New(Config{Enabled: true, BotToken: slackfake.BotToken, AppToken: slackfake.AppToken, APIURL: fake.APIURL()},
				channels.Env{Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			sl.clock = clk
			msg := channels.OutMessage{Chat: "slack:D0DIRECT", Text: "Start"}
			if tc.thread {
				msg.ThreadID = "1712000000.000001"
			}
			paced := func() {
				if !testwait.Eventually(func() bool { return len(clk.Waiting()) == 1 }) {
					b.Fatal("the live answer never waited for its next edit")
				}
			}
			ctx := context.Background()
			calls := 0
			for b.Loop() {
				before := len(fake.Log())
				lm, err := sl.BeginStream(ctx, msg)
				if err != nil {
					b.Fatal(err)
				}
				text := msg.Text
				for range 60 {
					paced()
					for range 20 {
						text += " word"
						lm.Update(text)
					}
					clk.Advance(sl.editEvery)
				}
				paced()
				if _, err := lm.Finish(ctx, text+"."); err != nil {
					b.Fatal(err)
				}
				calls += len(fake.Log()) - before
			}
			b.ReportMetric(float64(calls)/float64(b.N), "edits/min")
		})
	}
}

// TestLiveStreamPastTheLimit: a streamed answer that grows past TextLimit
// closes its stream at a paragraph break and goes on in a posted message
// in the same thread, which later text edits.
func TestLiveStreamPastTheLimit(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, ThreadID: h.root, Text: "Intro."})
	if err != nil {
		t.Fatal(err)
	}
	first := "Intro.\n\n" + strings.Repeat("x", TextLimit-100)
	h.paced(t)
	lm.Update(first + "\n\nMore")
	lm.Update(first + "\n\n" + strings.Repeat("y", 200))
	h.clk.Advance(time.Second)
	testwait.Until(t, "the answer to go on in a posted message", func() bool { return len(lm.IDs()) == 2 })
	h.paced(t)
	d, err := lm.Finish(h.ctx, first+"\n\n"+strings.Repeat("y", 200)+" and the end.")
	if err != nil {
		t.Fatal(err)
	}
	thread := h.fake.Thread(testChannel, h.root)
	if len(thread) != 2 {
		t.Fatalf("thread holds %d messages, want 2", len(thread))
	}
	if thread[0].Text != first || thread[0].Streaming {
		t.Errorf("streamed message: %d chars, streaming %v; want the first %d chars, closed", len(thread[0].Text), thread[0].Streaming, len(first))
	}
	if want := strings.Repeat("y", 200) + " and the end."; thread[1].Text != want {
		t.Errorf("posted message = %.40q…", thread[1].Text)
	}
	if !slices.Equal(d.MessageIDs, []string{thread[0].TS, thread[1].TS}) {
		t.Errorf("delivery = %v", d.MessageIDs)
	}
	want := []string{"chat.startStream", "chat.appendStream", "chat.stopStream", "chat.postMessage", "chat.update"}
	if got := methods(h.fake.Log()); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

// TestLiveCancelBeforeAnyUpdate: a run stopped before its first update
// keeps the first words and says it was stopped.
func TestLiveCancelBeforeAnyUpdate(t *testing.T) {
	h := newLiveHarness(t)
	lm, err := h.sl.BeginStream(h.ctx, channels.OutMessage{Chat: h.chat, Text: "Let me"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lm.Cancel(h.ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	if got := h.text(t, lm.IDs()[0]); got != "Let me\n\n_(stopped)_" {
		t.Errorf("cancelled = %q", got)
	}
}
