// Package websearch is web_search's providers: a self-hosted SearXNG's JSON
// API or the Brave Search API, behind one Searcher. The query is a model's
// and only ever travels escaped in the query string; the answer is a
// stranger's, so it is read under a size bound and every result is cleaned
// to one plain line per field, with only http(s) URLs kept.
package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/internal/textclip"
)

// How many results a search returns: count ≤ 0 asks for DefaultCount, and
// more than MaxCount (Brave's own limit) is clipped to it.
const DefaultCount, MaxCount = 5, 20

// MaxQueryRunes bounds a query; Brave refuses longer ones, and no real
// question needs more.
const MaxQueryRunes = 400

// MaxResponseBytes bounds what a provider's answer may weigh: twenty
// results are a few tens of kilobytes.
const MaxResponseBytes = 2 << 20

// DefaultTimeout bounds one search when the client given to New has none.
const DefaultTimeout = 30 * time.Second

// Clip lengths, in runes, of what reaches the model.
const (
	maxTitle     = 200
	maxSnippet   = 500
	maxPublished = 40
	maxURLBytes  = 2048
)

// userAgent names botd to the provider, as the fetcher does to web sites.
const userAgent = "botd (web_search; +https://github.com/botd-dev/botd)"

var (
	// ErrNotConfigured is New's answer when internet.search has no provider.
	ErrNotConfigured = errors.New("web search is not configured (internet.search.provider)")
	// ErrFailed wraps every plain sentence about a provider that could not
	// be reached or answered wrongly.
	ErrFailed = errors.New("web search failed")
	// ErrBadQuery wraps what is wrong with the query itself.
	ErrBadQuery = errors.New("bad search query")
)

// Result is one search result, each field one line of plain text.
type Result struct {
	Title     string
	URL       string
	Snippet   string
	Published string // when the provider gives it, as it gives it
}

// Searcher runs searches through one provider.
type Searcher interface {
	// Search returns up to count results (DefaultCount when count ≤ 0,
	// at most MaxCount) for query.
	Search(ctx context.Context, query string, count int) ([]Result, error)
	// Provider is the provider's name: "searxng" or "brave".
	Provider() string
}

// New returns the Searcher of c's provider. A nil client is a plain one
// with DefaultTimeout. New has no side effects: nothing is sent before the
// first Search.
func New(c Config, client *http.Client) (Searcher, error) {
	if !c.Enabled() {
		return nil, ErrNotConfigured
	}
	if ps := c.Validate(); len(ps) > 0 {
		return nil, fmt.Errorf("internet.search: %w", ps)
	}
	c = c.withDefaults()
	base, err := url.Parse(c.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("internet.search.base_url: %w", err)
	}
	h := &httpClient{base: base, client: ownClient(client, base)}
	switch c.Provider {
	case SearXNG:
		return &searxng{h}, nil
	default:
		return &brave{httpClient: h, key: c.APIKey}, nil
	}
}

