package agent

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/tools"
)

// step is one thing a fake stream does: hand out a chunk, fail, or block
// until gate closes (or the run's context ends, as a real connection
// would).
type step struct {
	chunk llm.Chunk
	err   error
	gate  chan struct{}
}

func deltas(texts ...string) []step {
	var out []step
	for _, s := range texts {
		out = append(out, step{chunk: llm.Chunk{Kind: llm.ChunkText, Text: s}})
	}
	return out
}

func stopped(reason llm.StopReason) step {
	return step{chunk: llm.Chunk{Kind: llm.ChunkStop, StopReason: reason, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 5}}}
}

func answerSteps(texts ...string) []step { return append(deltas(texts...), stopped(llm.StopEnd)) }

func toolSteps(text, id, name, args string) []step {
	var out []step
	if text != "" {
		out = deltas(text)
	}
	return append(out,
		step{chunk: llm.Chunk{Kind: llm.ChunkToolCallStart, ID: id, Name: name}},
		step{chunk: llm.Chunk{Kind: llm.ChunkToolCallDelta, ID: id, Text: args}},
		step{chunk: llm.Chunk{Kind: llm.ChunkToolCallEnd, ID: id}},
		stopped(llm.StopToolUse))
}

// streamLLM is a provider that streams scripted steps: script gives the
// steps of call n (from 1).
type streamLLM struct {
	script func(n int) []step

	mu sync.Mutex
	n  int
}

func (f *streamLLM) Name() string { return "fakestream" }
func (f *streamLLM) Capabilities() llm.Capabilities {
	return llm.Capabilities{Tools: true, Streaming: true}
}

func (f *streamLLM) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	return &fakeStream{ctx: ctx, steps: f.script(n)}, nil
}

func (f *streamLLM) Generate(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	s, err := f.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return llm.Fold(ctx, s)
}

type fakeStream struct {
	ctx   context.Context
	steps []step
}

func (s *fakeStream) Next() (llm.Chunk, error) {
	for len(s.steps) > 0 {
		st := s.steps[0]
		s.steps = s.steps[1:]
		switch {
		case st.gate != nil:
			select {
			case <-st.gate:
				continue
			case <-s.ctx.Done():
				return llm.Chunk{}, llm.FromTransport("fakestream", s.ctx.Err())
			}
		case st.err != nil:
			return llm.Chunk{}, st.err
		}
		return st.chunk, nil
	}
	return llm.Chunk{}, io.EOF
}

func (s *fakeStream) Close() error { return nil }

// newLiveHarness is the harness with a streaming model and a Telegram
// that shows live answers.
func newLiveHarness(t *testing.T, script func(n int) []step, mod func(*Options)) (*harness, *chantest.Streaming) {
	t.Helper()
	stg := chantest.NewStreaming("telegram")
	sl := &streamLLM{script: script}
	h := newHarness(t, newFakeLLM(nil), func(o *Options) {
		o.LLM = sl
		o.Channels["telegram"] = stg
		if mod != nil {
			mod(o)
		}
	})
	return h, stg
}

func kinds(evs []chantest.LiveEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind+":"+e.Text)
	}
	return out
}

func TestLiveAnswerGrowsInOrderAndTheOutboxFinishesIt(t *testing.T) {
	h, stg := newLiveHarness(t, func(n int) []step {
		return answerSteps("The rota", " changes", " on **Monday**.")
	}, nil)
	h.start()
	q := h.say(famChat, "Alice", "@Andy explain the rota")
	h.idle()
	want := []string{"begin:The rota", "update:The rota changes", "update:The rota changes on **Monday**.", "finish:The rota changes on **Monday**."}
	if got := kinds(stg.Events()); !slices.Equal(got, want) {
		t.Errorf("live events = %q\nwant %q", got, want)
	}
	if b := stg.EventsOf(chantest.LiveBegin); len(b) != 1 || b[0].Msg.ReplyTo != q || b[0].Chat != famChat {
		t.Errorf("begun as %+v, want a reply to %s in %s", b, q, famChat)
	}
	if s := stg.Sent(); len(s) != 0 {
		t.Errorf("also sent %q: the answer came twice", sentTexts(s))
	}
	var status, ids string
	if err := h.st.DB.QueryRow(`SELECT status, live_ids FROM agent_outbox`).Scan(&status, &ids); err != nil {
		t.Fatal(err)
	}
	if status != outboxdb.Sent || ids != `["live1"]` {
		t.Errorf("outbox row: status %s, live ids %s", status, ids)
	}
	if h.cursor("family") != h.lastSeq(famChat) {
		t.Error("cursor not advanced past the answered question")
	}
	if open, _ := h.st.OpenLives(context.Background()); len(open) != 0 {
		t.Errorf("finished live answer still recorded open: %+v", open)
	}
	// The answer is remembered as the assistant's own, under the live id.
	if m, err := h.st.Message(context.Background(), famChat, "live1"); err != nil || m.Text != "The rota changes on **Monday**." || !m.FromMe {
		t.Errorf("own answer recorded as %+v, %v", m, err)
	}
}

