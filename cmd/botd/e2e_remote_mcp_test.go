package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/format"
	"github.com/botd-dev/botd/internal/testwait"
)

const remoteMCPConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
agent:
  mcp_servers:
    house:
      url: "%s"
      headers: {Authorization: "Bearer ${HA_TOKEN}"}
      allow_private: %v
      tools: [state]
      groups: [home]
groups:
  - {folder: home, name: Home, chat: "telegram:-100", main: true}
  - {folder: family, name: Family, chat: "telegram:-200"}
`

// The real daemon with a remote MCP server over Streamable HTTP (mcp-go's
// server on loopback, allowed as private) behind a bearer token from the
// environment, offered to the home group only: the model calls its tool
// in the home group and is shown its answer as a stranger's words; the
// family group's request lists no such tool; the token never reaches the
// log. The same server without allow_private is refused with a sentence
// by botd config check, and a wrong token by botd doctor.
func TestRemoteMCPServerEndToEnd(t *testing.T) {
	const token = "ha-e2e-token-0123456789"
	t.Setenv("HA_TOKEN", token)
	var mu sync.Mutex
	var auths []string
	ms := server.NewMCPServer("house", "1")
	ms.AddTool(mcpgo.NewTool("state"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("Lights: <on> in the kitchen"), nil
	})
	ms.AddTool(mcpgo.NewTool("unlock_door"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultError("must never be offered"), nil
	})
	h := server.NewStreamableHTTPServer(ms)
	house := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(house.Close)

	type seen struct{ group, tools, result string }
	var reqs []seen
	wire := &fakeModel{t: t, wire: "openai"}
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		req := readChat(body)
		group := "family"
		if strings.Contains(req.System, "(Home on") {
			group = "home"
		}
		s := seen{group: group, tools: string(body)}
		if req.LastRole == "tool" {
			s.result = req.LastText
		}
		mu.Lock()
		reqs = append(reqs, s)
		mu.Unlock()
		switch {
		case req.LastRole == "tool":
			wire.text(w, "The house says: "+html.UnescapeString(req.LastText))
		case strings.Contains(string(body), `"house__state"`):
			wire.toolCall(w, "house__state", `{}`)
		default:
			wire.text(w, "I have no house tools here.")
		}
	}))
	t.Cleanup(model.Close)

	dir := t.TempDir()
	tg := telegramtest.New(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(remoteMCPConfig, telegramtest.Token, tg.URL(), model.URL, house.URL+"/mcp", true))
	p := startBotd(t, dir, "run", "--config", "botd.yaml")
	p.waitLog(t, "botd running")

	me := telegramtest.Person(42, "Me")
	ask := func(chat int64, name string, id int, text, want string) string {
		t.Helper()
		sent := len(tg.Sent())
		u := telegramtest.Text(telegramtest.Group(chat, name), me, id, text)
		u.Message.Date = int(time.Now().Unix())
		tg.Enqueue(u)
		var got string
		testwait.Within(t, 60*time.Second, "the answer to "+text, func() bool {
			for _, s := range tg.Sent()[sent:] {
				if s.Method == "sendMessage" && s.ChatID == chat {
					shown, _, _ := tg.Shown(s.ChatID, s.MessageID)
					got, _ = format.TelegramText(shown)
					return strings.Contains(got, want)
				}
			}
			return false
		})
		return got
	}
	answer := ask(-100, "Home", 11, "are the lights on?", "The house says")
	if !strings.Contains(answer, "Lights: <on> in the kitchen") {
		t.Errorf("home's answer = %q", answer)
	}
	ask(-200, "Family", 12, "@Andy are the lights on?", "no house tools")

	mu.Lock()
	var homeResult string
	for _, s := range reqs {
		switch {
		case s.group == "family" && strings.Contains(s.tools, "house__"):
			t.Errorf("the family group was offered the house's tools")
		case s.group == "home" && strings.Contains(s.tools, "house__unlock_door"):
			t.Errorf("a tool outside the allow-list was offered")
		case s.group == "home" && s.result != "":
			homeResult = s.result
		}
	}
	for _, a := range auths {
		if a != "Bearer "+token {
			t.Errorf("a request to the house carried Authorization %q", a)
		}
	}
	mu.Unlock()
	for _, want := range []string{`The tool server \"house\" answered`, `<mcp_result server=\"house\" tool=\"state\">`, "Lights: &lt;on&gt;"} {
		if !strings.Contains(homeResult, strings.ReplaceAll(want, `\"`, `"`)) {
			t.Errorf("the model was shown %q; it lacks %s", homeResult, want)
		}
	}
	if strings.Contains(p.Logs(), token) {
		t.Error("the bearer token reached the log")
	}
	p.stop(t)

	// Without allow_private the loopback address is refused with a
	// sentence before anything is asked.
	bad := t.TempDir()
	writeFile(t, filepath.Join(bad, "botd.yaml"), fmt.Sprintf(remoteMCPConfig, telegramtest.Token, tg.URL(), model.URL, house.URL+"/mcp", false))
	out, err := exec.Command(botdBin, "config", "check", "--config", filepath.Join(bad, "botd.yaml")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "agent.mcp_servers.house.url: botd does not open 127.0.0.1: it is a loopback address (this machine) (for a server on your own network, set allow_private: true") {
		t.Errorf("config check without allow_private: %v\n%s", err, out)
	}
	// botd doctor asks the server as a run would: a wrong token is said.
	mu.Lock()
	before := len(auths)
	mu.Unlock()
	cmd := exec.Command(botdBin, "doctor", "--config", "botd.yaml")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "HA_TOKEN=wrong", "BOTD_CONFIG=")
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "FAIL MCP server house: the server refused botd's credentials (401 Unauthorized)") {
		t.Errorf("doctor with a wrong token:\n%s", out)
	}
	mu.Lock()
	if len(auths) == before {
		t.Error("doctor did not ask the server")
	}
	mu.Unlock()
	cmd = exec.Command(botdBin, "doctor", "--config", "botd.yaml")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "BOTD_CONFIG=")
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "OK   MCP server house: answered with 2 tools; state offered") {
		t.Errorf("doctor with the right token:\n%s", out)
	}
}
