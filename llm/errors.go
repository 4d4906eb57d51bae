package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorKind is the stable classification callers branch on; never parse
// Error.Message.
type ErrorKind string

const (
	// Retryable kinds: trying again later, or elsewhere, may succeed.
	KindRateLimit  ErrorKind = "rate_limit"
	KindOverloaded ErrorKind = "overloaded"
	KindTimeout    ErrorKind = "timeout"
	KindTransport  ErrorKind = "transport"

	// Fatal kinds: the same request will fail the same way.
	KindAuth          ErrorKind = "auth"
	KindBadRequest    ErrorKind = "bad_request"
	KindContentFilter ErrorKind = "content_filter"
	KindCancelled     ErrorKind = "cancelled"
	KindUnknown       ErrorKind = "unknown"
)

// Retryable reports the default classification of a kind.
func (k ErrorKind) Retryable() bool {
	switch k {
	case KindRateLimit, KindOverloaded, KindTimeout, KindTransport:
		return true
	}
	return false
}

// Error is the only error shape that leaves an adapter. Message is already
// scrubbed of the API key and safe to log.
type Error struct {
	Kind ErrorKind `json:"kind"`
	// Retryable is what [Chain] acts on. It normally follows Kind, except for
	// cases such as an exhausted quota, which is a 429 that no retry fixes.
	Retryable bool   `json:"retryable"`
	Status    int    `json:"status,omitempty"`
	Code      string `json:"code,omitempty"`
	Provider  string `json:"provider"`
	Message   string `json:"message"`
	// RetryAfter is the vendor's hint, zero when absent.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Err is the underlying cause for errors.Is/As. It is diagnostics only
	// and may hold vendor or transport detail; do not log or forward it.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	if e.Status != 0 || e.Code != "" {
		b.WriteString(" (")
		if e.Status != 0 {
			b.WriteString(strconv.Itoa(e.Status))
		}
		if e.Code != "" {
			if e.Status != 0 {
				b.WriteByte(' ')
			}
			b.WriteString(e.Code)
		}
		b.WriteByte(')')
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// NewError builds an error whose Retryable follows kind.
func NewError(provider string, kind ErrorKind, msg string) *Error {
	return &Error{Kind: kind, Retryable: kind.Retryable(), Provider: provider, Message: msg}
}

// AsError returns err as an *Error, wrapping anything else as unknown (or
// cancelled/timeout for context errors) so callers always see one shape.
func AsError(provider string, err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := FromTransport(provider, err)
	return out
}

// KindOf returns the kind of err, or "" for nil.
func KindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

// IsRetryable reports whether err is an *Error marked retryable.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// KindForStatus maps an HTTP status to a kind. Vendors refine it with their
// own codes (e.g. an exhausted quota).
func KindForStatus(status int) ErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimit
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return KindTimeout
	case status == http.StatusServiceUnavailable || status == 529:
		// 529 is Anthropic's "overloaded".
		return KindOverloaded
	case status >= 500:
		// 500/502 and friends: usually a broken hop, worth another try.
		return KindTransport
	case status >= 400:
		return KindBadRequest
	}
	return KindUnknown
}

// FromTransport classifies an error from the HTTP round trip or from
// reading a body: context errors become cancelled/timeout, everything else
// below HTTP is transport.
func FromTransport(provider string, err error) *Error {
	e := &Error{Provider: provider, Err: err}
	switch {
	case errors.Is(err, context.Canceled):
		e.Kind, e.Message = KindCancelled, "request cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind, e.Message = KindTimeout, "request deadline exceeded"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			e.Kind, e.Message = KindTimeout, "network timeout"
		} else {
			e.Kind, e.Message = KindTransport, "connection failed: "+err.Error()
		}
	}
	e.Retryable = e.Kind.Retryable()
	return e
}

// ParseRetryAfter reads a Retry-After header given in seconds; the HTTP-date
// form is rare from model vendors and ignored.
func ParseRetryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

// Scrub removes every occurrence of the given secrets (and their obvious
// short forms) from s. Vendors sometimes echo a bad key back in the error
// text; that text must not reach a log.
func Scrub(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) < 4 {
			continue
		}
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}

// Errorf is a convenience for adapters building a classified error with a
// wrapped cause.
func Errorf(provider string, kind ErrorKind, cause error, format string, args ...any) *Error {
	e := NewError(provider, kind, fmt.Sprintf(format, args...))
	e.Err = cause
	return e
}
