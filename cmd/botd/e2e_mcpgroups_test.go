package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm/llmfake"
)

const mcpGroupsConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s"}
  model: {provider: fake, name: gpt-4.1}
mcp:
  http:
    listen: "%s"
    tokens:
      - {token: both-token-0123456789abc, groups: [family, work]}
      - {token: family-token-0123456789, group: family}
      - {token: reader-token-0123456789a, groups: [family, work], read_only: true}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
  - {folder: work, name: Work, chat: "telegram:-200", requires_trigger: true}
`

// syncLog keeps what a reader wrote, for the failure message.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) drain(r io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		l.mu.Lock()
		l.b.Write(buf[:n])
		l.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// heard collects the notifications an MCP client receives.
type heard struct {
	mu  sync.Mutex
	got []mcpgo.JSONRPCNotification
}

func (h *heard) add(n mcpgo.JSONRPCNotification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, n)
}

func (h *heard) updated(uri string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.got {
		if n.Method == mcpgo.MethodNotificationResourceUpdated && n.Params.AdditionalFields["uri"] == uri {
			return true
		}
	}
	return false
}

// startedMCP starts and initialises c under ctx, which its listening
// stream lives as long as.
func startedMCP(t *testing.T, ctx context.Context, c *client.Client, h *heard) {
	t.Helper()
	c.OnNotification(h.add)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initMCP(t, c)
}

func httpMCP(t *testing.T, ctx context.Context, addr, token string, h *heard) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient("http://"+addr+"/mcp", transport.WithContinuousListening(),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	startedMCP(t, ctx, c, h)
	return c
}

func resourceURIs(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.ListResources(ctx, mcpgo.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Resources {
		out = append(out, r.URI)
	}
	slices.Sort(out)
	return out
}

func readResource(t *testing.T, c *client.Client, uri string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	var b strings.Builder
	for _, ct := range res.Contents {
		if tc, ok := ct.(mcpgo.TextResourceContents); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func subscribe(t *testing.T, ctx context.Context, c *client.Client, uri string) {
	t.Helper()
	req := mcpgo.SubscribeRequest{}
	req.Params.URI = uri
	if err := c.Subscribe(ctx, req); err != nil {
		t.Fatalf("resources/subscribe %s: %v", uri, err)
	}
}

// One MCP client, several groups, end to end with the real binary and the
// fake Telegram: a token for family and work lists both chats (list_chats
// and resources/list) and reaches each by the group argument; the token of
// family alone is refused work with forbidden; a read_only token has no
// send_message and cannot call it; a client subscribed to a chat hears
// notifications/resources/updated when a message arrives there — over
// `botd mcp --http` and over stdio with --group family --group work.
func TestMCPSeveralGroupsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := llmfake.New(t, func(llmfake.Request) llmfake.Reply { return llmfake.Reply{Text: "Hi there."} })
	addr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(mcpGroupsConfig, telegramtest.Token, tg.URL(), model.URL+"/v1", addr))
	fam, work := telegramtest.Group(-100, "Family"), telegramtest.Group(-200, "Work")
	alice, bob := telegramtest.Person(41, "Alice"), telegramtest.Person(43, "Bob")
	now := func() int { return int(time.Now().Unix()) }
	tg.Enqueue(
		models.Update{Message: &models.Message{ID: 10, Chat: fam, From: &alice, Date: now(), Text: "dinner at eight"}},
		models.Update{Message: &models.Message{ID: 20, Chat: work, From: &bob, Date: now(), Text: "standup moved to ten"}},
	)
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	defer host.stop(t)
	host.waitLog(t, "botd running")

	srv := startBotd(t, dir, "mcp", "--http", "--config", "botd.yaml")
	defer srv.stop(t)
	servedAddr(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The token of two groups.
	var bothHeard heard
	both := httpMCP(t, ctx, addr, "both-token-0123456789abc", &bothHeard)
	testwait.Within(t, 60*time.Second, "both chats' messages are stored", func() bool {
		text := resultText(callTool(t, both, "list_chats", nil))
		return strings.Count(text, "last message") == 2
	})
	text := resultText(callTool(t, both, "list_chats", nil))
	if !strings.Contains(text, "group family") || !strings.Contains(text, "group work") {
		t.Fatalf("list_chats of the two-group token:\n%s", text)
	}
	if got := resourceURIs(t, both); !slices.Equal(got, []string{"botd://chat/family", "botd://chat/work"}) {
		t.Fatalf("resources/list of the two-group token: %v", got)
	}
	if text := resultText(callTool(t, both, "read_messages", map[string]any{"group": "work"})); !strings.Contains(text, "standup moved to ten") ||
		strings.Contains(text, "dinner at eight") {
		t.Fatalf("read_messages of work:\n%s", text)
	}
	if res := callTool(t, both, "read_messages", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "group is required") {
		t.Fatalf("read_messages without a group on the two-group token: %s", resultText(res))
	}

	// The token of family alone.
	var famHeard heard
	one := httpMCP(t, ctx, addr, "family-token-0123456789", &famHeard)
	res := callTool(t, one, "read_messages", map[string]any{"group": "work"})
	if txt := resultText(res); !res.IsError || !strings.Contains(txt, "[forbidden]") || !strings.Contains(txt, "it may reach family") ||
		strings.Contains(txt, "standup") {
		t.Fatalf("read_messages of work with the family token: %s", txt)
	}
	if got := resourceURIs(t, one); !slices.Equal(got, []string{"botd://chat/family"}) {
		t.Fatalf("resources/list of the family token: %v", got)
	}

	// The read-only token.
	var readerHeard heard
	reader := httpMCP(t, ctx, addr, "reader-token-0123456789a", &readerHeard)
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	tools, err := reader.ListTools(lctx, mcpgo.ListToolsRequest{})
	lcancel()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, no := range []string{"send_message", "send_media", "remember", "schedule_task"} {
		if slices.Contains(names, no) {
			t.Errorf("the read-only token is offered %s: %v", no, names)
		}
	}
	if !slices.Contains(names, "read_messages") || !slices.Contains(names, "fetch_media") {
		t.Errorf("the read-only token lacks the reads: %v", names)
	}
	sent := len(tg.Sent())
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	call := mcpgo.CallToolRequest{}
	call.Params.Name, call.Params.Arguments = "send_message", map[string]any{"group": "family", "text": "posted by a reader"}
	if r, err := reader.CallTool(cctx, call); err == nil && !r.IsError {
		t.Fatalf("send_message answered the read-only token: %s", resultText(r))
	}
	ccancel()

	// A new message reaches the client subscribed to its chat.
	subscribe(t, ctx, both, "botd://chat/work")
	tg.Enqueue(models.Update{Message: &models.Message{ID: 21, Chat: work, From: &bob, Date: now(), Text: "the report is due friday"}})
	testwait.Within(t, 60*time.Second, "notifications/resources/updated of botd://chat/work over HTTP", func() bool {
		return bothHeard.updated("botd://chat/work")
	})
	if text := readResource(t, both, "botd://chat/work"); !strings.Contains(text, "the report is due friday") ||
		!strings.Contains(text, `sender="Bob"`) {
		t.Fatalf("resources/read of work after the update:\n%s", text)
	}
	if bothHeard.updated("botd://chat/family") {
		t.Fatal("the client heard of family, to which it did not subscribe")
	}

	// Over stdio, two groups in one botd mcp.
	var stdioHeard heard
	sc, err := client.NewStdioMCPClient(botdBin, append(os.Environ(), "BOTD_CONFIG="), "mcp", "--group", "family", "--group", "work",
		"--config", filepath.Join(dir, "botd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc.OnNotification(stdioHeard.add)
	// NewStdioMCPClient starts the transport only: Start hands the
	// client its notifications.
	if err := sc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	var stdioLogs syncLog
	if r, ok := client.GetStderr(sc); ok {
		go stdioLogs.drain(r)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("botd mcp (stdio) logs:\n%s", stdioLogs.String())
			}
		})
	}
	initMCP(t, sc)
	if text := resultText(callTool(t, sc, "list_chats", nil)); !strings.Contains(text, "group family") || !strings.Contains(text, "group work") {
		t.Fatalf("list_chats over stdio:\n%s", text)
	}
	// The stdio client speaks 2026-07-28: it subscribes with a
	// subscriptions/listen stream, which botd mcp logs once it holds it.
	stop, err := sc.ListenAsync(ctx, mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{"botd://chat/family"}},
		func(err error) { t.Logf("subscriptions/listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	testwait.Within(t, 60*time.Second, "botd mcp holds the subscriptions/listen stream", func() bool {
		return strings.Contains(stdioLogs.String(), "mcp: subscriptions/listen")
	})
	tg.Enqueue(models.Update{Message: &models.Message{ID: 11, Chat: fam, From: &alice, Date: now(), Text: "bring the cake"}})
	testwait.Within(t, 60*time.Second, "notifications/resources/updated of botd://chat/family over stdio", func() bool {
		return stdioHeard.updated("botd://chat/family")
	})
	if text := readResource(t, sc, "botd://chat/family"); !strings.Contains(text, "bring the cake") {
		t.Fatalf("resources/read of family over stdio:\n%s", text)
	}
	if len(tg.Sent()) != sent {
		t.Fatalf("something was sent to a chat: %v", tg.Sent()[sent:])
	}
	// Nothing but the mark is in the IPC folders' top level: no token.
	for _, g := range []string{"family", "work"} {
		b, err := os.ReadFile(filepath.Join(dir, "data", "ipc", g, "chat.updated"))
		if err != nil {
			t.Fatalf("the chat mark of %s: %v", g, err)
		}
		if strings.Contains(string(b), "token") || strings.TrimSpace(string(b)) == "" {
			t.Fatalf("the chat mark of %s holds %q", g, b)
		}
	}
}
