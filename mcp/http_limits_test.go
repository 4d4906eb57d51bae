package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	registry "github.com/botd-dev/botd/tools"
)

// hangGuard bounds every read below. It only turns a hang into a failure:
// no verdict depends on a timeout of the server firing before it.
const hangGuard = 10 * time.Second

// noTimeouts leaves the server's timeouts out of the picture, so what a
// test sees comes from the caps and the Connection: close answers alone.
var noTimeouts = HTTPLimits{ReadHeaderTimeout: time.Hour, IdleTimeout: time.Hour}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawRequest is an HTTP/1.1 request as a client would write it; auth is
// the Authorization value, or empty for none.
func rawRequest(method, path, host, auth, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	b.WriteString("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: %s\r\n", auth)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

func dialRaw(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readToClose reads until the server closes the connection (EOF, or a
// reset when it closed with our request unread). It fails when the
// connection is still open after hangGuard.
func readToClose(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	return readToCloseFrom(t, c, c, what)
}

// readToCloseFrom is readToClose through r, a reader over c that may hold
// bytes already read from it.
func readToCloseFrom(t *testing.T, c net.Conn, r io.Reader, what string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangGuard))
	data, err := io.ReadAll(r)
	if isTimeout(err) {
		t.Fatalf("%s: the server kept the connection open (read %q)", what, data)
	}
	return string(data)
}

// Every answer that is not to an authorised request ends the connection,
// so that it cannot stay on as an idle keep-alive connection.
func TestHTTPRefusalClosesConnection(t *testing.T) {
	f := newHTTPFixtureLimits(t, noTimeouts)
	for _, tc := range []struct {
		name, path, host, auth string
		status                 int
	}{
		{"no token", HTTPPath, f.addr, "", 401},
		{"bad token", HTTPPath, f.addr, "Bearer not-the-token-0123456789", 401},
		{"foreign host", HTTPPath, "evil.example", "Bearer " + tokFamily, 403},
		{"other path", "/other", f.addr, "Bearer " + tokFamily, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, f.addr)
			if _, err := io.WriteString(c, rawRequest("POST", tc.path, tc.host, tc.auth, initBody)); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(hangGuard))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("status %d (want %d), Connection: %q (want close)", resp.StatusCode, tc.status, resp.Header.Get("Connection"))
			}
			if rest := readToCloseFrom(t, c, br, tc.name); rest != "" {
				t.Errorf("more after the answer: %q", rest)
			}
		})
	}

	// An authorised connection is kept alive for its next request.
	c := dialRaw(t, f.addr)
	br := bufio.NewReader(c)
	for i := range 2 {
		if _, err := io.WriteString(c, rawRequest("POST", HTTPPath, f.addr, "Bearer "+tokWork, initBody)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(hangGuard))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("request %d: status %d, close %v", i, resp.StatusCode, resp.Close)
		}
	}
}

// The attack: 1100 connections without a token, half of them
// having sent a request (answered 401) and then idling, half sending
// nothing at all, against a server with 1024 files to open. An authorised
// client still gets in, and the server has closed what it does not need:
// every 401'd connection and all silent ones but the newest MaxConns. The
// server's timeouts are an hour, so it is the cap and the closing answers
// that do it.
func TestHTTPIdleFloodLeavesRoomForTokens(t *testing.T) {
	const flood, maxConns = 1100, 100
	// The flood's own ends live in this process too.
	limitOpenFiles(t, flood+1024)
	lim := noTimeouts
	lim.MaxConns = maxConns
	// Silent connections handed over at once, as the kernel does once it
	// has held them for HoldSilent.
	lim.HoldSilent = -1
	f := newHTTPFixtureLimits(t, lim)

	asked, silent := openFlood(t, f.addr, flood)

	// Connections are accepted in the order they were made, so this one
	// is accepted after the whole flood.
	c := httpClient(t, f.url, tokFamily)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := c.ListTools(ctx, mcpgo.ListToolsRequest{}); err != nil {
		t.Fatalf("authorised tools/list under the flood: %v", err)
	}

	for i, c := range asked {
		got := readToClose(t, c, fmt.Sprintf("connection %d that sent a request without a token", 2*i))
		if got != "" && !strings.HasPrefix(got, "HTTP/1.1 401 ") {
			t.Fatalf("flood connection %d got %q", 2*i, got)
		}
	}
	// Oldest first: all silent connections but the newest maxConns are
	// gone (the authorised client's own connection only makes it more).
	for i, c := range silent[:len(silent)-maxConns] {
		if got := readToClose(t, c, fmt.Sprintf("silent connection %d", 2*i+1)); got != "" {
			t.Fatalf("silent connection %d got %q", 2*i+1, got)
		}
	}
}

