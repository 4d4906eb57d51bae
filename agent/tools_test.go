package agent

import (
	"github.com/botd-dev/botd/store/storetest"
	"github.com/botd-dev/botd/tools"

	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/llm"
)

// fakeMCPEnv makes the test binary act as a stdio MCP server (see
// TestMain), so the default tool source is tested with real child
// processes without building botd.
const fakeMCPEnv = "BOTD_AGENT_FAKE_MCP"

func TestMain(m *testing.M) {
	box.Main() // fetch_media's parsers run in children of the test binary
	if os.Getenv(fakeMCPEnv) != "" {
		serveFakeMCP()
		return
	}
	os.Exit(storetest.Main(m))
}

// serveFakeMCP exposes whoami (its argv and one env var), echo and a tool
// that must stay hidden by the allow-list.
func serveFakeMCP() {
	s := server.NewMCPServer("fake", "1")
	s.AddTool(mcpgo.NewTool("whoami"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(strings.Join(os.Args[1:], " ") + " | " + os.Getenv("FAKE_TOKEN") + os.Getenv("SECRET_API_KEY")), nil
	})
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	s.AddTool(mcpgo.NewTool("rm_rf"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultError("must never be reachable"), nil
	})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// The default tool source serves botd's own tools in-process over the
// media caller (no child process) and starts the extra servers as child
// processes, exposes the extra servers' allowed tools as <name>__<tool>
// only, keeps the daemon's secrets from them, and routes calls right.
func TestDefaultToolSource(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECRET_API_KEY", "sk-secret")
	dir := t.TempDir()
	host := &fakeHost{groupDir: filepath.Join(dir, "family"), fetches: map[string]int{}}
	var asked []string
	a := New(Options{
		GroupsDir: dir,
		ToolOptions: ToolOptions{Media: func(group string) tools.Caller { asked = append(asked, group); return host },
			ExtraMCP: map[string]MCPServer{
				"notes":  {Command: exe, Args: []string{"notes-server"}, Env: map[string]string{"FAKE_TOKEN": "t0k", fakeMCPEnv: "1"}, Tools: []string{"whoami", "echo"}},
				"closed": {Command: exe, Tools: nil}, // nothing allowed: never started
			}},
	})
	ctx := context.Background()
	sess, err := a.tools.defaultTools(ctx, &groups.Group{Folder: "family"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	names := toolNames(sess.Tools())
	slices.Sort(names)
	want := []string{"cancel_task", "fetch_media", "forget", "list_chats", "list_media", "list_tasks", "notes__echo", "notes__whoami", "pause_task",
		"read_messages", "remember", "resume_task", "schedule_task", "search_messages", "send_media", "send_message"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	call := func(name, args string) string {
		t.Helper()
		res, err := sess.Call(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, p := range res.Parts {
			if p.Kind == tools.PartText {
				b.WriteString(p.Text)
			}
		}
		if res.IsError {
			return "error: " + b.String()
		}
		return b.String()
	}
	if got := call("list_media", `{}`); !strings.Contains(got, "No media") {
		t.Errorf("list_media = %q", got)
	}
	if !slices.Equal(asked, []string{"family"}) {
		t.Errorf("media caller asked for %v, want [family]", asked)
	}
	// The extra server gets only what it is given, never the daemon's
	// environment.
	if got := call("notes__whoami", `{}`); got != untrusted("notes", "whoami", "notes-server | t0k") {
		t.Errorf("extra server argv/env = %q", got)
	}
	if got := call("notes__echo", `{"text":"hi"}`); got != untrusted("notes", "echo", "echo: hi") {
		t.Errorf("echo = %q", got)
	}
	if got := call("notes__rm_rf", `{}`); !strings.Contains(got, "no tool called") {
		t.Errorf("hidden tool reachable: %q", got)
	}
}

// A server that does not start is left out; the rest still work.
func TestBrokenMCPServerIsLeftOut(t *testing.T) {
	a := New(Options{ToolOptions: ToolOptions{ExtraMCP: map[string]MCPServer{
		"ghost": {Command: filepath.Join(t.TempDir(), "no-such-binary"), Tools: []string{"x"}},
	}}})
	sess, err := a.tools.defaultTools(context.Background(), &groups.Group{Folder: "family"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if n := len(sess.Tools()); n != 0 {
		t.Errorf("tools from a missing server: %d", n)
	}
}

// Tool results become model parts: images as file-backed image parts
// (text when the model is blind), blobs saved, text resources inline.
func TestResultParts(t *testing.T) {
	ws := testWorkspace(t)
	png := tinyPNG(t, color.RGBA{R: 9, A: 255})
	b64 := base64.StdEncoding.EncodeToString(png)
	res := tools.PartsResult(
		tools.Text("Image ref:tg_x: cat.png"),
		tools.Image(b64, "image/png"),
		tools.TextResource("file:///notes.txt", "text/plain", "hello"),
		tools.BlobResource("file:///a.pdf", "application/pdf", base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 tiny"))),
	)
	parts := resultParts(context.Background(), ws, res, llm.Capabilities{Vision: true, Documents: true}, nil)
	if len(parts) != 4 || parts[0].Text != "Image ref:tg_x: cat.png" {
		t.Fatalf("parts = %+v", parts)
	}
	img := parts[1]
	if img.Kind != llm.PartMedia || img.Media.MIME != "image/png" || img.Media.Data != "" || !strings.Contains(img.Media.Path, filepath.FromSlash(inlineDir)) {
		t.Fatalf("image part = %+v", img.Media)
	}
	if b, _ := os.ReadFile(img.Media.Path); string(b) != string(png) {
		t.Error("image file does not hold the image")
	}
	if !strings.Contains(parts[2].Text, "hello") {
		t.Errorf("text resource = %q", parts[2].Text)
	}
	if parts[3].Kind != llm.PartMedia || parts[3].Media.MIME != "application/pdf" {
		t.Errorf("pdf = %+v", parts[3])
	}
	// The same image again reuses the file; a blind model gets text.
	again := resultParts(context.Background(), ws, res, llm.Capabilities{}, nil)
	if again[1].Kind != llm.PartText || !strings.Contains(again[1].Text, "cannot look at images") {
		t.Errorf("blind image part = %+v", again[1])
	}
	if !strings.Contains(again[3].Text, "saved in the group folder as media/inline/") {
		t.Errorf("pdf for a model without documents = %q", again[3].Text)
	}
	entries, _ := os.ReadDir(filepath.Join(ws.Root, filepath.FromSlash(inlineDir)))
	if len(entries) != 2 {
		t.Errorf("inline dir has %d files, want 2 (image and pdf, deduplicated)", len(entries))
	}
	bad := resultParts(context.Background(), ws, tools.PartsResult(tools.Image("!!!", "image/png")), llm.Capabilities{Vision: true}, nil)
	if bad[0].Kind != llm.PartText {
		t.Errorf("broken base64 = %+v", bad[0])
	}
}

// Extra servers through ConnectMCP with an in-process client: prefixing
// keeps them from shadowing botd's tools.
func TestConnectMCPPrefixesAndAllowList(t *testing.T) {
	mk := func(names ...string) *client.Client {
		s := server.NewMCPServer("x", "1")
		for _, n := range names {
			s.AddTool(mcpgo.NewTool(n), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText("from " + n), nil
			})
		}
		c, err := client.NewInProcessClient(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	sess := ConnectMCP(ctx, nil,
		MCPConn{Client: mk("fetch_media", "list_media"), AllowAll: true},
		MCPConn{Name: "web", Client: mk("fetch_media", "search"), Allow: []string{"fetch_media"}},
	)
	defer sess.Close()
	names := toolNames(sess.Tools())
	if !slices.Equal(names, []string{"fetch_media", "list_media", "web__fetch_media"}) {
		t.Errorf("tools = %v", names)
	}
	res, err := sess.Call(ctx, "web__fetch_media", nil)
	if err != nil || res.Parts[0].Text != untrusted("web", "fetch_media", "from fetch_media") {
		t.Errorf("call = %+v, %v", res, err)
	}
	for _, tl := range sess.Tools() {
		var schema map[string]any
		if err := json.Unmarshal(tl.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s schema = %s", tl.Name, tl.Parameters)
		}
	}
}

// barrierTools answers a call only once n calls are in flight together, so
// a test hangs (and times out) unless calls run in parallel.
type barrierTools struct {
	n       int
	arrived chan struct{}
}

func (b *barrierTools) Tools() []llm.Tool {
	return []llm.Tool{{Name: "slow", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (b *barrierTools) Call(ctx context.Context, name string, args json.RawMessage) (*tools.Result, error) {
	b.arrived <- struct{}{}
	for len(b.arrived) < b.n {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return tools.TextResult("done " + string(args)), nil
}

func (b *barrierTools) Close() error { return nil }

func TestToolCallsRunInParallel(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		if n == 1 {
			return &llm.Result{Parts: []llm.Part{
				llm.ToolCallPart("a", "slow", json.RawMessage(`{"i":1}`)),
				llm.ToolCallPart("b", "slow", json.RawMessage(`{"i":2}`)),
				llm.ToolCallPart("c", "slow", json.RawMessage(`{"i":3}`)),
			}, StopReason: llm.StopToolUse}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		var got []string
		for _, p := range last.Parts {
			got = append(got, p.ToolResult.CallID+"="+p.ToolResult.Content[0].Text)
		}
		return textResult(strings.Join(got, ",")), nil
	})
	bt := &barrierTools{n: 3, arrived: make(chan struct{}, 3)}
	h := newHarness(t, f, func(o *Options) {
		o.ToolSource = func(ctx context.Context, g *groups.Group) (ToolSession, error) { return bt, nil }
		// A hang guard, not a bound the calls must beat: they finish as
		// soon as all three run at once, however loaded the machine.
		o.Run.Timeout = chantest.HangGuard
	})
	h.start()
	h.say(famChat, "Alice", "@Andy do three things")
	h.idle()
	want := `a=done {"i":1},b=done {"i":2},c=done {"i":3}`
	if got := sentTexts(h.tg.Sent()); len(got) != 1 || got[0] != want {
		t.Errorf("sent %q, want results in call order %q", got, want)
	}
}
