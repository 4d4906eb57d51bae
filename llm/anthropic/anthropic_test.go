package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/anthropic"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

const model = "claude-sonnet-4-5"

func newProvider(baseURL string) llm.Provider {
	return anthropic.New(llmtest.APIKey, baseURL, http.DefaultClient)
}

func TestFixtures(t *testing.T) {
	llmtest.RunFixtures(t, newProvider, llmtest.SimpleRequest(model))
}

func TestWireRequest(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/text.http").Handler())
	p := newProvider(srv.URL)
	req := llmtest.CanonicalRequest(t, model, t.TempDir())
	req.ReasoningBudget = 2048
	if _, err := p.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Last(t)
	if got.Method != http.MethodPost || got.Path != "/v1/messages" {
		t.Errorf("request line = %s %s", got.Method, got.Path)
	}
	for h, want := range map[string]string{"X-Api-Key": llmtest.APIKey, "Anthropic-Version": anthropic.APIVersion, "Content-Type": "application/json"} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("header %s = %q, want %q", h, v, want)
		}
	}
	llmtest.Golden(t, "testdata/request.golden.json", llmtest.Indent(t, got.Body))
}

// The stream machinery is shared by all adapters, so its timing behaviour is
// exercised once, here.
func TestStreamStallsAndCancellation(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	tests := []struct {
		name   string
		cancel bool
		want   llm.ErrorKind
		retry  bool
	}{
		{"idle stream times out", false, llm.KindTimeout, true},
		{"caller cancels", true, llm.KindCancelled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, http.HandlerFunc(stall))
			p := anthropic.New(llmtest.APIKey, srv.URL, srv.Client(), providers.WithIdleTimeout(50*time.Millisecond))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				p = anthropic.New(llmtest.APIKey, srv.URL, srv.Client(), providers.WithIdleTimeout(time.Minute))
				time.AfterFunc(30*time.Millisecond, cancel)
			}
			start := time.Now()
			_, err := p.Generate(ctx, llmtest.SimpleRequest(model)())
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *llm.Error", err)
			}
			if e.Kind != tt.want || e.Retryable != tt.retry || e.Provider != "anthropic" {
				t.Errorf("err = %+v, want kind %s retryable %v", e, tt.want, tt.retry)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestMissingMediaFileIsBadRequest(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/text.http").Handler())
	p := newProvider(srv.URL)
	req := llmtest.SimpleRequest(model)()
	req.Messages[0].Parts = append(req.Messages[0].Parts, llm.ImageFile("image/png", "/nonexistent/x.png"))
	_, err := p.Stream(t.Context(), req)
	if llm.KindOf(err) != llm.KindBadRequest {
		t.Fatalf("err = %v, want bad_request", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server got %d requests, want none", n)
	}
}
