package transcribe

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/botd-dev/botd/llm"
)

// maxResponseBytes bounds an answer: verbose_json of half an hour of speech
// with its segments is a few MB; more is not a transcript.
const maxResponseBytes = 16 << 20

// maxErrorBytes bounds how much of an error answer is read.
const maxErrorBytes = 64 << 10

// upload is one request body, made afresh for each attempt (a redirect
// asks for it again).
type upload struct {
	url    string
	header http.Header
	length int64
	body   func() io.Reader
}

// post sends u and returns the body of a 2xx answer and its Content-Type.
// Anything else is a classified *llm.Error.
func (t *Transcriber) post(ctx context.Context, a audio, u upload) ([]byte, string, error) {
	// The transport may still read a body after Do returns (net/http closes
	// it in its own time); the lease ends all reads of f before we return,
	// because the caller may close f then.
	var l lease
	defer l.end()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, l.reader(u.body()))
	if err != nil {
		return nil, "", t.fail(llm.Errorf(t.o.Name, llm.KindBadRequest, err, "build request: %v", err))
	}
	req.ContentLength = u.length
	req.GetBody = func() (io.ReadCloser, error) { return l.reader(u.body()), nil }
	for k, v := range u.header {
		req.Header[k] = v
	}
	resp, err := t.o.HTTP.Do(req)
	if err != nil {
		return nil, "", t.fail(llm.FromTransport(t.o.Name, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		return nil, "", t.fail(t.classify(resp.StatusCode, resp.Header, b, a))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, "", t.fail(llm.FromTransport(t.o.Name, err))
	}
	if len(b) > maxResponseBytes {
		return nil, "", t.fail(llm.NewError(t.o.Name, llm.KindUnknown, "the answer is over 16 MB; that is not a transcript"))
	}
	return b, resp.Header.Get("Content-Type"), nil
}

// fail stamps the provider on e and scrubs the API key from its message:
// vendors echo a bad key back, and transport errors quote URLs.
func (t *Transcriber) fail(e *llm.Error) *llm.Error {
	e.Provider = t.o.Name
	e.Message = llm.Scrub(e.Message, t.o.APIKey)
	return e
}

// errLeaseOver is what a body read gets once Transcribe has returned.
var errLeaseOver = errors.New("transcribe: upload abandoned")

// lease hands out readers of the caller's file and takes them back: after
// end, no reader touches the file again, and end waits for a read under way.
type lease struct {
	mu   sync.Mutex
	over bool
}

func (l *lease) end() {
	l.mu.Lock()
	l.over = true
	l.mu.Unlock()
}

func (l *lease) reader(r io.Reader) io.ReadCloser { return &leased{l: l, r: r} }

type leased struct {
	l *lease
	r io.Reader
}

func (r *leased) Read(p []byte) (int, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.l.over {
		return 0, errLeaseOver
	}
	return r.r.Read(p)
}

func (r *leased) Close() error { return nil }

// snippet renders the start of an answer for an error message: enough to
// recognise a proxy's HTML page, no more.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return "empty answer"
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// joinURL appends path to a base URL without doubling slashes, as the LLM
// adapters do (their helper is internal to llm).
func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}
