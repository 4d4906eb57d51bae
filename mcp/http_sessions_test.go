package mcp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	registry "github.com/botd-dev/botd/tools"
)

// rawSession speaks Streamable HTTP by hand, so the test sees each status.
type rawSession struct {
	t     *testing.T
	url   string
	token string
	id    string
}

func (s *rawSession) do(method, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if method == http.MethodPost && s.id == "" {
		s.id = resp.Header.Get("Mcp-Session-Id")
	}
	return resp.StatusCode, string(b)
}

func (s *rawSession) initialize() {
	s.t.Helper()
	s.id = ""
	if code, body := s.do(http.MethodPost, initBody); code != 200 || s.id == "" {
		s.t.Fatalf("initialize: %d %s (session %q)", code, body, s.id)
	}
	if code, body := s.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != 202 {
		s.t.Fatalf("initialized: %d %s", code, body)
	}
}

const sendHi = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + registry.SendMessage + `","arguments":{"text":"hi"}}}`

// A token's sessions are bounded: one initialize past the bound closes
// that token's least recently used session, whose client is told 404 (the
// MCP answer for an unknown session), initialises again and goes on; the
// other token's sessions are not touched.
func TestHTTPSessionsBoundedPerToken(t *testing.T) {
	lim := noTimeouts
	lim.MaxSessionsPerToken = 3
	f := newHTTPFixtureLimits(t, lim)

	work := &rawSession{t: t, url: f.url, token: tokWork}
	work.initialize()
	fam := make([]*rawSession, 4)
	for i := range fam[:3] {
		fam[i] = &rawSession{t: t, url: f.url, token: tokFamily}
		fam[i].initialize()
	}
	// Using the first makes the second the least recently used.
	if code, body := fam[0].do(http.MethodPost, sendHi); code != 200 || !strings.Contains(body, "telegram:-100family") {
		t.Fatalf("a call in session 0: %d %s", code, body)
	}
	fam[3] = &rawSession{t: t, url: f.url, token: tokFamily}
	fam[3].initialize()

	code, body := fam[1].do(http.MethodPost, sendHi)
	if code != http.StatusNotFound {
		t.Fatalf("the least recently used session, closed for the bound, answered %d %s; want 404", code, body)
	}
	for _, i := range []int{0, 2, 3} {
		if code, body := fam[i].do(http.MethodPost, sendHi); code != 200 {
			t.Errorf("session %d, within the bound, answered %d %s", i, code, body)
		}
	}
	if code, body := work.do(http.MethodPost, sendHi); code != 200 || !strings.Contains(body, "telegram:-100work") {
		t.Errorf("the other token's session answered %d %s", code, body)
	}
	fam[1].initialize()
	if code, body := fam[1].do(http.MethodPost, sendHi); code != 200 || !strings.Contains(body, "telegram:-100family") {
		t.Errorf("after initialising again: %d %s", code, body)
	}

	// A session id is its token's: another token may not use it.
	stolen := &rawSession{t: t, url: f.url, token: tokWork, id: fam[3].id}
	if code, _ := stolen.do(http.MethodPost, sendHi); code != http.StatusNotFound {
		t.Errorf("the work token used a family session: %d", code)
	}
	// DELETE ends it; the id is unknown afterwards.
	if code, body := fam[3].do(http.MethodDelete, ""); code != 200 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, _ := fam[3].do(http.MethodPost, sendHi); code != http.StatusNotFound {
		t.Errorf("a deleted session answered %d", code)
	}
}

// legacyClient is mcp-go's client on a protocol version with sessions
// (those since 2026-07-28 have none, so nothing of theirs is kept).
func legacyClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = "2025-06-18"
	req.Params.ClientInfo = mcpgo.Implementation{Name: "botd-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if c.GetSessionId() == "" {
		t.Fatal("the 2025-06-18 client holds no session")
	}
	return c
}

// mcp-go's own client, told 404, reports the session ended; a new client
// on the same token then works.
func TestHTTPSessionClosedForTheBoundClientReinitialises(t *testing.T) {
	lim := noTimeouts
	lim.MaxSessionsPerToken = 1
	f := newHTTPFixtureLimits(t, lim)
	first := legacyClient(t, f.url, tokFamily)
	second := legacyClient(t, f.url, tokFamily)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := first.ListTools(ctx, mcpgo.ListToolsRequest{})
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("the displaced client's call: %v; want ErrSessionTerminated", err)
	}
	if _, err := second.ListTools(ctx, mcpgo.ListToolsRequest{}); err != nil {
		t.Fatalf("the newer client: %v", err)
	}
	again := legacyClient(t, f.url, tokFamily)
	res := callTool(t, again, registry.SendMessage, map[string]any{"text": "hi"})
	if texts, _, _ := parts(t, res); res.IsError || !strings.Contains(texts[0], "telegram:-100family") {
		t.Fatalf("after initialising again: %v %q", res.IsError, texts)
	}
}

// 10,000 initialize calls that never DELETE cost what the bound allows,
// not what they add up to: the heap after them is within a few MB of the
// heap after the first bound's worth.
func TestHTTPInitializeFloodHeapIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	lim := noTimeouts
	lim.MaxSessionsPerToken = 256
	f := newHTTPFixtureLimits(t, lim)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	initOnce := func() {
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokFamily)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("initialize: %d", resp.StatusCode)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for range 512 {
		initOnce()
	}
	base := heap()
	for range 10_000 {
		initOnce()
	}
	grown := int64(heap()) - int64(base)
	t.Logf("heap after 512 initialize calls %d KB; after 10,000 more %+d KB", base>>10, grown>>10)
	if grown > 4<<20 {
		t.Errorf("10,000 sessions beyond the bound grew the heap by %d KB", grown>>10)
	}
}

// Under a churn flood of connections without a token, every initialize of
// a client with a token is answered, each on a connection of its own. The
// flood: 160 connections at a time that say nothing for a moment, close
// and come again, and 8 that send requests without a token as fast as
// they are refused. Together they are far more than MaxConns; what the
// server does with them decides whether the client's connection is the
// one closed to make room.
func TestHTTPChurnFloodAnswersEveryAuthorisedInitialize(t *testing.T) {
	const silent, asking = 160, 8
	limitOpenFiles(t, 2*(silent+asking)+1024)
	lim := noTimeouts
	lim.MaxConns = 24
	f := newHTTPFixtureLimits(t, lim)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	req := rawRequest("POST", HTTPPath, f.addr, "", initBody)
	flood := func(ask bool) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := net.DialTimeout("tcp", f.addr, hangGuard)
			if err != nil {
				continue
			}
			if ask {
				io.WriteString(c, req)
				c.SetReadDeadline(time.Now().Add(hangGuard))
			} else {
				c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			}
			io.Copy(io.Discard, c)
			c.Close()
		}
	}
	for i := range silent + asking {
		wg.Add(1)
		go flood(i < asking)
	}
	defer func() { close(stop); wg.Wait() }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	failed := 0
	const calls = 300
	for i := range calls {
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokFamily)
		resp, err := client.Do(req)
		if err != nil {
			failed++
			t.Logf("initialize %d: %v", i, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			failed++
			t.Logf("initialize %d: %d", i, resp.StatusCode)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d authorised initialize calls failed under the churn flood", failed, calls)
	}
}
