package anthropic

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/sse"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// The models of the docs' compatibility table take the native path;
// Opus 4.1 and earlier, and ids this cannot read, take the generic one.
func TestToolSearchModels(t *testing.T) {
	tests := []struct {
		model string
		want  bool
	}{
		{"claude-sonnet-4-5", true},
		{"claude-sonnet-4-5-20250929", true},
		{"claude-opus-4-5-20251101", true},
		{"claude-haiku-4-5-20251001", true},
		{"claude-opus-4-6", true},
		{"claude-sonnet-4-6", true},
		{"claude-opus-4-8", true},
		{"claude-opus-5", true},
		{"claude-sonnet-5-5", true},
		{"claude-fable-5", true},
		{"Claude-Sonnet-4-5", true},
		{"anthropic/claude-sonnet-4-5", true},
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", true},
		{"claude-sonnet-4-5@20250929", true},
		{"claude-opus-4-1-20250805", false},
		{"claude-opus-4-1", false},
		{"claude-opus-4-20250514", false},
		{"claude-sonnet-4-20250514", false},
		{"claude-sonnet-4-0", false},
		{"claude-3-7-sonnet-latest", false},
		{"claude-3-5-haiku-20241022", false},
		{"claude-mythos-preview", false},
		{"claude", false},
		{"gpt-5", false},
		{"", false},
	}
	p := New("k", "", nil)
	for _, tt := range tests {
		if got := p.ToolSearch(tt.model); got != tt.want {
			t.Errorf("ToolSearch(%q) = %v, want %v", tt.model, got, tt.want)
		}
		if got := llm.CapabilitiesOf(p, tt.model).ToolSearch; got != tt.want {
			t.Errorf("CapabilitiesOf(%q).ToolSearch = %v, want %v", tt.model, got, tt.want)
		}
	}
}

// With deferred tools and no system prompt the tools' breakpoint goes on
// the search tool, the last one that may carry it; with the long cache
// it asks for the hour there.
func TestToolSearchCacheBreakpoint(t *testing.T) {
	req := &llm.Request{
		Model:    "claude-sonnet-4-5",
		Tools:    []llm.Tool{{Name: "remember"}, {Name: llm.LoadTools}},
		Deferred: []llm.Tool{{Name: "get_weather"}, {Name: "get_forecast"}},
		Messages: []llm.Message{llm.UserText("hi")},
	}
	for _, long := range []bool{false, true} {
		var opts []wire.Option
		if long {
			opts = append(opts, wire.WithLongCache())
		}
		p := New("k", "", nil, opts...)
		w, err := p.build(req, nil)
		if err != nil {
			t.Fatal(err)
		}
		var marked []string
		for _, tl := range w.Tools {
			if tl.CacheControl != nil {
				marked = append(marked, tl.Name+"/"+tl.CacheControl.TTL)
			}
		}
		want := "tool_search_tool_bm25/"
		if long {
			want += "1h"
		}
		if strings.Join(marked, " ") != want {
			t.Errorf("long=%v: breakpoints on %v, want %s", long, marked, want)
		}
	}
}

// A stream's server tool blocks are checked as they are read: arguments
// that are not JSON or over the budget end the stream with an error
// rather than a block the next request would carry back.
func TestToolSearchHostileStream(t *testing.T) {
	start := `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25"}}`
	delta := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":` + string(b) + `}}`
	}
	stop := `{"type":"content_block_stop","index":0}`
	tests := []struct {
		name   string
		events []string
		want   string
	}{
		{"arguments not JSON", []string{start, delta(`{"query": "wea`), stop}, "not valid JSON"},
		{"arguments over the budget", []string{start, delta(`{"query":"` + strings.Repeat("x", maxServerInput) + `"}`), stop}, "over"},
		{"start without a block", []string{`{"type":"content_block_start","index":0}`}, "without a block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &decoder{}
			var err error
			for _, ev := range tt.events {
				if _, err = d.Event(sse.Event{Data: []byte(ev)}, nil); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || llm.KindOf(err) != llm.KindUnknown {
				t.Errorf("err %v, want a %s error saying %q", err, llm.KindUnknown, tt.want)
			}
		})
	}
}

// A vendor part that is not an Anthropic block is refused before
// anything is sent; another vendor's is left out.
func TestToolSearchBadVendorPart(t *testing.T) {
	base := func(p llm.Part) *llm.Request {
		return &llm.Request{
			Model:    "claude-sonnet-4-5",
			Tools:    []llm.Tool{{Name: "remember"}},
			Deferred: []llm.Tool{{Name: "get_weather"}},
			Messages: []llm.Message{llm.UserText("q"), {Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("a"), p}}, llm.UserText("q2")},
		}
	}
	for _, raw := range []string{`[1]`, `"x"`, `{}`, `null`, `{"type":"server_tool_use"`, ``} {
		_, err := buildRequest("anthropic", base(llm.Part{Kind: llm.PartVendor, Vendor: vendor, Raw: json.RawMessage(raw)}), nil)
		if llm.KindOf(err) != llm.KindBadRequest || !strings.Contains(err.Error(), "message 1 part 1") {
			t.Errorf("raw %q: err %v, want bad_request naming the part", raw, err)
		}
	}
	w, err := buildRequest("anthropic", base(llm.Part{Kind: llm.PartVendor, Vendor: "gemini", Raw: json.RawMessage(`{"type":"x"}`)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.Messages[1].Content); n != 1 {
		t.Errorf("assistant turn has %d blocks, want the text only", n)
	}
}

// The native path's request costs what the generic one does: building
// and encoding a 20-turn run with 10 core and 40 deferred tools, half
// its replies holding a search, and a 1 MB image inline.
func BenchmarkBuildRequest(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"what to look for"}},"required":["q"]}`)
	var core, deferred []llm.Tool
	for i := range 10 {
		core = append(core, llm.Tool{Name: "core_" + string(rune('a'+i)), Description: strings.Repeat("does a thing ", 20), Parameters: schema})
	}
	for i := range 40 {
		deferred = append(deferred, llm.Tool{Name: "more_" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Description: strings.Repeat("does another thing ", 20), Parameters: schema})
	}
	msgs := []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.Text("look"), llm.MediaBase64("image/png", strings.Repeat("QUJD", 1<<18))}}}
	for i := range 20 {
		reply := []llm.Part{llm.Text("let me see")}
		if i%2 == 0 {
			reply = append(reply,
				llm.Part{Kind: llm.PartVendor, Vendor: vendor, Raw: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"another thing"}}`)},
				llm.Part{Kind: llm.PartVendor, Vendor: vendor, Raw: json.RawMessage(`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"more_aa"}]}}`)})
		}
		reply = append(reply, llm.ToolCallPart("c", "more_aa", json.RawMessage(`{"q":"x"}`)))
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Parts: reply}, llm.ToolResults(llm.ToolResultPart("c", false, llm.Text(strings.Repeat("result ", 100)))))
	}
	for _, tc := range []struct {
		name  string
		model string
	}{{"native", "claude-sonnet-4-5"}, {"generic", "claude-opus-4-1"}} {
		b.Run(tc.name, func(b *testing.B) {
			req := &llm.Request{Model: tc.model, System: "rules", Tools: append(slices.Clone(core), llm.Tool{Name: llm.LoadTools, Parameters: schema}), Deferred: deferred, Messages: msgs}
			b.ReportAllocs()
			for b.Loop() {
				w, err := buildRequest("anthropic", req, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := wire.Marshal(w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
