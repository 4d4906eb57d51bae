package mcp

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	registry "github.com/botd-dev/botd/tools"
)

const (
	tokFamily = "family-token-0123456789abcdef"
	tokWork   = "work-token-0123456789abcdef00"
)

type httpFixture struct {
	url    string
	addr   string // host:port of the listener, for raw connections
	family *fakeHost
	work   *fakeHost
}

func newHTTPFixture(t *testing.T) *httpFixture {
	t.Helper()
	return newHTTPFixtureLimits(t, HTTPLimits{})
}

// newHTTPFixtureLimits serves the family and work groups through Serve on
// a loopback listener, so the server's own timeouts and caps apply.
func newHTTPFixtureLimits(t *testing.T, lim HTTPLimits) *httpFixture {
	t.Helper()
	return newHTTPFixtureLog(t, lim, testLogger(t))
}

func newHTTPFixtureLog(t *testing.T, lim HTTPLimits, log *slog.Logger) *httpFixture {
	t.Helper()
	f := &httpFixture{family: newFakeHost(t, "family"), work: newFakeHost(t, "work")}
	h, err := NewHTTPHandler(HTTPOptions{
		Addr:   "127.0.0.1:8765",
		Tokens: map[string]string{tokFamily: "family", tokWork: "work"},
		Servers: map[string]*Server{
			"family": newTestServer(t, f.family, 0),
			"work":   newTestServer(t, f.work, 0),
		},
		AllowedOrigins: []string{"https://claude.example"},
		Limits:         lim,
		Log:            log,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.addr = serveLoopback(t, h)
	f.url = "http://" + f.addr + HTTPPath
	return f
}

// serveLoopback runs Serve on a fresh loopback listener until the test
// ends, and returns its address.
func serveLoopback(tb testing.TB, h http.Handler) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func httpClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	return c
}

func TestHTTPTokenReachesOnlyItsGroup(t *testing.T) {
	f := newHTTPFixture(t)
	for _, tc := range []struct {
		token string
		host  *fakeHost
		other *fakeHost
	}{
		{tokFamily, f.family, f.work},
		{tokWork, f.work, f.family},
	} {
		c := httpClient(t, f.url, tc.token)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		cancel()
		// 14 tools (the 3 conversation tools among them) plus the generation
		// tools the test server offers.
		if err != nil || len(tools.Tools) != 19 {
			t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
		}
		before := len(tc.other.Served())
		res := callTool(t, c, registry.SendMessage, map[string]any{"text": "hi"})
		texts, _, _ := parts(t, res)
		if res.IsError || !strings.Contains(texts[0], "telegram:-100"+tc.host.group) {
			t.Fatalf("%s: %v %q", tc.host.group, res.IsError, texts)
		}
		if got := tc.host.Served(); len(got) == 0 || got[len(got)-1] != tc.host.group {
			t.Errorf("group %s did not serve its token's call: %v", tc.host.group, got)
		}
		if n := len(tc.other.Served()); n != before {
			t.Errorf("the %s token reached group %s", tc.host.group, tc.other.group)
		}
	}
}

func post(t *testing.T, url string, mutate func(*http.Request)) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	mutate(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestHTTPRefusals(t *testing.T) {
	f := newHTTPFixture(t)
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	tests := []struct {
		name      string
		mutate    func(*http.Request)
		status    int
		challenge string
	}{
		{"no token", func(*http.Request) {}, 401, `Bearer realm="botd"`},
		{"wrong scheme", func(r *http.Request) { r.Header.Set("Authorization", "Basic "+tokFamily) }, 401, "Bearer"},
		{"bad token", bearer("not-the-token-0123456789"), 401, `error="invalid_token"`},
		{"token prefix", bearer(tokFamily[:20]), 401, `error="invalid_token"`},
		{"token plus suffix", bearer(tokFamily + "x"), 401, `error="invalid_token"`},
		{"foreign host", func(r *http.Request) { bearer(tokFamily)(r); r.Host = "evil.example:8765" }, 403, ""},
		{"rebinding name", func(r *http.Request) { bearer(tokFamily)(r); r.Host = "127.0.0.1.nip.io" }, 403, ""},
		{"foreign origin", func(r *http.Request) { bearer(tokFamily)(r); r.Header.Set("Origin", "https://evil.example") }, 403, ""},
		{"null origin", func(r *http.Request) { bearer(tokFamily)(r); r.Header.Set("Origin", "null") }, 403, ""},
		{"foreign origin without token", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, 403, ""},
		{"good", bearer(tokFamily), 200, ""},
		{"good, lowercase scheme", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+tokWork) }, 200, ""},
		{"localhost host", func(r *http.Request) { bearer(tokFamily)(r); r.Host = "localhost:8765" }, 200, ""},
		{"localhost origin", func(r *http.Request) { bearer(tokFamily)(r); r.Header.Set("Origin", "http://localhost:5173") }, 200, ""},
		{"allowed origin", func(r *http.Request) { bearer(tokFamily)(r); r.Header.Set("Origin", "https://claude.example") }, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, f.url, tc.mutate)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, tc.challenge) || (tc.status == 401) != (got != "") {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
		})
	}
	if n := len(f.family.Calls()) + len(f.work.Calls()); n != 0 {
		t.Errorf("refused or initialize requests made %d IPC calls", n)
	}
	if resp := post(t, strings.TrimSuffix(f.url, HTTPPath)+"/other", bearer(tokFamily)); resp.StatusCode != 404 {
		t.Errorf("other path: %d", resp.StatusCode)
	}
}