func TestLiveAnswerNeverShowsWhatTheChatMayNotSee(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deltas     []string
		wantFinish string
		wantSent   string
	}{
		{
			name:       "internal notes and MEDIA lines",
			deltas:     []string{"<inter", "nal>thinking hard</internal>Hel", "lo\nMEDIA:", " nothere.png\nBye <INTERNAL>secret", " plan"},
			wantFinish: "Hello\nBye\n\n(I could not send the file nothere.png.)",
		},
		{
			name:       "an unclosed note hides the rest",
			deltas:     []string{"Yes. <", "internal", ">and then the secret", " plan"},
			wantFinish: "Yes.",
		},
		{
			name:     "a spoken answer is taken back and sent whole",
			deltas:   []string{"Sure thing", " [[audio_", "as_voice]] here"},
			wantSent: "Sure thing  here",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, stg := newLiveHarness(t, func(n int) []step { return answerSteps(tc.deltas...) }, nil)
			h.start()
			h.say(famChat, "Alice", "@Andy go")
			h.idle()
			evs := stg.Events()
			for _, e := range evs {
				if e.Kind == chantest.LiveFinish || e.Kind == chantest.LiveCancel {
					continue
				}
				for _, bad := range []string{"<", "intern", "INTERN", "thinking", "secret", "MEDIA", "[[", "audio"} {
					if strings.Contains(e.Text, bad) {
						t.Errorf("shown mid-stream: %s %q (contains %q)", e.Kind, e.Text, bad)
					}
				}
			}
			fin := stg.EventsOf(chantest.LiveFinish)
			if tc.wantFinish != "" && (len(fin) != 1 || fin[0].Text != tc.wantFinish) {
				t.Errorf("finished %q, want %q (events %q)", kinds(fin), tc.wantFinish, kinds(evs))
			}
			if tc.wantSent != "" {
				if len(fin) != 0 || len(stg.EventsOf(chantest.LiveCancel)) != 1 {
					t.Errorf("a spoken answer's live message must be removed, got %q", kinds(evs))
				}
				if got := sentTexts(stg.Sent()); len(got) != 1 || got[0] != tc.wantSent {
					t.Errorf("sent %q, want %q", got, tc.wantSent)
				}
			}
		})
	}
}

func TestLiveToolTurnThenAnswerIsOneMessage(t *testing.T) {
	h, stg := newLiveHarness(t, func(n int) []step {
		if n == 1 {
			return toolSteps("Let me look.", "c1", "list_media", `{}`)
		}
		return answerSteps("Nothing ", "was shared.")
	}, nil)
	h.start()
	h.say(famChat, "Alice", "@Andy what did we share?")
	h.idle()
	want := []string{"begin:Let me look.", "update:Nothing", "update:Nothing was shared.", "finish:Nothing was shared."}
	if got := kinds(stg.Events()); !slices.Equal(got, want) {
		t.Errorf("live events = %q\nwant %q", got, want)
	}
	if len(stg.Sent()) != 0 {
		t.Errorf("also sent %q", sentTexts(stg.Sent()))
	}
}

func TestLiveStreamBrokenMidwayIsReplacedNotRepeated(t *testing.T) {
	h, stg := newLiveHarness(t, func(n int) []step {
		if n == 1 {
			return append(deltas("The first", " try"), step{err: llm.NewError("fakestream", llm.KindOverloaded, "overloaded")})
		}
		return answerSteps("Second answer.")
	}, nil)
	h.start()
	h.say(famChat, "Alice", "@Andy hi")
	h.idle()
	want := []string{"begin:The first", "update:The first try", "update:Second answer.", "finish:Second answer."}
	if got := kinds(stg.Events()); !slices.Equal(got, want) {
		t.Errorf("live events = %q\nwant %q", got, want)
	}
	if len(stg.Sent()) != 0 {
		t.Errorf("also sent %q: half an answer plus a second copy", sentTexts(stg.Sent()))
	}
}

