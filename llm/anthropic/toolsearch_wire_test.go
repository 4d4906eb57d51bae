package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/providers"
)

// fixtures answers the n-th request with the n-th fixture file.
func fixtures(t *testing.T, files ...string) http.HandlerFunc {
	t.Helper()
	var hs []http.HandlerFunc
	for _, f := range files {
		hs = append(hs, llmtest.LoadFixture(t, f).Handler())
	}
	var mu sync.Mutex
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if len(hs) == 0 {
			mu.Unlock()
			http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no fixture left"}}`, http.StatusInternalServerError)
			return
		}
		h := hs[0]
		hs = hs[1:]
		mu.Unlock()
		h(w, r)
	}
}

func tool(name, desc string) llm.Tool {
	return llm.Tool{Name: name, Description: desc, Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`)}
}

// lazyRequest is the first turn of a run with tools offered lazily, as
// the agent builds it: core tools and load_tools, the rest deferred.
func lazyRequest(model string) *llm.Request {
	return &llm.Request{
		Model:    model,
		System:   "You are Andy.",
		Tools:    []llm.Tool{tool("remember", "Remember a fact."), tool(llm.LoadTools, "Load tools: get_weather, get_forecast, get_time.")},
		Deferred: []llm.Tool{tool("get_weather", "Current weather at a place."), tool("get_forecast", "Forecast for a place."), tool("get_time", "Local time at a place.")},
		Messages: []llm.Message{llm.UserText("What's the weather in Paris?")},
	}
}

type wireBody struct {
	Tools    json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
}

func decodeBody(t *testing.T, b []byte) wireBody {
	t.Helper()
	var w wireBody
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("body: %v\n%s", err, b)
	}
	return w
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A run on a model with tool search: the first request offers the core
// tools, the search tool and every deferred tool with defer_loading
// (load_tools left out, no beta header); the reply's search blocks
// become vendor parts, the tools found Result.Loaded, and the text and
// the call of a found tool come through as usual. The next request
// sends those blocks back verbatim, with the very same tools, although
// the agent appended the loaded tools to Tools.
func TestToolSearchRun(t *testing.T) {
	srv := llmtest.NewServer(t, fixtures(t, "testdata/tool_search.http", "testdata/text.http"))
	p := newProvider(srv.URL)
	req := lazyRequest(model)

	res, err := p.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	first := srv.Last(t)
	if v := first.Header.Get("Anthropic-Beta"); v != "" {
		t.Errorf("anthropic-beta %q, want none: tool search is generally available", v)
	}
	if !slices.Equal(res.Loaded, []string{"get_weather", "get_forecast"}) {
		t.Errorf("loaded %q", res.Loaded)
	}
	if got := res.Text(); got != "Let me find a weather tool.Found one." {
		t.Errorf("text %q: vendor blocks leaked into it", got)
	}
	if calls := res.ToolCalls(); len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Args) != `{"location": "Paris, FR"}` {
		t.Errorf("calls %+v", calls)
	}
	var kinds []llm.PartKind
	for _, p := range res.Parts {
		kinds = append(kinds, p.Kind)
	}
	if want := []llm.PartKind{llm.PartText, llm.PartVendor, llm.PartVendor, llm.PartText, llm.PartToolCall}; !slices.Equal(kinds, want) {
		t.Fatalf("parts %v, want %v", kinds, want)
	}

	// The agent's next turn: the reply, the tool's result, and the
	// loaded tools appended to Tools.
	next := *req
	next.Tools = append(slices.Clone(req.Tools), req.Deferred[0], req.Deferred[1])
	next.Messages = append(slices.Clone(req.Messages), res.Message(),
		llm.ToolResults(llm.ToolResultPart("toolu_01W", false, llm.Text("18 °C, sunny"))))
	if _, err := p.Generate(t.Context(), &next); err != nil {
		t.Fatal(err)
	}
	second := srv.Last(t)
	llmtest.Golden(t, "testdata/tool_search_request.golden.json", llmtest.Indent(t, second.Body))

	b1, b2 := decodeBody(t, first.Body), decodeBody(t, second.Body)
	if compact(t, b1.Tools) != compact(t, b2.Tools) {
		t.Errorf("the tools changed between turns:\n%s\n%s", b1.Tools, b2.Tools)
	}
	if strings.Contains(string(b2.Tools), llm.LoadTools) {
		t.Error("load_tools sent on the native path")
	}
	if len(b2.Messages) != 3 || b2.Messages[1].Role != "assistant" || len(b2.Messages[1].Content) != 5 {
		t.Fatalf("second request's messages: %s", second.Body)
	}
	for i, j := range map[int]int{1: 1, 2: 2} {
		if got, want := compact(t, b2.Messages[1].Content[i]), compact(t, res.Parts[j].Raw); got != want {
			t.Errorf("block %d sent back as %s, want %s", i, got, want)
		}
	}
}

// The tools as a model without tool search, or a request without
// deferred tools, sends them: Tools as they are (load_tools kept),
// Deferred ignored, no search tool, and vendor parts of an earlier turn
// left out, since the request has nothing they could refer to.
func TestToolSearchGenericPath(t *testing.T) {
	reply := []llm.Part{
		llm.Text("Let me find a weather tool."),
		llm.VendorPart("anthropic", json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"weather"}}`)),
		llm.VendorPart("anthropic", json.RawMessage(`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}}`)),
		llm.ToolCallPart("toolu_1", "get_weather", json.RawMessage(`{"location":"Paris"}`)),
	}
	tests := []struct {
		name     string
		model    string
		deferred bool
		want     []string // the tools' names on the wire
	}{
		{"Opus 4.1", "claude-opus-4-1-20250805", true, []string{"remember", llm.LoadTools, "get_weather"}},
		{"Claude 3.5 naming", "claude-3-5-haiku-latest", true, []string{"remember", llm.LoadTools, "get_weather"}},
		{"nothing deferred", model, false, []string{"remember", llm.LoadTools, "get_weather"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/text.http").Handler())
			req := lazyRequest(tt.model)
			if !tt.deferred {
				req.Deferred = nil
			}
			// get_weather came through load_tools, or a native
			// search on another model of the chain.
			req.Tools = append(req.Tools, tool("get_weather", "Current weather at a place."))
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Parts: reply},
				llm.ToolResults(llm.ToolResultPart("toolu_1", false, llm.Text("18 °C"))))
			if _, err := newProvider(srv.URL).Generate(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			body := srv.Last(t).Body
			var w struct {
				Tools []map[string]any `json:"tools"`
			}
			if err := json.Unmarshal(body, &w); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range w.Tools {
				names = append(names, tl["name"].(string))
				if _, ok := tl["defer_loading"]; ok {
					t.Errorf("tool %v deferred on the generic path", tl["name"])
				}
				if _, ok := tl["type"]; ok {
					t.Errorf("server tool %v on the generic path", tl["name"])
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("tools %q, want %q", names, tt.want)
			}
			for _, s := range []string{"server_tool_use", "tool_search_tool_result", "srvtoolu_1", `"name":"get_forecast"`} {
				if bytes.Contains(body, []byte(s)) {
					t.Errorf("%s on the generic path: %s", s, body)
				}
			}
			if b := decodeBody(t, body); len(b.Messages[1].Content) != 2 {
				t.Errorf("assistant turn has %d blocks, want text and tool_use", len(b.Messages[1].Content))
			}
		})
	}
}

