// Package wire is the HTTP plumbing the adapters share: posting a JSON
// request, classifying a failed response, and turning an SSE body into an
// [llm.Stream] with an idle timeout.
package wire

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/sse"
)

// DefaultIdleTimeout is how long a stream may go without an event before it
// is declared stalled. Vendors send pings well within this while a model
// thinks.
const DefaultIdleTimeout = 90 * time.Second

// MaxMediaBytes caps a media file read for a request; vendors reject much
// smaller payloads anyway and this keeps a bad path from eating memory.
const MaxMediaBytes = 20 << 20

// maxErrorBody bounds how much of an error response we read.
const maxErrorBody = 64 << 10

// Decoder turns vendor SSE events into chunks. Implementations are
// per-stream and not shared.
type Decoder interface {
	// Event folds one event, appending chunks to out. An *llm.Error return
	// ends the stream after the chunks already appended are delivered.
	Event(ev sse.Event, out []llm.Chunk) ([]llm.Chunk, error)
	// End is called at EOF when no stop chunk has been emitted. It either
	// emits the stop chunk or explains why the stream is incomplete.
	End(out []llm.Chunk) ([]llm.Chunk, error)
}

// ErrorParser builds a classified error from a non-2xx response.
type ErrorParser func(status int, h http.Header, body []byte) *llm.Error

// Client holds what every call of one adapter instance shares.
type Client struct {
	Provider    string
	APIKey      string // only used to scrub messages
	HTTP        *http.Client
	IdleTimeout time.Duration
	Pricing     llm.Pricing
	ParseError  ErrorParser
	// Files, when set, holds uploads to the provider's files API.
	Files llm.Files
	// LongCache asks for the long-lived prompt cache (WithLongCache).
	LongCache bool
}

// Call is one streaming request.
type Call struct {
	URL     string
	Header  http.Header
	Body    any
	Model   string // for pricing
	Decoder Decoder
	KeepRaw bool
}

var (
	errIdle   = errors.New("stream idle")
	errClosed = errors.New("stream closed")
)

func (c *Client) idle() time.Duration {
	if c.IdleTimeout > 0 {
		return c.IdleTimeout
	}
	return DefaultIdleTimeout
}

// Marshal encodes v without HTML escaping, so prompts containing <, > and &
// go on the wire as written.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Stream posts the call and returns the event stream once the vendor has
// answered 2xx.
func (c *Client) Stream(ctx context.Context, call Call) (llm.Stream, error) {
	body, err := Marshal(call.Body)
	if err != nil {
		return nil, c.finish(llm.Errorf(c.Provider, llm.KindBadRequest, err, "encode request: %v", err))
	}
	sctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, call.URL, bytes.NewReader(body))
	if err != nil {
		cancel(errClosed)
		return nil, c.finish(llm.Errorf(c.Provider, llm.KindBadRequest, err, "build request: %v", err))
	}
	for k, v := range call.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")

	s := &stream{c: c, parent: ctx, ctx: sctx, cancel: cancel, model: call.Model, dec: call.Decoder, keepRaw: call.KeepRaw}
	// The timer also covers waiting for response headers: a vendor that
	// accepts the connection and then says nothing is just as stalled.
	s.timer = time.AfterFunc(c.idle(), func() { cancel(errIdle) })

	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.timer.Stop()
		e := s.readErr(err)
		cancel(errClosed)
		return nil, c.finish(e)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		s.timer.Stop()
		defer cancel(errClosed)
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, c.finish(c.parseError(resp.StatusCode, resp.Header, b))
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" || ct == "text/html" || ct == "text/plain" {
		// Proxies and some compatible servers answer 200 with an error
		// document instead of a stream.
		s.timer.Stop()
		defer cancel(errClosed)
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := c.parseError(resp.StatusCode, resp.Header, b)
		if e.Kind == llm.KindUnknown || e.Message == "" {
			e = llm.NewError(c.Provider, llm.KindUnknown, fmt.Sprintf("expected an event stream, got %s: %s", ct, Snippet(b)))
		}
		return nil, c.finish(e)
	}
	s.body = resp.Body
	s.sse = sse.NewReader(resp.Body)
	return s, nil
}

func (c *Client) parseError(status int, h http.Header, body []byte) *llm.Error {
	var e *llm.Error
	if c.ParseError != nil {
		e = c.ParseError(status, h, body)
	}
	if e == nil {
		e = StatusError(status, h, "", ErrorText(body))
	}
	return e
}

// finish stamps the provider and scrubs the key from e.
func (c *Client) finish(e *llm.Error) *llm.Error {
	if e == nil {
		return nil
	}
	if e.Provider == "" {
		e.Provider = c.Provider
	}
	e.Message = llm.Scrub(e.Message, c.APIKey)
	return e
}

// StatusError classifies an HTTP failure from its status. code and msg come
// from the vendor's body when it could be parsed.
func StatusError(status int, h http.Header, code, msg string) *llm.Error {
	kind := llm.KindForStatus(status)
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &llm.Error{Kind: kind, Retryable: kind.Retryable(), Status: status, Code: code, Message: msg}
	if h != nil {
		e.RetryAfter = llm.ParseRetryAfter(h)
	}
	return e
}

// Snippet renders the start of an unparseable body for an error message:
// enough to recognise an HTML error page or a proxy message, no more.
func Snippet(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "empty body"
	}
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return "unparseable body: " + strings.Join(strings.Fields(s), " ")
}

