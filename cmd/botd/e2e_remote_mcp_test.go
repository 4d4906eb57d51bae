package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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
		case req.LastRole == "tool" && strings.Contains(req.LastText, "Loaded house__state"):
			wire.toolCall(w, "house__state", `{}`)
		case req.LastRole == "tool":
			wire.text(w, "The house says: "+html.UnescapeString(req.LastText))
		case strings.Contains(string(body), `"house__state"`):
			wire.toolCall(w, "house__state", `{}`)
		case strings.Contains(string(body), `- house__state`):
			// Offered lazily: listed by load_tools.
			wire.toolCall(w, "load_tools", `{"names":["house__state"]}`)
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

const loginConfig = `
data_dir: ./data
groups_dir: ./groups
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "http://127.0.0.1:1/v1"}
  model: {provider: fake, name: gpt-4.1}
agent:
  mcp_servers:
    cloud:
      url: "%s/mcp"
      allow_private: true
      oauth: {flow: authorization_code, client_id: botd, redirect_uri: "%s"}
      tools: [search]
groups:
  - {folder: home, name: Home, chat: "telegram:-100", main: true}
`

// botd mcp-login with the real binary: it prints the authorization
// address, the test's browser signs in (the authorization server takes
// the code only with the verifier of its PKCE challenge), botd keeps the
// token, and botd doctor then reaches the server with it.
func TestRemoteMCPLoginEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var challenge, access string
	ms := server.NewMCPServer("cloud", "1")
	ms.AddTool(mcpgo.NewTool("search"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("found"), nil
	})
	mcpH := server.NewStreamableHTTPServer(ms)
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		challenge = q.Get("code_challenge")
		mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=c0de&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("code") != "c0de" || challenge == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		access = "at-login-e2e"
		fmt.Fprintf(w, `{"access_token":%q,"refresh_token":"rt","token_type":"Bearer","expires_in":3600}`, access)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := access != "" && r.Header.Get("Authorization") == "Bearer "+access
		mu.Unlock()
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	})
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://" + ln.Addr().String() + "/callback"
	ln.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(loginConfig, as.URL, redirect))

	doctor := func() string {
		cmd := exec.Command(botdBin, "doctor", "--config", "botd.yaml")
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "BOTD_CONFIG=")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := doctor(); !strings.Contains(out, "FAIL MCP server cloud: botd is not signed in to it") {
		t.Errorf("doctor before signing in:\n%s", out)
	}

	cmd := exec.Command(botdBin, "mcp-login", "cloud", "--timeout", "2m", "--config", "botd.yaml")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "BOTD_CONFIG=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	var printed strings.Builder
	var authURL string
	for authURL == "" && sc.Scan() {
		line := sc.Text()
		printed.WriteString(line + "\n")
		if s := strings.TrimSpace(line); strings.HasPrefix(s, as.URL+"/authorize?") {
			authURL = s
		}
	}
	if authURL == "" {
		t.Fatalf("mcp-login printed no authorization address:\n%s%s", printed.String(), stderr.String())
	}
	resp, err := http.Get(authURL) // the person's browser
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(printed.String(), "Signed in: the token is kept in") {
		t.Fatalf("mcp-login: %v\n%s%s", err, printed.String(), stderr.String())
	}
	if out := doctor(); !strings.Contains(out, "OK   MCP server cloud: answered with 1 tools; search offered") {
		t.Errorf("doctor after signing in:\n%s", out)
	}
}
