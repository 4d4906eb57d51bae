// Package llmtest holds the conformance harness the adapter tests share:
// replaying recorded HTTP responses from testdata on a loopback server,
// golden files with -update, and the canonical request every adapter must
// lower.
package llmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// APIKey is the fake key every adapter test uses. Fixtures echo it back in
// error bodies to prove it is scrubbed.
const APIKey = "sk-test-SECRETKEY-0123456789"

// Recorded is one request the fake server received.
type Recorded = llmfake.Request

// Server is the loopback server fixtures are replayed on: llmfake's.
type Server = llmfake.Server

// Fixture is a recorded HTTP response: status line, headers, blank line,
// body, exactly as on the wire.
type Fixture struct {
	Status int
	Header http.Header
	Body   []byte
}

// LoadFixture parses a raw HTTP response file.
func LoadFixture(t testing.TB, path string) Fixture {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Headers and body are split by hand because http.ReadResponse would
	// honour Content-Length and chunking, and fixtures are hand-written.
	head, body, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		t.Fatalf("%s: no blank line after headers", path)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(bytes.NewReader(head), strings.NewReader("\n\n"))), nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	resp.Body.Close()
	return Fixture{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// Handler serves f, flushing after every SSE event so the client really
// reads a stream.
func (f Fixture) Handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range f.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(f.Status)
		events := bytes.SplitAfter(f.Body, []byte("\n\n"))
		for _, ev := range events {
			w.Write(ev)
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
		}
	}
}

// NewServer starts a loopback server that records every request and hands
// it to h.
func NewServer(t testing.TB, h http.Handler) *Server { return llmfake.NewServer(t, h) }

// Golden compares got with testdata file path, rewriting it under -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Errorf("%s mismatch (run with -update to accept)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Indent pretty-prints JSON for goldens so diffs are readable.
func Indent(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("indent: %v\n%s", err, b)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// Marshal is json.Marshal + Indent.
func Marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return Indent(t, b)
}

// Outcome is what one fixture produced through Stream and through Generate.
type Outcome struct {
	Stream   StreamOutcome   `json:"stream"`
	Generate GenerateOutcome `json:"generate"`
}

// StreamOutcome is the normalised chunk sequence and how it ended.
type StreamOutcome struct {
	OpenError *llm.Error  `json:"open_error,omitempty"`
	Chunks    []llm.Chunk `json:"chunks,omitempty"`
	Error     *llm.Error  `json:"error,omitempty"`
}

// GenerateOutcome is the folded result or error.
type GenerateOutcome struct {
	Result *llm.Result `json:"result,omitempty"`
	Error  *llm.Error  `json:"error,omitempty"`
}

// Drain reads s to the end.
func Drain(t testing.TB, s llm.Stream) ([]llm.Chunk, error) {
	t.Helper()
	defer s.Close()
	var out []llm.Chunk
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

func asErr(t testing.TB, err error) *llm.Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *llm.Error: %v", err, err)
	}
	return e
}

// RunFixtures replays every testdata/*.http file through both Stream and
// Generate of the provider newP builds, and compares the outcome with
// testdata/<name>.golden.json. The API key must never appear in it.
func RunFixtures(t *testing.T, newP func(baseURL string) llm.Provider, req func() *llm.Request) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.http")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".http")
		t.Run(name, func(t *testing.T) {
			fx := LoadFixture(t, file)
			srv := NewServer(t, fx.Handler())
			p := newP(srv.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			var out Outcome
			s, err := p.Stream(ctx, req())
			if err != nil {
				out.Stream.OpenError = asErr(t, err)
			} else {
				chunks, err := Drain(t, s)
				out.Stream.Chunks = chunks
				out.Stream.Error = asErr(t, err)
			}
			res, err := p.Generate(ctx, req())
			out.Generate.Result = res
			out.Generate.Error = asErr(t, err)

			got := Marshal(t, out)
			if bytes.Contains(got, []byte(APIKey)) {
				t.Errorf("API key leaked into the outcome:\n%s", got)
			}
			Golden(t, filepath.Join("testdata", name+".golden.json"), got)
		})
	}
}

// PNG is a 1x1 transparent PNG, the image the canonical request attaches.
var PNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

// SimpleRequest is the request the fixtures answer.
func SimpleRequest(model string) func() *llm.Request {
	return func() *llm.Request {
		return &llm.Request{
			Model:    model,
			System:   "You are Andy.",
			Messages: []llm.Message{llm.UserText("What's the weather in Paris?")},
		}
	}
}

// CanonicalRequest exercises every lowering rule at once: system prompt,
// tools, a replayed reasoning part with its signature, a tool call, a tool
// result holding an image by file path, and a follow-up user turn. The
// image is written to dir so the adapter has to read it.
func CanonicalRequest(t testing.TB, model, dir string) *llm.Request {
	t.Helper()
	img := filepath.Join(dir, "chart.png")
	if err := os.WriteFile(img, PNG, 0o644); err != nil {
		t.Fatal(err)
	}
	temp := 0.2
	return &llm.Request{
		Model:  model,
		System: "You are Andy, a helpful assistant in a family group chat.",
		Tools: []llm.Tool{{
			Name:        "fetch_media",
			Description: "Fetch a media item by its ref.",
			Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",` +
				`"properties":{"ref":{"type":"string","description":"media ref"},"size":{"$ref":"#/$defs/size"}},` +
				`"required":["ref"],"additionalProperties":false,"$defs":{"size":{"type":"string","enum":["small","large"]}}}`),
		}},
		ToolChoice:    llm.ToolChoice{Mode: llm.ToolChoiceAuto},
		Temperature:   &temp,
		MaxTokens:     1024,
		StopSequences: []string{"\nUser:"},
		Messages: []llm.Message{
			llm.UserText("What is in the chart <ref:tg_1>?"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				llm.Reasoning("The user wants the chart; fetch it.", "sig-abc123"),
				llm.Text("Let me look."),
				withSignature(llm.ToolCallPart("call_1", "fetch_media", json.RawMessage(`{"ref":"tg_1"}`)), "fc-sig-1"),
			}},
			llm.ToolResults(llm.ToolResultPart("call_1", false, llm.Text("chart.png, 67 bytes"), llm.ImageFile("image/png", img))),
			llm.UserText("And summarise it in one line."),
		},
	}
}

func withSignature(p llm.Part, sig string) llm.Part {
	p.ToolCall.Signature = sig
	return p
}

// VendorTurns is a conversation in which an earlier Anthropic reply
// searched its tools: the vendor parts another adapter must leave out,
// with the text and tool call around them kept.
func VendorTurns() []llm.Message {
	return []llm.Message{
		llm.UserText("What's the weather in Paris?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Text("Searching."),
			llm.VendorPart("anthropic", json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"weather"}}`)),
			llm.VendorPart("anthropic", json.RawMessage(`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}}`)),
			llm.ToolCallPart("call_1", "get_weather", json.RawMessage(`{"location":"Paris"}`)),
		}},
		llm.ToolResults(llm.ToolResultPart("call_1", false, llm.Text("18 °C"))),
	}
}