func TestLiveModelFailureCancelsTheLiveAnswer(t *testing.T) {
	bad := func() step { return step{err: llm.NewError("fakestream", llm.KindAuth, "bad key")} }
	h, stg := newLiveHarness(t, func(n int) []step { return append(deltas("Half"), bad()) },
		func(o *Options) { o.Intake.MaxTries = 1 })
	h.start()
	h.say(famChat, "Alice", "@Andy hi")
	h.idle()
	want := []string{"begin:Half", "cancel:" + msgLiveFailed}
	if got := kinds(stg.Events()); !slices.Equal(got, want) {
		t.Errorf("live events = %q\nwant %q", got, want)
	}
	if open, _ := h.st.OpenLives(context.Background()); len(open) != 0 {
		t.Errorf("cancelled live answer still recorded open: %+v", open)
	}
}

func TestLiveCrashMidStreamIsInterruptedAndAnsweredOnce(t *testing.T) {
	gate := make(chan struct{}) // never opened: the model hangs until botd stops
	script := func(n int) []step {
		if n == 1 {
			return append(deltas("Partial"), step{gate: gate})
		}
		return answerSteps("Complete answer.")
	}
	h, stg := newLiveHarness(t, script, nil)
	h.start()
	h.say(famChat, "Alice", "@Andy explain")
	testwait.Until(t, "the live answer to begin", func() bool { return len(stg.EventsOf(chantest.LiveBegin)) == 1 })
	h.stop() // mid-stream, as a crash would leave it
	if open, _ := h.st.OpenLives(context.Background()); len(open) != 1 || open[0].Text != "Partial" {
		t.Fatalf("open live answers after the crash: %+v", open)
	}

	// The restarted daemon gets a fresh model; the channel is the same.
	h.a = New(h.options(func(o *Options) {
		o.LLM = &streamLLM{script: func(int) []step { return answerSteps("Complete answer.") }}
		o.Channels["telegram"] = stg
	}))
	h.start()
	h.idle()
	in := stg.EventsOf(chantest.LiveInterrupt)
	if len(in) != 1 || in[0].Text != "Partial" || !slices.Equal(in[0].IDs, []string{"live1"}) || in[0].Chat != famChat {
		t.Errorf("interrupted %+v, want live1 showing Partial", in)
	}
	n := 0
	for _, e := range stg.EventsOf(chantest.LiveFinish) {
		if e.Text == "Complete answer." {
			n++
		}
	}
	for _, m := range stg.Sent() {
		if m.Text == "Complete answer." {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the answer arrived %d times, want once (events %q, sent %q)", n, kinds(stg.Events()), sentTexts(stg.Sent()))
	}
	if open, _ := h.st.OpenLives(context.Background()); len(open) != 0 {
		t.Errorf("live answers still open: %+v", open)
	}
	if h.cursor("family") != h.lastSeq(famChat) {
		t.Error("cursor not advanced after the re-run")
	}
}

// gateTools is one tool, named name, whose calls block until gate closes.
type gateTools struct {
	name    string
	gate    chan struct{}
	started chan struct{}
}

func (g *gateTools) Tools() []llm.Tool {
	return []llm.Tool{{Name: g.name, Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (g *gateTools) Call(ctx context.Context, name string, args json.RawMessage) (*tools.Result, error) {
	g.started <- struct{}{}
	select {
	case <-g.gate:
		return tools.TextResult("page text"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gateTools) Close() error { return nil }

// waitTimer waits until a timer of clk is due at at.
func waitTimer(t *testing.T, clk *clock.Fake, at time.Time) {
	t.Helper()
	testwait.Until(t, "a timer due at "+at.String(), func() bool { return slices.ContainsFunc(clk.Waiting(), at.Equal) })
}

func TestLongToolCallKeepsTypingAndSaysSoOnce(t *testing.T) {
	for _, tc := range []struct {
		name             string
		streaming, whole bool
	}{{"live", true, false}, {"plain", false, false}, {"whole at finish", true, true}} {
		streaming := tc.streaming
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2025, 3, 1, 15, 0, 0, 0, time.UTC)
			clk := clock.NewFake(t0)
			gt := &gateTools{name: "fetch_url", gate: make(chan struct{}), started: make(chan struct{}, 2)}
			h, stg := newLiveHarness(t, func(n int) []step {
				if n == 1 {
					return toolSteps("", "c1", "fetch_url", `{"url":"https://example.com/rota"}`)
				}
				return answerSteps("The rota is on the page.")
			}, func(o *Options) {
				o.Time.Clock = clk
				o.ToolSource = func(ctx context.Context, g *groups.Group) (ToolSession, error) { return gt, nil }
				if !streaming {
					// The same fake, without Streamer.
					o.Channels["telegram"] = o.Channels["telegram"].(*chantest.Streaming).Channel
				} else {
					o.Channels["telegram"].(*chantest.Streaming).SetWholeAtFinish(tc.whole)
				}
			})
			h.start()
			h.say(famChat, "Alice", "@Andy what does the rota page https://example.com/rota say?")
			<-gt.started
			if !stg.Typing(famChat) {
				t.Error("typing not shown while the run works")
			}

			// Typing is renewed every 4 s while the tool runs.
			for i := 1; i <= 3; i++ {
				waitTimer(t, clk, clk.Now().Add(typingEvery))
				before := stg.TypingShown(famChat)
				clk.Advance(typingEvery)
				testwait.Until(t, "typing renewed", func() bool { return stg.TypingShown(famChat) > before })
			}
			if n := len(stg.Events()) + len(stg.Sent()); n != 0 {
				t.Fatalf("the chat heard something after 12 s: %q %q", kinds(stg.Events()), sentTexts(stg.Sent()))
			}
			// At 15 s the chat is told, once.
			waitTimer(t, clk, t0.Add(slowToolAfter))
			clk.Set(t0.Add(slowToolAfter))
			note := "Still working on it: reading the page…"
			said := func() int {
				n := 0
				for _, e := range stg.Events() {
					if e.Text == note {
						n++
					}
				}
				for _, m := range stg.Sent() {
					if m.Text == note {
						n++
					}
				}
				return n
			}
			testwait.Until(t, "the long-tool note", func() bool { return said() == 1 })
			clk.Advance(time.Minute)
			close(gt.gate)
			h.idle()
			if n := said(); n != 1 {
				t.Errorf("note said %d times", n)
			}
			if tc.whole {
				// The note is a message; the answer a live one of its own.
				if got := sentTexts(stg.Sent()); !slices.Equal(got, []string{note}) {
					t.Errorf("sent %q, want the note alone", got)
				}
				if f := stg.EventsOf(chantest.LiveFinish); len(f) != 1 || f[0].Text != "The rota is on the page." {
					t.Errorf("finished %+v", f)
				}
			} else if streaming {
				want := []string{"begin:" + note, "update:The rota is on the page.", "finish:The rota is on the page."}
				if got := kinds(stg.Events()); !slices.Equal(got, want) {
					t.Errorf("live events = %q\nwant %q", got, want)
				}
				if len(stg.Sent()) != 0 {
					t.Errorf("also sent %q", sentTexts(stg.Sent()))
				}
			} else if got := sentTexts(stg.Sent()); !slices.Equal(got, []string{note, "The rota is on the page."}) {
				t.Errorf("sent %q", got)
			}
			if stg.Typing(famChat) {
				t.Error("typing still on after the answer")
			}
		})
	}
}

var _ channels.Streamer = (*chantest.Streaming)(nil)

// The answer is in the outbox, the live message not finished yet (the
// network refused the edit), and botd stops: the restart marks what was
// shown as interrupted and the outbox sends the answer once.
func TestLiveCrashBeforeFinishSendsTheOutboxAnswerOnce(t *testing.T) {
	h, stg := newLiveHarness(t, func(n int) []step { return answerSteps("All ", "done.") },
		func(o *Options) { o.Intake.RetryDelay = func(int) time.Duration { return time.Hour } })
	stg.FailFinish(chantest.ErrBoom)
	h.start()
	h.say(famChat, "Alice", "@Andy status?")
	testwait.Until(t, "the first delivery to fail", func() bool {
		var attempts int
		h.st.DB.QueryRow(`SELECT COALESCE(MAX(attempts), 0) FROM agent_outbox`).Scan(&attempts)
		return attempts == 1
	})
	h.stop()
	pending, err := outboxdb.New(h.st).Pending(context.Background(), "family")
	if err != nil || len(pending) != 1 || !slices.Equal(pending[0].LiveIDs, []string{"live1"}) {
		t.Fatalf("pending outbox %+v, %v: want the answer naming its live message", pending, err)
	}
	stg.FailFinish(nil)
	h.a = New(h.options(func(o *Options) {
		o.LLM = &streamLLM{script: func(int) []step { return answerSteps("a second answer must not be made") }}
		o.Channels["telegram"] = stg
	}))
	h.start()
	h.idle()
	if in := stg.EventsOf(chantest.LiveInterrupt); len(in) != 1 || in[0].Text != "All done." {
		t.Errorf("interrupted %+v, want the live answer as shown", in)
	}
	if got := sentTexts(stg.Sent()); !slices.Equal(got, []string{"All done."}) {
		t.Errorf("sent %q, want the outbox's answer once", got)
	}
	if fin := stg.EventsOf(chantest.LiveFinish); len(fin) != 0 {
		t.Errorf("finished %q after the restart", kinds(fin))
	}
}

func TestVisibleSoFar(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{"Hello", "Hello", true},
		{"Hello <", "Hello", true},
		{"Hello <inter", "Hello", true},
		{"Hello <internal>plan", "Hello", true},
		{"Hello <Internal>plan</internal> world", "Hello  world", true},
		{"a\nMEDIA: x.png\nb", "a\nb", true},
		{"a\nMED", "a", true},
		{"a\nMEDIUM rare", "a\nMEDIUM rare", true},
		{"```\nMEDIA: kept in code\n```", "```\nMEDIA: kept in code\n```", true},
		{"Say [[audio_", "Say", true},
		{"Say [[audio_as_voice]] it", "", false},
		{"a\r\n\r\n\r\nb", "a\n\nb", true},
		// the text after a path quoted once shows, as the final answer keeps it
		{"a\nMEDIA: \"x.png\" the logo\nb", "a\nthe logo\nb", true},
		{"a\r\nMEDIA: 'x y.png' (notes)\r\nb", "a\n(notes)\nb", true},
		{"a\rMEDIA: \"x.png\"}\rb", "a\nb", true},
		// still being written, or where it ends needs the folder: held back
		{"a\nMEDIA: \"x.png\" the lo", "a", true},
		{"a\nMEDIA: x.png the logo\nb", "a\nb", true},
		{"a\nMEDIA: \"say \"hi\".png\" then\nb", "a\nb", true},
		{"a\nMEDIA: ./x.png\", \"caption\": \"c\"}\nb", "a\nb", true},
		{"a\nMEDIA", "a", true},
		{"a MEDIA: x.png", "a MEDIA: x.png", true},
	} {
		got, ok := visibleSoFar(tc.raw)
		if got != tc.want || ok != tc.ok {
			t.Errorf("visibleSoFar(%q) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// BenchmarkLiveDeltas is the agent's cost of relaying a 4 KB answer that
// arrives in 4-byte deltas: each delta recomputes what may be shown.
func BenchmarkLiveDeltas(b *testing.B) {
	para := strings.Repeat("The new rota starts on **Monday**; see [the sheet](https://example.com). ", 8) + "\n\n"
	answer := strings.Repeat(para, 4096/len(para)+1)[:4096]
	b.SetBytes(int64(len(answer)))
	for b.Loop() {
		var shown string
		var raw strings.Builder
		for i := 0; i < len(answer); i += 4 {
			raw.WriteString(answer[i:min(i+4, len(answer))])
			shown, _ = visibleSoFar(raw.String())
		}
		if len(shown) == 0 {
			b.Fatal("nothing shown")
		}
	}
}

// Stop from the chat (the web room's button) ends the run in flight: what
// was shown stays, marked stopped, nothing else is sent, and the question
// counts as answered (the next message does not bring it back).
func TestStopRunEndsTheLiveAnswer(t *testing.T) {
	gate := make(chan struct{}) // never opened: the model writes until stopped
	h, stg := newLiveHarness(t, func(n int) []step {
		if n == 1 {
			return append(deltas("Let me explain"), step{gate: gate})
		}
		return answerSteps("Hello again.")
	}, nil)
	if h.a.StopRun(famChat) {
		t.Fatal("StopRun stopped something before any run")
	}
	h.start()
	h.say(famChat, "Alice", "@Andy explain everything")
	testwait.Until(t, "the live answer to begin", func() bool { return len(stg.EventsOf(chantest.LiveBegin)) == 1 })
	if !h.a.StopRun(famChat) {
		t.Fatal("StopRun found no run going")
	}
	h.idle()
	want := []string{"begin:Let me explain", "cancel:" + msgLiveStopped}
	if got := kinds(stg.Events()); !slices.Equal(got, want) {
		t.Errorf("live events = %q\nwant %q", got, want)
	}
	if s := stg.Sent(); len(s) != 0 {
		t.Errorf("a stopped run sent %q", sentTexts(s))
	}
	if h.cursor("family") != h.lastSeq(famChat) {
		t.Error("the stopped question would be answered again")
	}
	if h.a.StopRun("telegram:-999") {
		t.Error("StopRun of an unknown chat stopped something")
	}
}
