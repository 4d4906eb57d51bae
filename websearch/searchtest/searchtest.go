// Package searchtest holds fakes of the search providers websearch talks
// to: httptest servers on loopback that answer the real APIs' JSON shapes
// (SearXNG's /search?format=json, Brave's /res/v1/web/search), refuse what
// the real ones refuse, and record what reached them.
package searchtest

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/websearch"
)

// Server is one fake provider.
type Server struct {
	// URL is the fake's base_url.
	URL string

	provider, key string

	mu       sync.Mutex
	results  []websearch.Result
	requests []url.Values
	jsonOff  bool
	fail     int
}

// NewSearXNG starts a fake SearXNG instance with json among its
// search.formats, answering every query with results (in order; a real
// instance returns all it found, with no count parameter).
func NewSearXNG(t testing.TB, results ...websearch.Result) *Server {
	t.Helper()
	s := &Server{provider: websearch.SearXNG, results: slices.Clone(results)}
	s.start(t, "/search", s.searxng)
	return s
}

// NewBrave starts a fake Brave Search API that accepts only key as its
// X-Subscription-Token and answers every query with the first count of
// results (count defaults to 20, as Brave's does).
func NewBrave(t testing.TB, key string, results ...websearch.Result) *Server {
	t.Helper()
	s := &Server{provider: websearch.Brave, key: key, results: slices.Clone(results)}
	s.start(t, "/res/v1/web/search", s.brave)
	return s
}

func (s *Server) start(t testing.TB, path string, h http.HandlerFunc) {
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, cloneValues(r.Form))
		s.mu.Unlock()
		h(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
}

// Config is the internet.search section that points at this fake.
func (s *Server) Config() websearch.Config {
	return websearch.Config{Provider: s.provider, BaseURL: s.URL, APIKey: s.key}
}

// Queries is the q of every request that reached the search endpoint, in
// order, refused ones included.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := make([]string, len(s.requests))
	for i, v := range s.requests {
		qs[i] = v.Get("q")
	}
	return qs
}

// Requests is a copy of the parameters of every request that reached the
// search endpoint.
func (s *Server) Requests() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]url.Values, len(s.requests))
	for i, v := range s.requests {
		out[i] = cloneValues(v)
	}
	return out
}

// SetResults replaces what the fake answers.
func (s *Server) SetResults(results ...websearch.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = slices.Clone(results)
}

// DisableJSON makes a fake SearXNG answer as one whose search.formats
// lacks json: 403 Forbidden.
func (s *Server) DisableJSON() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jsonOff = true
}

// Fail makes every following search answer status, in the provider's own
// error shape (429 is Brave's RATE_LIMITED); 0 answers normally again.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

func (s *Server) state() (results []websearch.Result, jsonOff bool, fail int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.results), s.jsonOff, s.fail
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// searxng answers as SearXNG's search endpoint does.
func (s *Server) searxng(w http.ResponseWriter, r *http.Request) {
	results, jsonOff, fail := s.state()
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	format := r.Form.Get("format")
	if format == "" || format == "html" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>%s - SearXNG</title></head><body><p>results page</p></body></html>", html.EscapeString(r.Form.Get("q")))
		return
	}
	if format != "json" || jsonOff {
		// SearXNG's own page for a format missing from search.formats.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n<h1>Forbidden</h1>\n<p>You don&#39;t have the permission to access the requested resource. It is either read-protected or not readable by the server.</p>\n")
		return
	}
	if fail != 0 {
		http.Error(w, http.StatusText(fail), fail)
		return
	}
	q := r.Form.Get("q")
	if strings.TrimSpace(q) == "" {
		http.Error(w, "Bad Request", http.StatusBadRequest)
		return
	}
	type result struct {
		URL           string   `json:"url"`
		Title         string   `json:"title"`
		Content       string   `json:"content"`
		Engine        string   `json:"engine"`
		Engines       []string `json:"engines"`
		ParsedURL     []string `json:"parsed_url"`
		Template      string   `json:"template"`
		Positions     []int    `json:"positions"`
		Score         float64  `json:"score"`
		Category      string   `json:"category"`
		PublishedDate *string  `json:"publishedDate"`
	}
	out := make([]result, len(results))
	for i, res := range results {
		var parsed []string
		if u, err := url.Parse(res.URL); err == nil {
			parsed = []string{u.Scheme, u.Host, u.Path, "", u.RawQuery, u.Fragment}
		}
		out[i] = result{URL: res.URL, Title: res.Title, Content: res.Snippet, Engine: "duckduckgo",
			Engines: []string{"duckduckgo"}, ParsedURL: parsed, Template: "default.html",
			Positions: []int{i + 1}, Score: 1 / float64(i+1), Category: "general"}
		if res.Published != "" {
			out[i].PublishedDate = &res.Published
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"query": q, "number_of_results": 0, "results": out, "answers": []any{},
		"corrections": []any{}, "infoboxes": []any{}, "suggestions": []any{}, "unresponsive_engines": []any{},
	})
}

