package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

func TestNewProvider(t *testing.T) {
	tests := []struct {
		typ, name, wantName string
		wantErr             bool
	}{
		{"anthropic", "", "anthropic", false},
		{"openai", "deepseek", "deepseek", false},
		{"gemini", "google", "google", false},
		{"cohere", "x", "", true},
	}
	for _, tt := range tests {
		p, err := providers.NewProvider(tt.typ, tt.name, "k", "", nil)
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), tt.typ) {
				t.Errorf("%s: err = %v, want an error naming the type", tt.typ, err)
			}
			continue
		}
		if err != nil || p.Name() != tt.wantName {
			t.Errorf("%s: p = %v, err = %v", tt.typ, p, err)
		}
	}
}

// fixture serves a recorded response from an adapter's testdata.
func fixture(t *testing.T, adapter, name string) http.Handler {
	t.Helper()
	return llmtest.LoadFixture(t, filepath.Join("..", adapter, "testdata", name+".http")).Handler()
}

type recorder struct{ attempts []llm.Attempt }

func (r *recorder) opts() []llm.ChainOption {
	return []llm.ChainOption{
		llm.WithObserver(func(a llm.Attempt) { r.attempts = append(r.attempts, a) }),
		llm.WithSleep(func(ctx context.Context, d time.Duration) error { return ctx.Err() }),
		llm.WithLogger(slog.New(slog.DiscardHandler)),
	}
}

// End to end over the real adapters: Anthropic answers 429, the chain
// backs off and OpenAI (as DeepSeek) answers; the history's Anthropic
// thinking never reaches DeepSeek.
func TestChainFailoverOverHTTP(t *testing.T) {
	anth := llmtest.NewServer(t, fixture(t, "anthropic", "error_rate_limit"))
	deep := llmtest.NewServer(t, fixture(t, "openai", "text"))
	a, _ := providers.NewProvider("anthropic", "", llmtest.APIKey, anth.URL, anth.Client())
	d, _ := providers.NewProvider("openai", "deepseek", llmtest.APIKey, deep.URL+"/v1", deep.Client())
	var rec recorder
	var slept []time.Duration
	opts := append(rec.opts(), llm.WithSleep(func(ctx context.Context, dd time.Duration) error { slept = append(slept, dd); return nil }))
	c, err := llm.NewChain([]llm.Entry{
		{Provider: a, Model: "claude-sonnet-4-5"},
		{Provider: d, Model: "deepseek-chat"},
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	req := llmtest.CanonicalRequest(t, "", t.TempDir())
	res, err := c.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "It is sunny in Paris." {
		t.Errorf("text = %q", res.Text())
	}
	if len(rec.attempts) != 2 || rec.attempts[0].Outcome != llm.OutcomeFailed || rec.attempts[0].Err.Kind != llm.KindRateLimit ||
		rec.attempts[1].Outcome != llm.OutcomeSucceeded || rec.attempts[1].Provider != "deepseek" {
		t.Fatalf("attempts = %+v", rec.attempts)
	}
	if len(slept) != 1 {
		t.Errorf("backoff sleeps = %v, want one", slept)
	}
	if got := rec.attempts[1].Usage; !got.CostKnown || got.InputTokens != 25 {
		t.Errorf("usage = %+v, want priced deepseek-chat usage", got)
	}
	if !strings.Contains(string(anth.Last(t).Body), `"thinking"`) {
		t.Error("primary should get its own thinking back")
	}
	var body map[string]any
	if err := json.Unmarshal(deep.Last(t).Body, &body); err != nil {
		t.Fatal(err)
	}
	if raw := string(deep.Last(t).Body); strings.Contains(raw, "reasoning_content") || strings.Contains(raw, "sig-abc123") {
		t.Errorf("reasoning crossed to another provider: %s", raw)
	}

	// The next call skips the cooling Anthropic entry.
	rec.attempts = nil
	if _, err := c.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if len(rec.attempts) != 2 || rec.attempts[0].Outcome != llm.OutcomeSkipped || len(anth.Requests()) != 1 {
		t.Errorf("attempts = %+v, anthropic requests = %d", rec.attempts, len(anth.Requests()))
	}
}

func TestChainStopsOn401OverHTTP(t *testing.T) {
	anth := llmtest.NewServer(t, fixture(t, "anthropic", "error_auth"))
	gem := llmtest.NewServer(t, fixture(t, "gemini", "text"))
	a, _ := providers.NewProvider("anthropic", "", llmtest.APIKey, anth.URL, anth.Client())
	g, _ := providers.NewProvider("gemini", "", llmtest.APIKey, gem.URL, gem.Client())
	var rec recorder
	c, _ := llm.NewChain([]llm.Entry{{Provider: a, MaxAttempts: 3}, {Provider: g, Model: "gemini-2.5-flash"}}, rec.opts()...)
	_, err := c.Generate(t.Context(), llmtest.SimpleRequest("claude-sonnet-4-5")())
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindAuth || e.Provider != "anthropic" {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), llmtest.APIKey) {
		t.Error("key in error")
	}
	if len(anth.Requests()) != 1 || len(gem.Requests()) != 0 || len(rec.attempts) != 1 {
		t.Errorf("anthropic %d, gemini %d requests, attempts %+v", len(anth.Requests()), len(gem.Requests()), rec.attempts)
	}
}

func TestChainStreamNoFailoverAfterTextOverHTTP(t *testing.T) {
	anth := llmtest.NewServer(t, fixture(t, "anthropic", "mid_stream_error"))
	oai := llmtest.NewServer(t, fixture(t, "openai", "text"))
	a, _ := providers.NewProvider("anthropic", "", llmtest.APIKey, anth.URL, anth.Client())
	o, _ := providers.NewProvider("openai", "", llmtest.APIKey, oai.URL+"/v1", oai.Client())
	var rec recorder
	c, _ := llm.NewChain([]llm.Entry{{Provider: a}, {Provider: o, Model: "gpt-4.1"}}, rec.opts()...)
	s, err := c.Stream(t.Context(), llmtest.SimpleRequest("claude-sonnet-4-5")())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text string
	for {
		ch, err := s.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("stream ended cleanly, want the overloaded error")
		}
		if err != nil {
			if llm.KindOf(err) != llm.KindOverloaded {
				t.Fatalf("err = %v", err)
			}
			break
		}
		text += ch.Text
	}
	if text != "It is" || len(oai.Requests()) != 0 {
		t.Errorf("text %q, openai requests %d", text, len(oai.Requests()))
	}
}