// openFlood opens n connections without a token, in order: the even ones
// send a request (which gets a 401) and then idle without reading, the odd
// ones send nothing. They stay open on this side until the test ends.
func openFlood(tb testing.TB, addr string, n int) (asked, silent []net.Conn) {
	tb.Helper()
	req := rawRequest("POST", HTTPPath, addr, "", initBody)
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, hangGuard)
		if err != nil {
			// Past the open-file budget: the server keeps what it was sent.
			tb.Fatalf("opening flood connection %d: %v", i, err)
		}
		tb.Cleanup(func() { c.Close() })
		if i%2 == 1 {
			silent = append(silent, c)
			continue
		}
		// The server may already have closed it to make room; the
		// write then fails, or goes unread.
		io.WriteString(c, req)
		asked = append(asked, c)
	}
	return asked, silent
}

// An authorised connection idling between requests survives a flood of
// connections without a token (some silent, some refused with 401):
// those are closed first.
func TestHTTPAuthorisedIdleConnectionOutlastsFlood(t *testing.T) {
	lim := noTimeouts
	lim.MaxConns = 8
	lim.HoldSilent = -1 // as after the kernel held them
	f := newHTTPFixtureLimits(t, lim)
	c := dialRaw(t, f.addr)
	br := bufio.NewReader(c)
	ask := func(i int) {
		t.Helper()
		if _, err := io.WriteString(c, rawRequest("POST", HTTPPath, f.addr, "Bearer "+tokFamily, initBody)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		c.SetReadDeadline(time.Now().Add(hangGuard))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	ask(0)
	var flood []net.Conn
	for i := range 50 {
		fc := dialRaw(t, f.addr)
		if i%2 == 0 {
			io.WriteString(fc, rawRequest("POST", HTTPPath, f.addr, "", initBody))
		}
		flood = append(flood, fc)
	}
	// One more whose accept follows every flood connection's.
	last := dialRaw(t, f.addr)
	if _, err := io.WriteString(last, rawRequest("POST", HTTPPath, f.addr, "Bearer "+tokWork, initBody)); err != nil {
		t.Fatal(err)
	}
	last.SetReadDeadline(time.Now().Add(hangGuard))
	if resp, err := http.ReadResponse(bufio.NewReader(last), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a new authorised connection after the flood: %v", err)
	}
	ask(1)
	// Every refused connection is gone, and all silent ones but the newest
	// MaxConns (silent ones close only to make room, oldest first).
	silent := 0
	for i := len(flood) - 1; i >= 0; i-- {
		if i%2 == 1 {
			if silent++; silent <= lim.MaxConns {
				continue
			}
		}
		readToClose(t, flood[i], fmt.Sprintf("flood connection %d", i))
	}
}

// openStream opens a GET (SSE) stream and returns its response.
func openStream(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	// A transport of its own: each stream is one connection.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := (&http.Client{Transport: tr}).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPStreamCapPerToken(t *testing.T) {
	lim := noTimeouts
	lim.MaxStreamsPerToken = 3
	f := newHTTPFixtureLimits(t, lim)
	var streams []*http.Response
	for i := range lim.MaxStreamsPerToken {
		resp := openStream(t, f.url, tokFamily)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: status %d", i, resp.StatusCode)
		}
		streams = append(streams, resp)
	}
	over := openStream(t, f.url, tokFamily)
	if over.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream over the cap: status %d, want 429", over.StatusCode)
	}
	body, _ := io.ReadAll(over.Body)
	if over.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "at most 3") {
		t.Fatalf("stream over the cap: Retry-After %q, %q", over.Header.Get("Retry-After"), body)
	}

	// Another token, and the same token's calls, are unaffected.
	if resp := openStream(t, f.url, tokWork); resp.StatusCode != 200 {
		t.Fatalf("the other token's stream: %d", resp.StatusCode)
	}
	c := httpClient(t, f.url, tokFamily)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := c.ListTools(ctx, mcpgo.ListToolsRequest{}); err != nil {
		t.Fatalf("a call while the token's streams are at the cap: %v", err)
	}

	// A closed stream gives its slot back.
	streams[0].Body.Close()
	deadline := time.Now().Add(hangGuard)
	for {
		resp := openStream(t, f.url, tokFamily)
		if resp.StatusCode == 200 {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no stream slot came back after one closed: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPRequestCapPerToken(t *testing.T) {
	lim := noTimeouts
	lim.MaxRequestsPerToken = 2
	f := newHTTPFixtureLimits(t, lim)
	block := make(chan struct{})
	f.family.mu.Lock()
	f.family.block = block
	f.family.mu.Unlock()
	c := httpClient(t, f.url, tokFamily)

	// Two fetch_media calls wait in the host, holding the token's slots.
	var wg sync.WaitGroup
	errs := make(chan error, lim.MaxRequestsPerToken)
	for range lim.MaxRequestsPerToken {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := mcpgo.CallToolRequest{}
			req.Params.Name = registry.FetchMedia
			req.Params.Arguments = map[string]any{"mediaRef": "tg_Missing00001"}
			_, err := c.CallTool(ctx, req)
			errs <- err
		})
	}
	deadline := time.Now().Add(hangGuard)
	for len(f.family.Calls()) < lim.MaxRequestsPerToken {
		if time.Now().After(deadline) {
			close(block)
			t.Fatalf("the calls did not reach the host: %v", f.family.Calls())
		}
		time.Sleep(5 * time.Millisecond)
	}

	resp := post(t, f.url, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tokFamily) })
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		close(block)
		t.Fatalf("a third request in flight: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post(t, f.url, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tokWork) }); resp.StatusCode != 200 {
		close(block)
		t.Fatalf("the other token while this one is at its cap: %d", resp.StatusCode)
	}

	close(block)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call holding a slot: %v", err)
		}
	}
	if resp := post(t, f.url, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tokFamily) }); resp.StatusCode != 200 {
		t.Fatalf("after the calls ended: %d", resp.StatusCode)
	}
}

