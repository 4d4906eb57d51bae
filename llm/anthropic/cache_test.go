package anthropic

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// Breakpoints sit after the stable prefix (the system prompt, or the tools
// when there is none) and after the last message, never on a thinking
// block; there are never more than two.
func TestCacheBreakpoints(t *testing.T) {
	tools := []llm.Tool{{Name: "fetch_media", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "list_media"}}
	turns := []llm.Message{
		llm.UserText("what is in the photo?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCallPart("c1", "fetch_media", json.RawMessage(`{}`))}},
		llm.ToolResults(llm.ToolResultPart("c1", false, llm.Text("a red square"))),
	}
	cases := []struct {
		name string
		req  llm.Request
		want []string // paths of the marked places
	}{
		{"system and turns", llm.Request{System: "rules", Tools: tools, Messages: turns}, []string{"system[0]", "messages[2].content[0]"}},
		{"no system: the tools", llm.Request{Tools: tools, Messages: turns[:1]}, []string{"tools[1]", "messages[0].content[0]"}},
		{"thinking last", llm.Request{System: "rules", Messages: []llm.Message{
			llm.UserText("hi"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("hello"), {Kind: llm.PartReasoning, Text: "hmm", Signature: "sig"}}},
		}}, []string{"system[0]", "messages[1].content[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := buildRequest("anthropic", &tc.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, b := range w.System {
				if b.CacheControl != nil {
					got = append(got, "system["+strconv.Itoa(i)+"]")
				}
			}
			for i, tl := range w.Tools {
				if tl.CacheControl != nil {
					got = append(got, "tools["+strconv.Itoa(i)+"]")
				}
			}
			for i, m := range w.Messages {
				for j, b := range m.Content {
					if b.CacheControl != nil {
						got = append(got, "messages["+strconv.Itoa(i)+"].content["+strconv.Itoa(j)+"]")
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("breakpoints %v, want %v", got, tc.want)
			}
		})
	}
}

// With the long cache, the breakpoint every run shares (system prompt, or
// the tools) asks for one hour and the moving one after the last message
// keeps five minutes; one-hour writes are billed at twice the input price.
func TestLongCache(t *testing.T) {
	fx := llmtest.LoadFixture(t, "testdata/cache_usage_1h.http")
	srv := llmtest.NewServer(t, fx.Handler())
	p := New(llmtest.APIKey, srv.URL, srv.Client(), wire.WithLongCache())
	req := &llm.Request{Model: "claude-sonnet-4-5", System: "rules", MaxTokens: 100, Messages: []llm.Message{llm.UserText("hi")}}
	res, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		System   []wireBlock `json:"system"`
		Messages []struct {
			Content []wireBlock `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Last(t).Body, &body); err != nil {
		t.Fatal(err)
	}
	if cc := body.System[0].CacheControl; cc == nil || cc.TTL != "1h" {
		t.Errorf("system breakpoint %+v, want ttl 1h", cc)
	}
	if cc := body.Messages[0].Content[0].CacheControl; cc == nil || cc.TTL != "" {
		t.Errorf("message breakpoint %+v, want the five-minute default", cc)
	}
	u := res.Usage
	if u.CacheWriteTokens != 3188 || u.CacheWriteLongTokens != 3000 || u.CacheReadTokens != 12000 || u.InputTokens != 21 {
		t.Fatalf("usage %+v", u)
	}
	// Sonnet per MTok: input $3, 5-min write $3.75, 1-h write $6, read $0.30, output $15.
	want := llm.Usage{InputTokens: 21, OutputTokens: u.OutputTokens}
	llm.DefaultPricing.Apply("claude-sonnet-4-5", &want)
	want.CostMicrocents += (188*375_000_000 + 3000*600_000_000 + 12000*30_000_000 + 500_000) / 1_000_000
	if diff := u.CostMicrocents - want.CostMicrocents; diff < -1 || diff > 1 {
		t.Errorf("cost %d micro-cents, want %d", u.CostMicrocents, want.CostMicrocents)
	}

	// Without the option: five minutes everywhere.
	plain := New(llmtest.APIKey, srv.URL, srv.Client())
	if _, err := plain.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(srv.Last(t).Body), `"ttl"`) {
		t.Errorf("a ttl without the long cache: %s", srv.Last(t).Body)
	}
}
