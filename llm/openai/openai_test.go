package openai_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/openai"
	"github.com/botd-dev/botd/llm/providers"
)

const model = "gpt-4.1"

func newProvider(baseURL string) llm.Provider {
	return openai.New(llmtest.APIKey, baseURL+"/v1", http.DefaultClient)
}

func TestFixtures(t *testing.T) {
	llmtest.RunFixtures(t, newProvider, llmtest.SimpleRequest(model))
}

func TestWireRequest(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.LoadFixture(t, "testdata/text.http").Handler())
	p := openai.New(llmtest.APIKey, srv.URL+"/v1", srv.Client(), providers.WithName("deepseek"))
	req := llmtest.CanonicalRequest(t, "deepseek-reasoner", t.TempDir())
	if _, err := p.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Last(t)
	if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
		t.Errorf("request line = %s %s", got.Method, got.Path)
	}
	if v := got.Header.Get("Authorization"); v != "Bearer "+llmtest.APIKey {
		t.Errorf("Authorization = %q", v)
	}
	llmtest.Golden(t, "testdata/request.golden.json", llmtest.Indent(t, got.Body))
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