func TestHTTPServerTimeoutsAndHeaderCap(t *testing.T) {
	f := newHTTPFixtureLimits(t, HTTPLimits{ReadHeaderTimeout: 50 * time.Millisecond, IdleTimeout: 50 * time.Millisecond, MaxHeaderBytes: 4096})

	// A connection that sends nothing is closed after ReadHeaderTimeout.
	silent := dialRaw(t, f.addr)
	if got := readToClose(t, silent, "silent connection"); got != "" {
		t.Errorf("silent connection got %q", got)
	}

	// An authorised one that idles after its answer, after IdleTimeout.
	c := dialRaw(t, f.addr)
	if _, err := io.WriteString(c, rawRequest("POST", HTTPPath, f.addr, "Bearer "+tokFamily, initBody)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(hangGuard))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("authorised request: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if rest := readToCloseFrom(t, c, br, "idle authorised connection"); rest != "" {
		t.Errorf("idle connection got %q", rest)
	}

	// Headers past MaxHeaderBytes: 431.
	big := post(t, f.url, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+tokFamily)
		r.Header.Set("X-Padding", strings.Repeat("a", 64<<10))
	})
	if big.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized headers: %d", big.StatusCode)
	}
}

func TestDefaultHTTPLimits(t *testing.T) {
	d := DefaultHTTPLimits()
	if d.ReadHeaderTimeout != DefaultReadHeaderTimeout || d.IdleTimeout != DefaultIdleTimeout ||
		d.MaxHeaderBytes != DefaultMaxHeaderBytes || d.MaxConns != DefaultMaxConns ||
		d.MaxStreamsPerToken != DefaultMaxStreamsPerToken || d.MaxRequestsPerToken != DefaultMaxRequestsPerToken {
		t.Fatalf("%+v", d)
	}
	if got := (HTTPLimits{MaxConns: 7}).withDefaults(); got.MaxConns != 7 || got.IdleTimeout != DefaultIdleTimeout {
		t.Errorf("a set field is kept, the others defaulted: %+v", got)
	}
}

// A session that goes quiet has its state swept after SessionIdleTTL, and
// an open stream is pinged every Heartbeat, which frees the slot of a
// client that is gone.
func TestHTTPSessionsIdleOutAndStreamsArePinged(t *testing.T) {
	lim := noTimeouts
	lim.SessionIdleTTL, lim.Heartbeat = time.Second, 50*time.Millisecond
	swept := make(chan struct{}, 16)
	f := newHTTPFixtureLog(t, lim, slog.New(&watchHandler{msg: "Sweeping expired session", seen: swept}))

	post := func(session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokFamily)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", initBody)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := post(session, list); resp.StatusCode != 200 {
		t.Fatalf("a call in the new session: %d", resp.StatusCode)
	}
	// Asking would keep it alive: wait for the sweeper's word instead.
	select {
	case <-swept:
	case <-time.After(hangGuard):
		t.Fatal("the idle session was never swept")
	}
	// Session ids are not kept (mcp-go's stateless ids): the client that
	// comes back is served, its per-session state made afresh.
	if resp := post(session, list); resp.StatusCode != 200 {
		t.Fatalf("a call with the swept session's id: %d", resp.StatusCode)
	}

	stream := openStream(t, f.url, tokFamily)
	if stream.StatusCode != 200 {
		t.Fatalf("stream: %d", stream.StatusCode)
	}
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"method":"ping"`) {
				got <- sc.Text()
				return
			}
		}
	}()
	select {
	case <-got:
	case <-time.After(hangGuard):
		t.Fatal("no ping on an open stream")
	}
}

// watchHandler signals seen each time a record with message msg is logged.
type watchHandler struct {
	msg  string
	seen chan struct{}
}

func (h *watchHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *watchHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h *watchHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *watchHandler) WithGroup(string) slog.Handler      { return h }
