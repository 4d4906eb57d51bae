// Package llmfake is the one fake LLM server for tests: a loopback HTTP
// server that records every request and answers the three chat wires the
// adapters speak (OpenAI chat completions, Anthropic messages, Gemini
// streamGenerateContent, all streamed as SSE) with scripted replies. Tests
// of any package (adapters, transcription, media, the daemon end to end)
// point a provider's base URL at it; other endpoints (files, batches,
// audio, images) get a handler of the test's own through [Server.Handle].
package llmfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // including the query
	Header http.Header
	Body   []byte
}

// Wire names the chat wire a request spoke.
type Wire string

const (
	OpenAI    Wire = "openai"
	Anthropic Wire = "anthropic"
	Gemini    Wire = "gemini"
)

// WireOf tells the chat wire of a request path, or "" for another
// endpoint.
func WireOf(path string) Wire {
	p, _, _ := strings.Cut(path, "?")
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return OpenAI
	case strings.HasSuffix(p, "/v1/messages"):
		return Anthropic
	case strings.HasSuffix(p, ":streamGenerateContent"):
		return Gemini
	}
	return ""
}

// Reply is one scripted model turn: text, or a call of Tool with Args (a
// JSON object), and the usage it reports.
type Reply struct {
	Text string
	Tool string
	Args string
	// Found, on the Anthropic wire only, has the turn first search the
	// request's deferred tools and find these (a server_tool_use and its
	// tool_search_tool_result), as a model with native tool search does.
	Found []string
	// InputTokens and OutputTokens are reported as the turn's usage;
	// zero reports 100 and 10.
	InputTokens, OutputTokens int
}

// Server is a loopback LLM server. Its zero value is not usable; see
// [New] and [NewServer].
type Server struct {
	*httptest.Server

	mu     sync.Mutex
	reqs   []Request
	reply  func(r Request) Reply
	routes []route
}

type route struct {
	match func(path string) bool
	h     http.Handler
}

// New starts a server that answers every chat request with reply(r); a
// nil reply answers "ok". It is closed when the test ends.
func New(t testing.TB, reply func(r Request) Reply) *Server {
	t.Helper()
	s := &Server{reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a server that records every request and hands it to h,
// for tests that script the wire bytes themselves.
func NewServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := New(t, nil)
	s.Handle(func(string) bool { return true }, h)
	return s
}

// Handle sends the requests whose path match accepts to h, before the chat
// wires are tried; the first matching handler wins.
func (s *Server) Handle(match func(path string) bool, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = append(s.routes, route{match, h})
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Last returns the most recent request.
func (s *Server) Last(t testing.TB) Request {
	t.Helper()
	r := s.Requests()
	if len(r) == 0 {
		t.Fatal("server received no request")
	}
	return r[len(r)-1]
}

// ByPath returns the requests whose method and path (without query) match.
func (s *Server) ByPath(method, path string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		p, _, _ := strings.Cut(r.Path, "?")
		if r.Method == method && p == path {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	var h http.Handler
	for _, rt := range s.routes {
		if rt.match(r.URL.Path) {
			h = rt.h
			break
		}
	}
	reply := s.reply
	s.mu.Unlock()
	if h != nil {
		// The handler may read the body too (a fake API that keeps uploads).
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
		return
	}
	wire := WireOf(r.URL.Path)
	if wire == "" {
		http.Error(w, `{"error":{"message":"llmfake: no handler for `+r.URL.Path+`"}}`, http.StatusNotFound)
		return
	}
	rep := Reply{Text: "ok"}
	if reply != nil {
		rep = reply(rec)
	}
	Write(w, wire, rep)
}

// Write streams rep to w as an SSE answer of wire.
func Write(w http.ResponseWriter, wire Wire, rep Reply) {
	in, out := rep.InputTokens, rep.OutputTokens
	if in == 0 {
		in = 100
	}
	if out == 0 {
		out = 10
	}
	text, _ := json.Marshal(rep.Text)
	args := rep.Args
	if args == "" {
		args = "{}"
	}
	argsString, _ := json.Marshal(args)
	tool, _ := json.Marshal(rep.Tool)
	w.Header().Set("Content-Type", "text/event-stream")
	var b strings.Builder
	ev := func(event, data string) {
		if event != "" {
			fmt.Fprintf(&b, "event: %s\n", event)
		}
		fmt.Fprintf(&b, "data: %s\n\n", data)
	}
	switch wire {
	case OpenAI:
		if rep.Tool != "" {
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":`+string(tool)+`,"arguments":""}}]},"finish_reason":null}]}`)
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+string(argsString)+`}}]},"finish_reason":null}]}`)
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		} else {
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":`+string(text)+`},"finish_reason":null}]}`)
			ev("", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		}
		ev("", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out))
		ev("", `[DONE]`)
	case Anthropic:
		ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"fake","stop_reason":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`, in))
		stop := "end_turn"
		i := 0
		if rep.Found != nil {
			refs := make([]string, len(rep.Found))
			for j, name := range rep.Found {
				n, _ := json.Marshal(name)
				refs[j] = `{"type":"tool_reference","tool_name":` + string(n) + `}`
			}
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25"}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"tools\"}"}}`)
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[`+strings.Join(refs, ",")+`]}}}`)
			ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
			i = 2
		}
		if rep.Tool != "" {
			stop = "tool_use"
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_1","name":%s,"input":{}}}`, i, tool))
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, argsString))
		} else {
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, text))
		}
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q},"usage":{"output_tokens":%d}}`, stop, out))
		ev("message_stop", `{"type":"message_stop"}`)
	case Gemini:
		part := `{"text":` + string(text) + `}`
		if rep.Tool != "" {
			part = `{"functionCall":{"name":` + string(tool) + `,"args":` + args + `}}`
		}
		ev("", fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[%s]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d},"modelVersion":"fake"}`, part, in, out, in+out))
	}
	io.WriteString(w, b.String())
}

// Answer is one canned reply of [Queue]; an empty ContentType means JSON.
type Answer struct {
	Status      int
	ContentType string
	Body        string
}

// Queue answers each request with the next answer, and with a 500 once
// they run out.
func Queue(answers ...Answer) http.HandlerFunc {
	var mu sync.Mutex
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := Answer{Status: 500, Body: `{"error":{"message":"no answer left"}}`}
		if len(answers) > 0 {
			a, answers = answers[0], answers[1:]
		}
		mu.Unlock()
		if a.ContentType == "" {
			a.ContentType = "application/json"
		}
		w.Header().Set("Content-Type", a.ContentType)
		w.WriteHeader(a.Status)
		io.WriteString(w, a.Body)
	}
}
