package channels_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/store"
)

// trackedBody reports whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

// FencedTransport sends while the lease is held and, once another
// instance took it, sends nothing at all: no request reaches the server,
// whatever its method, the error wraps store.ErrFenced and names neither
// the URL (a Bot API URL holds the token) nor the host, and the body is
// closed as a RoundTripper must.
func TestFencedTransportSendsNothingOnceTheLeaseIsLost(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	lease := chantest.NewLease(t)
	c := &http.Client{Transport: channels.FencedTransport(lease, http.DefaultTransport)}
	const secret = "/bot123456:SECRET-token/sendMessage"

	do := func(method string) (*trackedBody, error) {
		t.Helper()
		body := &trackedBody{Reader: strings.NewReader("chat_id=1&text=hi")}
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+secret, body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return body, err
	}
	if _, err := do(http.MethodPost); err != nil || got.Load() != 1 {
		t.Fatalf("while holding the lease: %v, %d requests arrived", err, got.Load())
	}

	lease.Lose(t)
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodDelete} {
		body, err := do(m)
		if !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s after the lease was lost: %v, want store.ErrFenced", m, err)
		}
		// http.Client wraps what the transport said in a *url.Error.
		if err != nil {
			if own := errors.Unwrap(err).Error(); strings.Contains(own, "SECRET") || strings.Contains(own, srv.Listener.Addr().String()) {
				t.Errorf("the refusal names the URL or host: %v", own)
			}
		}
		if m != http.MethodGet && !body.closed.Load() {
			t.Errorf("%s: the refused request's body was not closed", m)
		}
	}
	if n := got.Load(); n != 1 {
		t.Fatalf("%d requests reached the server, want only the one sent while holding the lease", n)
	}
}

// A nil fence (no lease in use: tests, one-shot commands) is the base
// transport itself.
func TestFencedTransportWithoutAFence(t *testing.T) {
	base := http.DefaultTransport
	if got := channels.FencedTransport(nil, base); got != base {
		t.Fatalf("FencedTransport(nil, base) = %T, want base", got)
	}
}
