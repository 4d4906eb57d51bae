package llm_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/llm/providers"
)

// Ping is one request for one token on each wire; a refused key is
// KindAuth, and the key is in no error text.
func TestPing(t *testing.T) {
	const good, bad = "key-good-not-real", "key-bad-not-real"
	srv := llmfake.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key") + r.Header.Get("x-goog-api-key") + r.URL.Query().Get("key")
		if a := r.Header.Get("Authorization"); a != "" {
			key = a[len("Bearer "):]
		}
		if key != good {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"invalid key","type":"authentication_error","code":401,"status":"UNAUTHENTICATED"}}`)
			return
		}
		llmfake.Write(w, llmfake.WireOf(r.URL.Path), llmfake.Reply{Text: "ok", OutputTokens: 1})
	}))
	for _, typ := range []string{"openai", "anthropic", "gemini"} {
		for _, tc := range []struct {
			key      string
			wantKind llm.ErrorKind
		}{{good, ""}, {bad, llm.KindAuth}} {
			t.Run(typ+"/"+cmp.Or(string(tc.wantKind), "ok"), func(t *testing.T) {
				p, err := providers.NewProvider(typ, "fake", tc.key, srv.URL, &http.Client{})
				if err != nil {
					t.Fatal(err)
				}
				before := len(srv.Requests())
				err = llm.Ping(context.Background(), p, "some-model")
				if k := llm.KindOf(err); k != tc.wantKind {
					t.Fatalf("Ping: %v (kind %q), want kind %q", err, k, tc.wantKind)
				}
				if err != nil && strings.Contains(err.Error(), tc.key) {
					t.Errorf("the key is in %q", err)
				}
				reqs := srv.Requests()[before:]
				if len(reqs) != 1 {
					t.Fatalf("%d requests, want 1", len(reqs))
				}
				if n := maxTokens(t, reqs[0].Body); n != 1 {
					t.Errorf("asked for %d tokens, want 1: %s", n, reqs[0].Body)
				}
			})
		}
	}
}

// maxTokens reads the token cap of a request on any of the three wires.
func maxTokens(t *testing.T, body []byte) int {
	t.Helper()
	var b struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
		GenerationConfig    struct {
			MaxOutputTokens int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return b.MaxTokens + b.MaxCompletionTokens + b.GenerationConfig.MaxOutputTokens
}
