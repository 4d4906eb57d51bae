package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/pgtest"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/internal/box"
)

// botdBin is the botd binary built once for the end-to-end tests.
var botdBin string

func TestMain(m *testing.M) {
	box.Main() // in-process fetches run their parsers in children of the test binary
	dir, err := os.MkdirTemp("", "botd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	botdBin = filepath.Join(dir, "botd")
	// goolm, as `make build` does: Matrix's encrypted rooms, even under
	// a bare `go test`.
	args := []string{"build", "-race", "-tags", "goolm", "-o", botdBin, "."}
	if os.Getenv("BOTD_E2E_RACE") == "0" {
		// For latency figures: the race detector slows botd several-fold.
		args = []string{"build", "-tags", "goolm", "-o", botdBin, "."}
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build botd: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running botd process whose stderr is kept for assertions.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

func startBotd(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(botdBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BOTD_CONFIG=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("botd %s logs:\n%s", args[0], p.Logs())
		}
	})
	return p
}

func (p *proc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func (p *proc) waitLog(t *testing.T, substr string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(p.Logs(), substr) {
		select {
		case <-p.done:
			t.Fatalf("botd exited before logging %q:\n%s", substr, p.Logs())
		case <-deadline:
			t.Fatalf("botd did not log %q in time:\n%s", substr, p.Logs())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
	<-p.done
}

// stop sends SIGINT and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("botd did not stop on SIGINT")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("botd exited %d on SIGINT:\n%s", code, p.Logs())
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mcpStdio(t *testing.T, dir, cfg, group string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClient(botdBin, append(os.Environ(), "BOTD_CONFIG="), "mcp", "--group", group, "--config", filepath.Join(dir, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initMCP(t, c)
	return c
}

func initMCP(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "botd-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcpgo.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func resultText(r *mcpgo.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 3), uint8(x + y), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// noisyJPEG makes a JPEG that does not compress well, so it is big.
func noisyJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r.Read(img.Pix)
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// answeredMsg is a message the agent marks as handled in an earlier run:
// a fake model, like a real one, must not answer it again.
var answeredMsg = regexp.MustCompile(`(?s)<answered>.*?</answered>\n?|<message [^>]*from_you="true"[^>]*>.*?</message>\n?|<media_notes>.*?</media_notes>`)

// chatRequest is a chat model request (OpenAI or Anthropic wire) as the
// fake models read it.
type chatRequest struct {
	Model    string
	System   string // the OpenAI system message, or Anthropic's system
	User     string // the first user turn: the conversation
	Users    string // every user turn's text
	LastRole string
	LastText string // the last turn's text (a tool result's, for OpenAI)
}

func readChat(body []byte) chatRequest {
	var req struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	var c chatRequest
	if json.Unmarshal(body, &req) != nil {
		return chatRequest{Users: string(body)}
	}
	c.Model, c.System = req.Model, contentText(req.System)
	var users strings.Builder
	for i, m := range req.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "system":
			c.System = text
		case "user":
			if c.User == "" {
				c.User = text
			}
			users.WriteString(text)
		}
		if i == len(req.Messages)-1 {
			c.LastRole, c.LastText = m.Role, text
		}
	}
	c.Users = users.String()
	return c
}

// contentText is a content field's text: a string, or the text parts of
// an array.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// newText is what a chat model request asks about: the text of its user
// turns with the messages already answered, and the notes on media
// fetched before, taken out.
func newText(body []byte) string {
	return answeredMsg.ReplaceAllString(readChat(body).Users, "")
}
