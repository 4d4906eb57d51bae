package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
)

// harness collects what a chain reports and stands in for time.
type harness struct {
	mu       sync.Mutex
	attempts []llm.Attempt
	sleeps   []time.Duration
	now      time.Time
}

func newHarness() *harness { return &harness{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (h *harness) opts() []llm.ChainOption {
	return []llm.ChainOption{
		llm.WithObserver(func(a llm.Attempt) { h.mu.Lock(); h.attempts = append(h.attempts, a); h.mu.Unlock() }),
		llm.WithSleep(func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
			return ctx.Err()
		}),
		llm.WithClock(func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now }),
		llm.WithJitter(func() float64 { return 0 }),
		llm.WithCooldown(time.Minute),
		llm.WithLogger(slog.New(slog.DiscardHandler)),
	}
}

func (h *harness) advance(d time.Duration) { h.mu.Lock(); h.now = h.now.Add(d); h.mu.Unlock() }

// summary renders attempts as "provider:outcome[:kind]" for compact checks.
func (h *harness) summary() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, a := range h.attempts {
		s := a.Provider + ":" + string(a.Outcome)
		if a.Err != nil {
			s += ":" + string(a.Err.Kind)
		}
		out = append(out, s)
	}
	h.attempts = nil
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func newChain(t *testing.T, h *harness, entries ...llm.Entry) *llm.Chain {
	t.Helper()
	c, err := llm.NewChain(entries, h.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var priced = llm.Usage{InputTokens: 100, OutputTokens: 10, CostMicrocents: 1234, CostKnown: true}

func TestChainGenerate(t *testing.T) {
	tests := []struct {
		name      string
		a, b      []step
		maxA      int
		wantErr   llm.ErrorKind
		want      []string
		wantSleep []time.Duration
		wantBCall int
	}{
		{
			name:      "429 backs off then the next provider succeeds",
			a:         []step{{openErr: httpErr("a", 429, "rate_limit_error")}},
			b:         []step{{chunks: textReply("from b", priced)}},
			want:      []string{"a:failed:rate_limit", "b:succeeded"},
			wantSleep: []time.Duration{50 * time.Millisecond},
			wantBCall: 1,
		},
		{
			name:      "retryable errors exhaust the entry with growing backoff",
			maxA:      3,
			a:         []step{{openErr: httpErr("a", 503, "")}, {openErr: httpErr("a", 500, "")}, {chunks: textReply("a at last", priced)}},
			want:      []string{"a:failed:overloaded", "a:failed:transport", "a:succeeded"},
			wantSleep: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
		},
		{
			name:    "401 stops at once",
			a:       []step{{openErr: httpErr("a", 401, "authentication_error")}},
			b:       []step{{chunks: textReply("never", priced)}},
			want:    []string{"a:failed:auth"},
			wantErr: llm.KindAuth,
		},
		{
			name:    "exhausted quota is fatal",
			a:       []step{{openErr: &llm.Error{Kind: llm.KindRateLimit, Retryable: false, Status: 429, Code: "insufficient_quota", Provider: "a"}}},
			b:       []step{{chunks: textReply("never", priced)}},
			want:    []string{"a:failed:rate_limit"},
			wantErr: llm.KindRateLimit,
		},
		{
			name:      "every entry failing returns the last error",
			a:         []step{{openErr: httpErr("a", 504, "")}},
			b:         []step{{openErr: httpErr("b", 502, "")}},
			want:      []string{"a:failed:timeout", "b:failed:transport"},
			wantErr:   llm.KindTransport,
			wantSleep: []time.Duration{50 * time.Millisecond},
			wantBCall: 1,
		},
		{
			name:      "mid-stream error inside Generate fails over",
			a:         []step{{chunks: []llm.Chunk{{Kind: llm.ChunkText, Text: "par"}}, midErr: llm.NewError("a", llm.KindOverloaded, "Overloaded")}},
			b:         []step{{chunks: textReply("whole", priced)}},
			want:      []string{"a:failed:overloaded", "b:succeeded"},
			wantSleep: []time.Duration{50 * time.Millisecond},
			wantBCall: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness()
			a, b := newFake("a", tt.a...), newFake("b", tt.b...)
			backoff := llm.Backoff{Base: 100 * time.Millisecond, Max: time.Second}
			c := newChain(t, h, llm.Entry{Provider: a, Model: "model-a", MaxAttempts: tt.maxA, Backoff: backoff}, llm.Entry{Provider: b, Model: "model-b", Backoff: backoff})
			res, err := c.Generate(t.Context(), &llm.Request{Model: "ignored", Messages: []llm.Message{llm.UserText("hi")}})
			if tt.wantErr != "" {
				if llm.KindOf(err) != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res.Usage != priced {
				t.Errorf("usage = %+v", res.Usage)
			}
			if got := h.summary(); !equal(got, tt.want) {
				t.Errorf("attempts = %v, want %v", got, tt.want)
			}
			if !equalDur(h.sleeps, tt.wantSleep) {
				t.Errorf("sleeps = %v, want %v", h.sleeps, tt.wantSleep)
			}
			if got := b.calls(); got != tt.wantBCall {
				t.Errorf("b called %d times, want %d", got, tt.wantBCall)
			}
		})
	}
}

func equalDur(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestChainReportsModelAndCost(t *testing.T) {
	h := newHarness()
	a := newFake("a", step{openErr: httpErr("a", 429, "")})
	b := newFake("b", step{chunks: textReply("ok", priced)})
	c := newChain(t, h, llm.Entry{Provider: a, Model: "model-a"}, llm.Entry{Provider: b, Model: "model-b"})
	if _, err := c.Generate(t.Context(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}); err != nil {
		t.Fatal(err)
	}
	if len(h.attempts) != 2 {
		t.Fatalf("attempts = %+v", h.attempts)
	}
	fail, ok := h.attempts[0], h.attempts[1]
	if fail.Model != "model-a" || fail.Err == nil || fail.Err.Status != 429 || fail.Usage.CostKnown {
		t.Errorf("failed attempt = %+v", fail)
	}
	if ok.Model != "model-b" || ok.Usage.CostMicrocents != 1234 || !ok.Usage.CostKnown || ok.Entry != 1 || ok.Try != 1 {
		t.Errorf("succeeded attempt = %+v", ok)
	}
	if b.reqs[0].Model != "model-b" || a.reqs[0].Model != "model-a" {
		t.Errorf("models sent: a=%s b=%s", a.reqs[0].Model, b.reqs[0].Model)
	}
}

func TestChainCooldown(t *testing.T) {
	h := newHarness()
	a := newFake("a",
		step{openErr: &llm.Error{Kind: llm.KindRateLimit, Retryable: true, Status: 429, Provider: "a", RetryAfter: 90 * time.Second}},
		step{chunks: textReply("a is back", priced)})
	b := newFake("b", step{chunks: textReply("b1", priced)}, step{chunks: textReply("b2", priced)})
	c := newChain(t, h, llm.Entry{Provider: a}, llm.Entry{Provider: b})
	req := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}

	mustText := func(want string) {
		t.Helper()
		res, err := c.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() != want {
			t.Fatalf("text = %q, want %q", res.Text(), want)
		}
	}
	mustText("b1")
	if got, want := h.summary(), []string{"a:failed:rate_limit", "b:succeeded"}; !equal(got, want) {
		t.Fatalf("first call = %v, want %v", got, want)
	}
	// Retry-After (90s) outlasts the configured one-minute cooldown.
	h.advance(80 * time.Second)
	mustText("b2")
	if got, want := h.summary(), []string{"a:skipped", "b:succeeded"}; !equal(got, want) {
		t.Fatalf("call during cooldown = %v, want %v", got, want)
	}
	h.advance(11 * time.Second)
	mustText("a is back")
	if got, want := h.summary(), []string{"a:succeeded"}; !equal(got, want) {
		t.Fatalf("call after cooldown = %v, want %v", got, want)
	}
}

func TestChainAllCoolingStillTries(t *testing.T) {
	h := newHarness()
	a := newFake("a", step{openErr: httpErr("a", 429, "")}, step{chunks: textReply("a ok", priced)})
	c := newChain(t, h, llm.Entry{Provider: a})
	req := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	if _, err := c.Generate(t.Context(), req); llm.KindOf(err) != llm.KindRateLimit {
		t.Fatalf("err = %v", err)
	}
	res, err := c.Generate(t.Context(), req)
	if err != nil || res.Text() != "a ok" {
		t.Fatalf("res = %v, err = %v", res, err)
	}
	if got, want := h.summary(), []string{"a:failed:rate_limit", "a:skipped", "a:succeeded"}; !equal(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
}

func TestChainCancelledDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	a := newFake("a", step{openErr: httpErr("a", 503, "")}, step{chunks: textReply("never", priced)})
	c, err := llm.NewChain([]llm.Entry{{Provider: a, MaxAttempts: 2, Backoff: llm.Backoff{Base: time.Hour, Max: time.Hour}}},
		llm.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = c.Generate(ctx, &llm.Request{Messages: []llm.Message{llm.UserText("hi")}})
	if llm.KindOf(err) != llm.KindCancelled {
		t.Fatalf("err = %v, want cancelled", err)
	}
	if a.calls() != 1 {
		t.Errorf("a called %d times", a.calls())
	}
}

func drain(t *testing.T, s llm.Stream) (string, error) {
	t.Helper()
	defer s.Close()
	var text string
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return text, nil
		}
		if err != nil {
			return text, err
		}
		text += c.Text
	}
}

func TestChainStream(t *testing.T) {
	overloaded := llm.NewError("a", llm.KindOverloaded, "Overloaded")
	tests := []struct {
		name     string
		a        []step
		wantText string
		wantErr  llm.ErrorKind
		want     []string
		bCalls   int
	}{
		{
			name:     "no failover after the first streamed text",
			a:        []step{{chunks: []llm.Chunk{{Kind: llm.ChunkText, Text: "It is"}}, midErr: overloaded}},
			wantText: "It is",
			wantErr:  llm.KindOverloaded,
			want:     []string{"a:failed:overloaded"},
		},
		{
			name:     "error before any content fails over",
			a:        []step{{midErr: overloaded}},
			wantText: "from b",
			want:     []string{"a:failed:overloaded", "b:succeeded"},
			bCalls:   1,
		},
		{
			name:     "open error fails over",
			a:        []step{{openErr: httpErr("a", 429, "")}},
			wantText: "from b",
			want:     []string{"a:failed:rate_limit", "b:succeeded"},
			bCalls:   1,
		},
		{
			name:     "success on the first entry",
			a:        []step{{chunks: textReply("from a", priced)}},
			wantText: "from a",
			want:     []string{"a:succeeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness()
			a, b := newFake("a", tt.a...), newFake("b", step{chunks: textReply("from b", priced)})
			c := newChain(t, h, llm.Entry{Provider: a}, llm.Entry{Provider: b})
			s, err := c.Stream(t.Context(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			text, err := drain(t, s)
			if text != tt.wantText {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if llm.KindOf(err) != tt.wantErr {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if got := h.summary(); !equal(got, tt.want) {
				t.Errorf("attempts = %v, want %v", got, tt.want)
			}
			if b.calls() != tt.bCalls {
				t.Errorf("b called %d times, want %d", b.calls(), tt.bCalls)
			}
		})
	}
}

func TestChainStripsReasoningAcrossProviders(t *testing.T) {
	h := newHarness()
	a := newFake("anthropic", step{openErr: httpErr("anthropic", 529, "overloaded_error")})
	a2 := newFake("anthropic", step{openErr: httpErr("anthropic", 529, "overloaded_error")})
	b := newFake("openai", step{chunks: textReply("ok", priced)})
	c := newChain(t, h, llm.Entry{Provider: a}, llm.Entry{Provider: a2, Model: "claude-haiku-4-5"}, llm.Entry{Provider: b})
	call := llm.ToolCallPart("c1", "f", nil)
	call.ToolCall.Signature = "call-sig"
	req := &llm.Request{Messages: []llm.Message{
		llm.UserText("q"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Reasoning("think", "sig"), {Kind: llm.PartReasoning, Signature: "enc", Redacted: true},
			{Kind: llm.PartVendor, Vendor: "anthropic", Raw: json.RawMessage(`{"type":"server_tool_use","id":"s1"}`)}, call}},
		llm.ToolResults(llm.ToolResultPart("c1", false, llm.Text("r"))),
	}}
	if _, err := c.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	countReasoning := func(r *llm.Request) (n int, sigs int) {
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if p.Kind == llm.PartReasoning || p.Kind == llm.PartVendor {
					n++
				}
				if p.ToolCall != nil && p.ToolCall.Signature != "" {
					sigs++
				}
			}
		}
		return n, sigs
	}
	if n, s := countReasoning(a.reqs[0]); n != 3 || s != 1 {
		t.Errorf("primary got %d reasoning and vendor parts, %d call signatures; want them kept", n, s)
	}
	if n, s := countReasoning(a2.reqs[0]); n != 3 || s != 1 {
		t.Errorf("same provider, other model got %d reasoning and vendor parts, %d signatures; want them kept", n, s)
	}
	if n, s := countReasoning(b.reqs[0]); n != 0 || s != 0 {
		t.Errorf("other provider got %d reasoning and vendor parts, %d signatures; want none", n, s)
	}
	if n, _ := countReasoning(req); n != 3 || req.Messages[1].Parts[3].ToolCall.Signature != "call-sig" {
		t.Error("the caller's request was modified")
	}
}

func TestChainCapabilitiesAreTheFirstModels(t *testing.T) {
	a, b := newFake("a"), newFake("b")
	b.caps.Vision = false
	c, err := llm.NewChain([]llm.Entry{{Provider: a}, {Provider: b}})
	if err != nil {
		t.Fatal(err)
	}
	if caps := c.Capabilities(); !caps.Vision || !caps.Tools {
		t.Errorf("caps = %+v, want the first entry's", caps)
	}
	textOnly := llm.Capabilities{Tools: true}
	c, _ = llm.NewChain([]llm.Entry{{Provider: a, Caps: &textOnly}, {Provider: b}})
	if caps := c.Capabilities(); caps.Vision {
		t.Errorf("caps = %+v, want the entry's override", caps)
	}
	if c.Name() != "chain(a,b)" {
		t.Errorf("name = %s", c.Name())
	}
	if _, err := llm.NewChain(nil); err == nil {
		t.Error("empty chain accepted")
	}
}

// A model that cannot take a request is skipped for it, not failed: an
// image never reaches a text-only fallback, a text request still does.
func TestChainSkipsAModelThatCannotTakeTheRequest(t *testing.T) {
	textOnly := llm.Capabilities{Tools: true, Streaming: true}
	image := &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.Text("what is this?"), llm.ImageFile("image/png", "/x.png")}}}}
	text := &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hello")}}
	cases := []struct {
		name     string
		req      *llm.Request
		aText    bool // a is the text-only one (else b)
		a, b     []step
		want     []string
		wantErr  llm.ErrorKind
		wantText string
	}{
		{"image: the text-only fallback is skipped", image, false,
			[]step{{openErr: httpErr("a", 503, "")}}, nil,
			[]string{"a:failed:overloaded", "b:skipped"}, llm.KindOverloaded, ""},
		{"text: the text-only fallback answers", text, false,
			[]step{{openErr: httpErr("a", 503, "")}}, []step{{chunks: textReply("from b", priced)}},
			[]string{"a:failed:overloaded", "b:succeeded"}, "", "from b"},
		{"image: a text-only first model is skipped for the fallback", image, true,
			nil, []step{{chunks: textReply("b sees it", priced)}},
			[]string{"a:skipped", "b:succeeded"}, "", "b sees it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness()
			a, b := newFake("a", tc.a...), newFake("b", tc.b...)
			ea, eb := llm.Entry{Provider: a}, llm.Entry{Provider: b}
			if tc.aText {
				ea.Caps = &textOnly
			} else {
				eb.Caps = &textOnly
			}
			res, err := newChain(t, h, ea, eb).Generate(context.Background(), tc.req)
			if got := h.summary(); !equal(got, tc.want) {
				t.Errorf("attempts = %v, want %v", got, tc.want)
			}
			switch {
			case tc.wantErr != "":
				if llm.KindOf(err) != tc.wantErr {
					t.Errorf("err = %v, want %s", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			case res.Text() != tc.wantText:
				t.Errorf("text = %q, want %q", res.Text(), tc.wantText)
			}
		})
	}
	// Nobody can take it: a clear, fatal error naming what is missing.
	h := newHarness()
	_, err := newChain(t, h, llm.Entry{Provider: newFake("a"), Caps: &textOnly, Model: "deepseek-chat"}).Generate(context.Background(), image)
	if llm.KindOf(err) != llm.KindBadRequest || !strings.Contains(err.Error(), "deepseek-chat cannot take images") {
		t.Errorf("err = %v, want a bad request naming the model and images", err)
	}
}

