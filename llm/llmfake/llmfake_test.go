package llmfake_test

import (
	"context"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/llm/providers"
)

// The fake is only worth something if the real adapters understand it:
// each wire, text and tool call, through Generate (which streams).
func TestAdaptersUnderstandTheFake(t *testing.T) {
	srv := llmfake.New(t, func(r llmfake.Request) llmfake.Reply {
		if strings.Contains(string(r.Body), "weather") {
			return llmfake.Reply{Tool: "get_weather", Args: `{"city":"Paris"}`, InputTokens: 42, OutputTokens: 7}
		}
		return llmfake.Reply{Text: "Hello from " + string(llmfake.WireOf(r.Path)), InputTokens: 42, OutputTokens: 7}
	})
	cases := []struct {
		typ, base string
		wire      llmfake.Wire
	}{
		{"openai", srv.URL + "/v1", llmfake.OpenAI},
		{"anthropic", srv.URL, llmfake.Anthropic},
		{"gemini", srv.URL, llmfake.Gemini},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			p, err := providers.NewProvider(tc.typ, "", "test-key", tc.base, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			res, err := p.Generate(ctx, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != "Hello from "+string(tc.wire) || res.StopReason != llm.StopEnd {
				t.Errorf("text %q stop %s", got, res.StopReason)
			}
			if res.Usage.InputTokens+res.Usage.CacheReadTokens+res.Usage.CacheWriteTokens != 42 || res.Usage.OutputTokens != 7 {
				t.Errorf("usage %+v, want 42 in, 7 out", res.Usage)
			}
			res, err = p.Generate(ctx, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("the weather?")},
				Tools: []llm.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}})
			if err != nil {
				t.Fatal(err)
			}
			calls := res.ToolCalls()
			if len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Args) != `{"city":"Paris"}` {
				t.Errorf("tool calls %+v", calls)
			}
			last := srv.Last(t)
			if llmfake.WireOf(last.Path) != tc.wire || !strings.Contains(string(last.Body), "the weather?") {
				t.Errorf("last request %s %s", last.Path, last.Body)
			}
		})
	}
}

// Another endpoint goes to the test's own handler; an unknown one is a 404.
func TestHandleAndQueue(t *testing.T) {
	srv := llmfake.New(t, nil)
	srv.Handle(func(p string) bool { return strings.HasSuffix(p, "/audio/speech") },
		llmfake.Queue(llmfake.Answer{Status: 200, ContentType: "audio/ogg", Body: "OggS"}))
	for _, tc := range []struct {
		path   string
		status int
	}{{"/v1/audio/speech", 200}, {"/v1/audio/speech", 500}, {"/v1/nowhere", 404}} {
		resp, err := srv.Client().Post(srv.URL+tc.path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
	}
	if n := len(srv.ByPath("POST", "/v1/audio/speech")); n != 2 {
		t.Errorf("recorded %d speech requests, want 2", n)
	}
}

// On the Anthropic wire a reply can search the deferred tools first, as
// a model with native tool search does; the adapter reads the search as
// vendor parts and the tools found.
func TestFakeToolSearch(t *testing.T) {
	srv := llmfake.New(t, func(r llmfake.Request) llmfake.Reply {
		return llmfake.Reply{Found: []string{"get_weather"}, Tool: "get_weather", Args: `{"city":"Paris"}`}
	})
	p, err := providers.NewProvider("anthropic", "", "test-key", srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Generate(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("the weather?")},
		Tools: []llm.Tool{{Name: "remember"}}, Deferred: []llm.Tool{{Name: "get_weather"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Loaded) != 1 || res.Loaded[0] != "get_weather" || len(res.Parts) != 3 || res.Parts[0].Kind != llm.PartVendor {
		t.Errorf("result %+v", res)
	}
	if calls := res.ToolCalls(); len(calls) != 1 || calls[0].Name != "get_weather" {
		t.Errorf("calls %+v", calls)
	}
}