type stream struct {
	c       *Client
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	body    io.ReadCloser
	sse     *sse.Reader
	dec     Decoder
	model   string
	keepRaw bool
	raw     []json.RawMessage

	queue []llm.Chunk
	qi    int
	done  bool // stop chunk queued
	err   error
	once  sync.Once
}

func (s *stream) Next() (llm.Chunk, error) {
	for {
		if s.qi < len(s.queue) {
			c := s.queue[s.qi]
			s.qi++
			return c, nil
		}
		if s.err != nil {
			return llm.Chunk{}, s.err
		}
		if s.done {
			return llm.Chunk{}, io.EOF
		}
		s.queue, s.qi = s.queue[:0], 0
		ev, err := s.sse.Next()
		if errors.Is(err, io.EOF) {
			var derr error
			s.queue, derr = s.dec.End(s.queue)
			s.after(derr)
			if !s.done && s.err == nil {
				s.err = s.c.finish(llm.NewError("", llm.KindTransport, "stream ended before completion"))
			}
			continue
		}
		if err != nil {
			s.err = s.c.finish(s.readErr(err))
			continue
		}
		s.timer.Reset(s.c.idle())
		if s.keepRaw && len(ev.Data) > 0 && json.Valid(ev.Data) {
			s.raw = append(s.raw, append(json.RawMessage(nil), ev.Data...))
		}
		var derr error
		s.queue, derr = s.dec.Event(ev, s.queue)
		s.after(derr)
	}
}

// after prices the stop chunk and records a decoder error.
func (s *stream) after(derr error) {
	for i := s.qi; i < len(s.queue); i++ {
		if c := &s.queue[i]; c.Kind == llm.ChunkStop {
			if c.Usage == nil {
				c.Usage = &llm.Usage{}
			}
			s.c.Pricing.Apply(s.model, c.Usage)
			s.done = true
			// Nothing after the stop chunk matters; don't wait on a server
			// that keeps the connection open.
			s.queue = s.queue[:i+1]
			s.timer.Stop()
			break
		}
	}
	if derr != nil && !s.done {
		s.err = s.c.finish(llm.AsError("", derr))
	}
}

func (s *stream) readErr(err error) *llm.Error {
	switch cause := context.Cause(s.ctx); {
	case errors.Is(cause, errIdle):
		return llm.Errorf("", llm.KindTimeout, err, "no data from provider for %s", s.c.idle())
	case s.parent.Err() != nil:
		return llm.FromTransport("", s.parent.Err())
	case errors.Is(err, sse.ErrTooLarge):
		return llm.Errorf("", llm.KindUnknown, err, "stream event over %d bytes", sse.MaxEventBytes)
	}
	e := llm.FromTransport("", err)
	if e.Kind == llm.KindTransport {
		e.Message = "stream interrupted: " + err.Error()
	}
	return e
}

func (s *stream) Close() error {
	s.once.Do(func() {
		s.timer.Stop()
		s.cancel(errClosed)
		if s.body != nil {
			s.body.Close()
		}
	})
	return nil
}

// Raw returns the JSON payloads received, for Result.Raw.
func (s *stream) Raw() json.RawMessage {
	if !s.keepRaw {
		return nil
	}
	b, _ := json.Marshal(s.raw)
	return b
}

// Generate drains a stream opened by open into a Result, stamping the
// provider on any error. Adapters build Generate on Stream so that there is
// one wire decoder per vendor to get right.
func Generate(ctx context.Context, provider string, open func(keepRaw bool) (llm.Stream, error)) (*llm.Result, error) {
	s, err := open(true)
	if err != nil {
		return nil, err
	}
	res, err := llm.Fold(ctx, s)
	if err != nil {
		e := llm.AsError(provider, err)
		if e.Provider == "" {
			e.Provider = provider
		}
		return nil, e
	}
	return res, nil
}

// LoadMedia returns m as base64, reading Path if that is where the bytes
// are. Reading happens here, at request-build time, so that conversation
// history only ever holds the path.
func LoadMedia(provider string, m *llm.Media) (string, error) {
	if m.Data != "" {
		return m.Data, nil
	}
	if m.Path == "" {
		return "", llm.NewError(provider, llm.KindBadRequest, "media part has no data, path or url")
	}
	f, err := os.Open(m.Path)
	if err != nil {
		return "", llm.Errorf(provider, llm.KindBadRequest, err, "read media: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxMediaBytes+1))
	if err != nil {
		return "", llm.Errorf(provider, llm.KindBadRequest, err, "read media: %v", err)
	}
	if len(b) > MaxMediaBytes {
		return "", llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("media file %s is over %d bytes", m.Path, MaxMediaBytes))
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// IsImage reports whether a MIME type is an image.
func IsImage(mimeType string) bool { return strings.HasPrefix(mimeType, "image/") }

// JoinURL appends path to a base URL without doubling slashes.
func JoinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// Annotate prefixes the message of a classified error with where it
// happened, keeping its kind; other errors are wrapped with %w.
func Annotate(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	prefix := fmt.Sprintf(format, args...)
	var e *llm.Error
	if errors.As(err, &e) {
		cp := *e
		cp.Message = prefix + ": " + e.Message
		return &cp
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// ErrorText is the message of an error answer that is not the vendor's
// JSON (a proxy's page): its start, or, for no body at all, nothing, so
// that [StatusError] names the status ("Service Unavailable").
func ErrorText(body []byte) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	return Snippet(body)
}