// brave answers as Brave Search API's web search does.
func (s *Server) brave(w http.ResponseWriter, r *http.Request) {
	results, _, fail := s.state()
	if r.Method != http.MethodGet {
		braveFail(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Method Not Allowed")
		return
	}
	switch tok := r.Header.Get("X-Subscription-Token"); {
	case tok == "":
		braveFail(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s)")
		return
	case tok != s.key:
		braveFail(w, http.StatusUnprocessableEntity, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")
		return
	}
	switch fail {
	case 0:
	case http.StatusTooManyRequests:
		braveFail(w, fail, "RATE_LIMITED", "Request rate limit exceeded for plan.")
		return
	default:
		braveFail(w, fail, "INTERNAL_ERROR", http.StatusText(fail))
		return
	}
	q := r.Form.Get("q")
	if strings.TrimSpace(q) == "" || len([]rune(q)) > 400 {
		braveFail(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s)")
		return
	}
	count := 20
	if c := r.Form.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 20 {
			braveFail(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s)")
			return
		}
		count = n
	}
	results = results[:min(count, len(results))]
	hl := highlighter(q)
	out := make([]map[string]any, len(results))
	for i, res := range results {
		m := map[string]any{
			"type": "search_result", "title": res.Title, "url": res.URL,
			// Brave escapes the snippet as HTML and wraps the query's
			// words in <strong>.
			"description":     hl(html.EscapeString(res.Snippet)),
			"is_source_local": false, "is_source_both": false, "language": "en", "family_friendly": true,
		}
		if u, err := url.Parse(res.URL); err == nil {
			m["meta_url"] = map[string]string{"scheme": u.Scheme, "netloc": u.Host, "hostname": u.Hostname(), "path": u.Path}
		}
		if res.Published != "" {
			m["age"] = res.Published
		}
		out[i] = m
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"type":  "search",
		"query": map[string]any{"original": q, "more_results_available": false},
		"mixed": map[string]any{"type": "mixed", "main": []any{}},
		"web":   map[string]any{"type": "search", "family_friendly": true, "results": out},
	})
}

// highlighter wraps whole-word occurrences of q's words of three letters
// or more in <strong>, in one pass so no tag is wrapped twice.
func highlighter(q string) func(string) string {
	var words []string
	for _, w := range strings.Fields(q) {
		if len([]rune(w)) >= 3 {
			words = append(words, regexp.QuoteMeta(w))
		}
	}
	if len(words) == 0 {
		return func(s string) string { return s }
	}
	re := regexp.MustCompile(`(?i)\b(` + strings.Join(words, "|") + `)\b`)
	return func(s string) string { return re.ReplaceAllString(s, "<strong>$1</strong>") }
}

func braveFail(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, map[string]any{
		"type": "ErrorResponse",
		"error": map[string]any{"id": "00000000-0000-0000-0000-000000000000", "status": status,
			"code": code, "detail": detail, "meta": map[string]any{}},
		"time": 0,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
