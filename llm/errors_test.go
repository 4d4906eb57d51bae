package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
)

func TestKindForStatus(t *testing.T) {
	tests := []struct {
		status int
		want   llm.ErrorKind
	}{
		{429, llm.KindRateLimit}, {529, llm.KindOverloaded}, {503, llm.KindOverloaded},
		{500, llm.KindTransport}, {502, llm.KindTransport}, {408, llm.KindTimeout}, {504, llm.KindTimeout},
		{401, llm.KindAuth}, {403, llm.KindAuth}, {400, llm.KindBadRequest}, {404, llm.KindBadRequest},
		{302, llm.KindUnknown},
	}
	for _, tt := range tests {
		if got := llm.KindForStatus(tt.status); got != tt.want {
			t.Errorf("KindForStatus(%d) = %s, want %s", tt.status, got, tt.want)
		}
	}
	for _, k := range []llm.ErrorKind{llm.KindRateLimit, llm.KindOverloaded, llm.KindTimeout, llm.KindTransport} {
		if !k.Retryable() {
			t.Errorf("%s should be retryable", k)
		}
	}
	for _, k := range []llm.ErrorKind{llm.KindAuth, llm.KindBadRequest, llm.KindContentFilter, llm.KindCancelled, llm.KindUnknown} {
		if k.Retryable() {
			t.Errorf("%s should be fatal", k)
		}
	}
}

func TestErrorShape(t *testing.T) {
	cause := errors.New("root")
	e := &llm.Error{Kind: llm.KindRateLimit, Retryable: true, Status: 429, Code: "rate_limit_error", Provider: "anthropic", Message: "slow down", Err: cause}
	if got, want := e.Error(), "llm: anthropic: rate_limit (429 rate_limit_error): slow down"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("agent: %w", e)
	if !errors.Is(wrapped, cause) || llm.KindOf(wrapped) != llm.KindRateLimit || !llm.IsRetryable(wrapped) {
		t.Error("wrapping loses the classification")
	}
	if got := llm.FromTransport("x", context.Canceled); got.Kind != llm.KindCancelled || got.Retryable {
		t.Errorf("canceled → %+v", got)
	}
	if got := llm.FromTransport("x", context.DeadlineExceeded); got.Kind != llm.KindTimeout || !got.Retryable {
		t.Errorf("deadline → %+v", got)
	}
	if got := llm.FromTransport("x", errors.New("connection reset by peer")); got.Kind != llm.KindTransport || !got.Retryable {
		t.Errorf("reset → %+v", got)
	}
	if got := llm.AsError("x", errors.New("odd")); got.Kind != llm.KindTransport {
		t.Errorf("plain error → %+v", got)
	}
	if s := llm.Scrub("bad key sk-abcdef123 given", "sk-abcdef123"); strings.Contains(s, "sk-abcdef123") {
		t.Errorf("Scrub left the key: %s", s)
	}
	h := http.Header{}
	h.Set("Retry-After", "3")
	if d := llm.ParseRetryAfter(h); d != 3*time.Second {
		t.Errorf("Retry-After = %v", d)
	}
}

func TestPricing(t *testing.T) {
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000}
	tests := []struct {
		model string
		known bool
		cost  int64
	}{
		// $3 + $15 + $0.30 + $3.75 = $22.05 = 2_205_000_000 micro-cents.
		{"claude-sonnet-4-5", true, 2_205_000_000},
		{"claude-sonnet-4-5-20250929", true, 2_205_000_000},
		{"anthropic/claude-sonnet-4-5", true, 2_205_000_000},
		{"gpt-4.1-2025-04-14", true, 1_050_000_000},
		{"my-local-llama", false, 0},
	}
	for _, tt := range tests {
		got := u
		llm.DefaultPricing.Apply(tt.model, &got)
		if got.CostKnown != tt.known || got.CostMicrocents != tt.cost {
			t.Errorf("%s: cost = %d known=%v, want %d known=%v", tt.model, got.CostMicrocents, got.CostKnown, tt.cost, tt.known)
		}
	}
	// Sub-micro-cent totals round half up.
	small := llm.Usage{InputTokens: 1}
	llm.Pricing{"m": {Input: 500_000}}.Apply("m", &small)
	if small.CostMicrocents != 1 {
		t.Errorf("rounding: got %d", small.CostMicrocents)
	}
}
