package gemini_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/internal/llmtest"
)

const model = "gemini-2.5-flash"

func newProvider(baseURL string) llm.Provider {
	return gemini.New(llmtest.APIKey, baseURL, http.DefaultClient)
}

func TestFixtures(t *testing.T) {
	llmtest.RunFixtures(t, newProvider, llmtest.SimpleRequest(model))
}

func TestWireRequest(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/text.http").Handler())
	p := newProvider(srv.URL)
	req := llmtest.CanonicalRequest(t, model, t.TempDir())
	req.ReasoningBudget = 2048
	// A replayed synthesised id must not be echoed to Gemini, and a
	// signature that came on a text part is re-attached to it.
	req.Messages[1].Parts = append([]llm.Part{llm.Reasoning("", "text-sig")}, req.Messages[1].Parts...)
	if _, err := p.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Last(t)
	if want := "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"; got.Path != want {
		t.Errorf("path = %s, want %s", got.Path, want)
	}
	if v := got.Header.Get("X-Goog-Api-Key"); v != llmtest.APIKey {
		t.Errorf("x-goog-api-key = %q", v)
	}
	if strings.Contains(got.Path, llmtest.APIKey) {
		t.Error("API key in the URL")
	}
	llmtest.Golden(t, "testdata/request.golden.json", llmtest.Indent(t, got.Body))
}

func TestCleanSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"strips unsupported keywords",
			`{"$schema":"x","type":"object","additionalProperties":false,"properties":{"a":{"type":"string","format":"uri","minLength":1}},"required":["a","gone"]}`,
			`{"properties":{"a":{"minLength":1,"type":"string"}},"required":["a"],"type":"object"}`},
		{"inlines refs",
			`{"type":"object","properties":{"s":{"$ref":"#/$defs/s","description":"size"}},"$defs":{"s":{"type":"string","enum":["a","b"]}}}`,
			`{"properties":{"s":{"description":"size","enum":["a","b"],"type":"string"}},"type":"object"}`},
		{"recursive ref is cut",
			`{"type":"object","properties":{"n":{"$ref":"#/definitions/node"}},"definitions":{"node":{"type":"object","properties":{"next":{"$ref":"#/definitions/node"}}}}}`,
			`{"properties":{"n":{"properties":{"next":{"properties":{"next":{"properties":{"next":{"properties":{"next":{"properties":{"next":{"properties":{"next":{"properties":{"next":{"properties":{"next":{"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}},"type":"object"}`},
		{"nullable type array", `{"type":"object","properties":{"x":{"type":["integer","null"]}}}`,
			`{"properties":{"x":{"nullable":true,"type":"integer"}},"type":"object"}`},
		{"optional anyOf collapses", `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			`{"properties":{"x":{"nullable":true,"type":"string"}},"type":"object"}`},
		{"const becomes enum", `{"type":"object","properties":{"k":{"const":"fixed"}}}`,
			`{"properties":{"k":{"enum":["fixed"]}},"type":"object"}`},
		{"no parameters", `{"type":"object","properties":{}}`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gemini.CleanSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// Another vendor's blocks (Anthropic's tool search) are left out; the
// turn's text and tool call still go.
func TestVendorPartsLeftOut(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/text.http").Handler())
	req := &llm.Request{Model: model, Tools: []llm.Tool{{Name: "get_weather"}}, Messages: llmtest.VendorTurns()}
	if _, err := newProvider(srv.URL).Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Last(t).Body)
	for _, s := range []string{"srvtoolu_1", "tool_search", "server_tool_use"} {
		if strings.Contains(body, s) {
			t.Errorf("%s sent: %s", s, body)
		}
	}
	for _, s := range []string{"Searching.", "call_1", "18 °C"} {
		if !strings.Contains(body, s) {
			t.Errorf("%s missing: %s", s, body)
		}
	}
}