// A run that fails over from Anthropic to another provider sends that
// provider no vendor blocks: the chain strips them, as it strips
// signatures, while the primary still gets them.
func TestToolSearchFailoverStripsVendorParts(t *testing.T) {
	overloaded := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/error_overloaded.http").Handler())
	other := llmtest.NewServer(t, llmtest.LoadFixture(t, "../openai/testdata/text.http").Handler())
	a, err := providers.NewProvider("anthropic", "", llmtest.APIKey, overloaded.URL, overloaded.Client())
	if err != nil {
		t.Fatal(err)
	}
	o, err := providers.NewProvider("openai", "", llmtest.APIKey, other.URL, other.Client())
	if err != nil {
		t.Fatal(err)
	}
	noWait := llm.WithSleep(func(ctx context.Context, _ time.Duration) error { return ctx.Err() })
	c, err := llm.NewChain([]llm.Entry{{Provider: a, Model: model}, {Provider: o, Model: "gpt-5"}}, noWait)
	if err != nil {
		t.Fatal(err)
	}
	req := lazyRequest(model)
	req.Tools = append(req.Tools, req.Deferred[0])
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Text("Searching."),
			llm.VendorPart("anthropic", json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"weather"}}`)),
			llm.VendorPart("anthropic", json.RawMessage(`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}}`)),
			llm.ToolCallPart("toolu_1", "get_weather", json.RawMessage(`{"location":"Paris"}`)),
		}},
		llm.ToolResults(llm.ToolResultPart("toolu_1", false, llm.Text("18 °C"))))
	res, err := c.Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() == "" {
		t.Error("no answer from the fallback")
	}
	primary := overloaded.Last(t).Body
	if !bytes.Contains(primary, []byte(`"server_tool_use"`)) || !bytes.Contains(primary, []byte(`"defer_loading":true`)) {
		t.Errorf("the primary did not get the native request: %s", primary)
	}
	fallback := other.Last(t).Body
	for _, s := range []string{"server_tool_use", "tool_search_tool_result", "srvtoolu_1", "defer_loading", `"name":"get_forecast"`} {
		if bytes.Contains(fallback, []byte(s)) {
			t.Errorf("%s reached the other provider: %s", s, fallback)
		}
	}
	for _, s := range []string{llm.LoadTools, `"get_weather"`, "toolu_1"} {
		if !bytes.Contains(fallback, []byte(s)) {
			t.Errorf("the other provider did not get %s: %s", s, fallback)
		}
	}
}
