package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/internal/testwait"
	registry "github.com/botd-dev/botd/tools"
)

// syncBuffer records what the server wrote to stdout.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stdioPair runs ServeStdio on pipes and returns a client on the other
// ends, everything the server wrote to stdout, and ServeStdio's result.
func stdioPair(t *testing.T, ctx context.Context, h *fakeHost) (*client.Client, *io.PipeWriter, *syncBuffer, <-chan error) {
	t.Helper()
	srv := newTestServer(t, h, 0)
	inR, inW := io.Pipe()   // client → server stdin
	outR, outW := io.Pipe() // server stdout → client
	stdout := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := ServeStdio(ctx, srv.MCPServer, inR, io.MultiWriter(outW, stdout))
		outW.Close()
		done <- err
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	return c, inW, stdout, done
}

func TestStdioAnswersWhileHostIsBusy(t *testing.T) {
	h := newFakeHost(t, "family")
	h.block = make(chan struct{}) // the host never answers fetch_media
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, stdin, stdout, done := stdioPair(t, ctx, h)

	start := time.Now()
	initClient(t, c)

	// A fetch stuck on the host must not hold up the protocol.
	fetchDone := make(chan struct{})
	go func() {
		defer close(fetchDone)
		req := mcpgo.CallToolRequest{}
		req.Params.Name = registry.FetchMedia
		req.Params.Arguments = map[string]any{"mediaRef": "tg_k3J9x2Qa7P"}
		c.CallTool(ctx, req)
	}()
	testwait.Until(t, "len(h.Calls()) == 1", func() bool { return len(h.Calls()) == 1 })

	// The stuck call never ends on its own, so a server that serialised
	// requests would hang here: the deadline is only a hang guard, and a
	// short one could be hit on a loaded machine by a server merely slow.
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	defer lcancel()
	tools, err := c.ListTools(lctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list while the host is busy: %v", err)
	}
	// 14 tools (the 3 conversation tools among them) plus the generation
	// tools the test server offers.
	if len(tools.Tools) != 19 {
		t.Fatalf("%d tools", len(tools.Tools))
	}
	t.Logf("initialize + tools/list with a stuck host call: %v", time.Since(start))

	// Closing stdin ends the server, and the stuck call is released.
	stdin.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio after stdin closed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio did not return after stdin closed")
	}
	close(h.block)
	<-fetchDone

	// Nothing but JSON-RPC ever reached stdout.
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	lines := 0
	for sc.Scan() {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		lines++
	}
	if lines < 2 {
		t.Errorf("only %d protocol lines on stdout", lines)
	}
}

func TestStdioReturnsOnCancel(t *testing.T) {
	h := newFakeHost(t, "family")
	ctx, cancel := context.WithCancel(context.Background())
	c, stdin, _, done := stdioPair(t, ctx, h)
	defer stdin.Close()
	initClient(t, c)
	res := callTool(t, c, registry.SendMessage, map[string]any{"text": "over stdio"})
	if res.IsError {
		t.Fatalf("send over stdio: %v", res.Content)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio did not return after ctx was cancelled")
	}
}
