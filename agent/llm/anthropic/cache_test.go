package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/botd-dev/botd/agent/llm"
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