func TestNewHTTPHandlerOptions(t *testing.T) {
	fam := newTestServer(t, newFakeHost(t, "family"), 0)
	servers := map[string]*Server{"family": fam}
	good := map[string]string{tokFamily: "family"}
	tests := []struct {
		name  string
		opts  HTTPOptions
		error string
	}{
		{"loopback v4", HTTPOptions{Addr: "127.0.0.1:8765", Tokens: good, Servers: servers}, ""},
		{"loopback v6", HTTPOptions{Addr: "[::1]:8765", Tokens: good, Servers: servers}, ""},
		{"localhost", HTTPOptions{Addr: "localhost:8765", Tokens: good, Servers: servers}, ""},
		{"all interfaces", HTTPOptions{Addr: ":8765", Tokens: good, Servers: servers}, "not a loopback"},
		{"wildcard", HTTPOptions{Addr: "0.0.0.0:8765", Tokens: good, Servers: servers}, "not a loopback"},
		{"lan", HTTPOptions{Addr: "192.168.1.5:8765", Tokens: good, Servers: servers}, "not a loopback"},
		{"name", HTTPOptions{Addr: "myhost:8765", Tokens: good, Servers: servers}, "not a loopback"},
		{"lan allowed", HTTPOptions{Addr: "192.168.1.5:8765", AllowNonLoopback: true, Tokens: good, Servers: servers}, ""},
		{"no port", HTTPOptions{Addr: "127.0.0.1", Tokens: good, Servers: servers}, "listen address"},
		{"no tokens", HTTPOptions{Addr: "127.0.0.1:1", Servers: servers}, "no tokens"},
		{"short token", HTTPOptions{Addr: "127.0.0.1:1", Tokens: map[string]string{"tiny-tok": "family"}, Servers: servers}, "shorter"},
		{"unknown group", HTTPOptions{Addr: "127.0.0.1:1", Tokens: map[string]string{tokWork: "work"}, Servers: servers}, `"work"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHTTPHandler(tc.opts)
			if tc.error == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Fatalf("err %v, want %q", err, tc.error)
			}
			for tok := range tc.opts.Tokens {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("error leaks the token: %v", err)
				}
			}
		})
	}
}

func TestHTTPHostCheckNonLoopback(t *testing.T) {
	h := &httpHandler{listenHost: "192.168.1.5", hosts: []string{"botd.lan"}}
	for host, want := range map[string]bool{
		"192.168.1.5:8765": true, "botd.lan": true, "BOTD.lan:80": true, "localhost": true, "[::1]:8765": true,
		"127.0.0.2": true, "evil.example": false, "": false, "192.168.1.6": false,
	} {
		if got := h.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestServeShutsDownOnCancel(t *testing.T) {
	f := newHTTPFixture(t)
	h, err := NewHTTPHandler(HTTPOptions{
		Addr:    "127.0.0.1:0",
		Tokens:  map[string]string{tokFamily: "family"},
		Servers: map[string]*Server{"family": newTestServer(t, f.family, 0)},
		Log:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h) }()

	// A client with an open session (and possibly a listening stream).
	url := "http://" + ln.Addr().String() + HTTPPath
	c := httpClient(t, url, tokFamily)
	res := callTool(t, c, registry.ListMedia, map[string]any{})
	if res.IsError {
		t.Fatalf("list_media over HTTP: %v", res.Content)
	}
	if !slices.Equal(f.family.Served(), []string{"family"}) {
		t.Errorf("served %v", f.family.Served())
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		t.Logf("shutdown took %v", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("still listening after shutdown")
	}
}
