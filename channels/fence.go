package channels

import (
	"context"
	"fmt"
	"net/http"
)

// Fence says whether this process may still act for the bot: nil while it
// holds the lease, an error (wrapping store.ErrFenced once another
// instance took over or this one stands by) otherwise. The lease's Keeper
// is one (docs/scaling.md, "How leadership is held").
type Fence interface {
	CheckFence(ctx context.Context) error
}

// FencedTransport is base with the fence asked before every request: a
// refused request is never sent, and the error wraps the fence's. Every
// channel's HTTP clients go through it, so whatever a stale instance still
// tries — a typing renewal, an edit of a live answer begun before it froze,
// a reaction, a poll, anything added later — never leaves the process,
// without a check at each call site. A nil f is base (a store that never
// asked for a lease: tests, one-shot commands).
func FencedTransport(f Fence, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if f == nil {
		return base
	}
	return &fencedTransport{fence: f, base: base}
}

type fencedTransport struct {
	fence Fence
	base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper. The error names neither the URL
// (Telegram's carries the token) nor the host.
func (t *fencedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.fence.CheckFence(r.Context()); err != nil {
		// A RoundTripper closes the body, sent or not.
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("not sent: %w", err)
	}
	return t.base.RoundTrip(r)
}

// CloseIdleConnections passes http.Client.CloseIdleConnections on to base.
func (t *fencedTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