func TestModelCapabilities(t *testing.T) {
	adapter := llm.Capabilities{Tools: true, Streaming: true, Vision: true, Documents: true}
	cases := []struct {
		model                      string
		vision, docs, audio, video bool
	}{
		{"claude-sonnet-4-5", true, true, false, false},
		{"deepseek-chat", false, false, false, false},
		{"openrouter/deepseek/deepseek-r1", false, false, false, false},
		{"gpt-4.1-mini", true, true, false, false},
		{"gpt-3.5-turbo", false, false, false, false},
		{"gemini-2.5-flash", true, true, true, true},
		{"llama3.1:8b", false, false, false, false},
		{"some-new-model", true, true, false, false},
	}
	for _, tc := range cases {
		c := llm.ModelCapabilities(tc.model, adapter)
		if c.Vision != tc.vision || c.Documents != tc.docs || c.Audio != tc.audio || c.Video != tc.video || !c.Tools {
			t.Errorf("%s: %+v", tc.model, c)
		}
	}
}

// searcher is a provider with native tool search for one model.
type searcher struct{ *fakeProvider }

func (searcher) ToolSearch(model string) bool { return model == "searching-model" }

// CapabilitiesOf adds native tool search where the adapter has it for
// the model, on top of the known-model table.
func TestCapabilitiesOf(t *testing.T) {
	plain := newFake("openai")
	s := searcher{newFake("anthropic")}
	for _, tc := range []struct {
		p      llm.Provider
		model  string
		search bool
		vision bool
	}{
		{plain, "searching-model", false, true},
		{plain, "deepseek-chat", false, false},
		{s, "searching-model", true, true},
		{s, "other-model", false, true},
	} {
		c := llm.CapabilitiesOf(tc.p, tc.model)
		if c.ToolSearch != tc.search || c.Vision != tc.vision || !c.Tools {
			t.Errorf("%s %s: %+v", tc.p.Name(), tc.model, c)
		}
	}
}