// ownClient is a copy of client that follows redirects only within the
// provider's host: Brave's key travels in a header of its own, which Go
// would forward to any host a redirect names.
func ownClient(client *http.Client, base *url.URL) *http.Client {
	var c http.Client
	if client != nil {
		c = *client
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Hostname() != base.Hostname() || len(via) >= 5 {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return &c
}

// httpClient is what both providers share: one GET with a bounded answer.
type httpClient struct {
	base   *url.URL
	client *http.Client
}

// checkQuery turns the model's query into one line and refuses what no
// provider would answer.
func checkQuery(query string) (string, error) {
	q := textclip.OneLine(query, 0)
	switch n := utf8.RuneCountInString(q); {
	case n == 0:
		return "", fmt.Errorf("%w: the search query is empty", ErrBadQuery)
	case n > MaxQueryRunes:
		return "", fmt.Errorf("%w: the search query is %d characters long; at most %d are allowed", ErrBadQuery, n, MaxQueryRunes)
	}
	return q, nil
}

// clampCount is count within 1..MaxCount, DefaultCount when unset.
func clampCount(count int) int {
	switch {
	case count <= 0:
		return DefaultCount
	case count > MaxCount:
		return MaxCount
	}
	return count
}

// get sends one GET to the provider; who names the provider in sentences
// ("searxng at 127.0.0.1:8888"). A non-2xx answer is returned with its
// body open (the caller turns it into a sentence) and a nil error.
func (h *httpClient) get(ctx context.Context, who string, u *url.URL, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFailed, who, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s did not answer before the search was given up: %w", ErrFailed, who, ctx.Err())
		}
		// *url.Error repeats the URL, which holds the query: the cause is
		// enough for a sentence.
		var ue *url.Error
		if errors.As(err, &ue) {
			if ue.Timeout() {
				return nil, fmt.Errorf("%w: %s did not answer in time", ErrFailed, who)
			}
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: %s could not be reached: %w", ErrFailed, who, err)
	}
	return resp, nil
}

// statusSentence is the plain sentence for an HTTP failure.
func statusSentence(resp *http.Response) string {
	return "the search provider answered " + resp.Status
}

// errorBody reads at most a little of a failed answer, for the provider's
// own explanation.
func errorBody(resp *http.Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	return b
}

// errShape is an answer whose results are not where, or not what, the
// provider's API puts them.
var errShape = errors.New("the results are not a list")

// streamResults reads the JSON object of resp's body under
// MaxResponseBytes, streaming: each element of the array at path goes to
// each, one at a time, until each says it has enough; every other
// top-level member goes to other (when not nil). Memory is bounded by the
// largest single member, not the answer, and a long answer is read only
// as far as needed.
func streamResults(resp *http.Response, who string, path []string, each func(json.RawMessage) (more bool), other func(key string, raw json.RawMessage)) error {
	lr := &io.LimitedReader{R: resp.Body, N: MaxResponseBytes + 1}
	dec := json.NewDecoder(lr)
	stopped, err := walkObject(dec, path, each, other)
	if stopped {
		// Read on a little so the connection can be reused; a provider
		// that sends more than asked for is not waited for.
		_, _ = io.Copy(io.Discard, io.LimitReader(lr, 64<<10))
		return nil
	}
	if lr.N <= 0 {
		return fmt.Errorf("%w: %s answered more than %d MB", ErrFailed, who, MaxResponseBytes>>20)
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, errShape) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %s answered something other than the JSON expected (%s)", ErrFailed, who, textclip.OneLine(err.Error(), 120))
		}
		return fmt.Errorf("%w: reading the answer of %s: %w", ErrFailed, who, err)
	}
	return nil
}

// walkObject walks the object dec is at towards path; stopped is each's
// verdict that it has enough.
func walkObject(dec *json.Decoder, path []string, each func(json.RawMessage) bool, other func(string, json.RawMessage)) (stopped bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	if tok == nil {
		return false, nil // null: no results
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return false, fmt.Errorf("%w: found %v where an object belongs", errShape, tok)
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return false, err
		}
		key, _ := kt.(string)
		switch {
		case key == path[0] && len(path) == 1:
			stopped, err = walkArray(dec, each)
		case key == path[0]:
			stopped, err = walkObject(dec, path[1:], each, nil)
		default:
			var raw json.RawMessage
			if err = dec.Decode(&raw); err == nil && other != nil {
				other(key, raw)
			}
		}
		if stopped || err != nil {
			return stopped, err
		}
	}
	_, err = dec.Token() // the closing brace
	return false, err
}

// walkArray hands each element of the array dec is at to each.
func walkArray(dec *json.Decoder, each func(json.RawMessage) bool) (stopped bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	if tok == nil {
		return false, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return false, fmt.Errorf("%w: found %v where a list belongs", errShape, tok)
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return false, err
		}
		if !each(raw) {
			return true, nil
		}
	}
	_, err = dec.Token()
	return false, err
}

// looseString is a JSON string that tolerates null, numbers and other
// shapes a hostile or changed provider might send, by reading as "".
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseString(v)
	} else {
		*s = ""
	}
	return nil
}

// cleaner gathers results, cleaned and without duplicates, up to a count.
type cleaner struct {
	want int
	seen map[string]bool
	out  []Result
}

func newCleaner(count int) *cleaner {
	return &cleaner{want: count, seen: map[string]bool{}, out: []Result{}}
}

func (c *cleaner) full() bool { return len(c.out) >= c.want }

// add keeps r when its URL is an absolute http(s) URL without credentials
// (a model may open it with fetch_url), not seen before.
func (c *cleaner) add(title, rawURL, snippet, published string) {
	if c.full() {
		return
	}
	u, ok := cleanURL(rawURL)
	if !ok || c.seen[u] {
		return
	}
	c.seen[u] = true
	r := Result{
		Title:     plainLine(title, maxTitle),
		URL:       u,
		Snippet:   plainLine(snippet, maxSnippet),
		Published: textclip.OneLine(published, maxPublished),
	}
	if r.Title == "" {
		r.Title = textclip.OneLine(hostOf(u), maxTitle)
	}
	c.out = append(c.out, r)
}

// cleanURL is raw as a normalised absolute http(s) URL, or false.
func cleanURL(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > maxURLBytes {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	s := u.String()
	if len(s) > maxURLBytes {
		return "", false
	}
	return s, true
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Hostname()
}
