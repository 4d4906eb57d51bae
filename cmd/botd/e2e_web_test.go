package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// webURLLine is the one line `botd run` prints for a person: the address
// of the web channel with the login token, on the start that created it.
var webURLLine = regexp.MustCompile(`^botd web: open (http://[^/\s]+)/login#token=([A-Za-z0-9_-]{40,})$`)

// webProc is botd run with its stdout kept line by line.
type webProc struct {
	*proc
	lines chan string
}

// startBotdEnv starts botd with exactly env (no inherited LLM keys) and
// hands out what it prints on stdout.
func startBotdEnv(t *testing.T, dir string, env []string, args ...string) *webProc {
	t.Helper()
	cmd := exec.Command(botdBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	return startWebCmd(t, cmd)
}

// startWebCmd starts cmd (botd run, possibly behind a wrapper) and hands
// out what it prints on stdout.
func startWebCmd(t *testing.T, cmd *exec.Cmd) *webProc {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &webProc{proc: &proc{cmd: cmd, done: make(chan struct{})}, lines: make(chan string, 16)}
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		<-outDone
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("botd logs:\n%s", p.Logs())
		}
	})
	return p
}

// urlLine waits for the address botd prints and returns base and token.
func (p *webProc) urlLine(t *testing.T) (string, string) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("botd printed nothing before it exited:\n%s", p.Logs())
		}
		m := webURLLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("botd printed %q, want the address with a login token", line)
		}
		return m[1], m[2]
	case <-time.After(90 * time.Second):
		t.Fatalf("botd printed no address in time:\n%s", p.Logs())
	}
	return "", ""
}

// minimalEnv is a fresh machine: a PATH and a home, and nothing else.
func minimalEnv(home string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "BOTD_CONFIG="}, extra...)
}

// webSession is a logged-in browser without the browser.
type webSession struct {
	t    *testing.T
	base string
	c    *http.Client
}

var (
	formCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	pageCSRF = regexp.MustCompile(`data-csrf="([^"]+)"`)
)

func webLogin(t *testing.T, base, token string) *webSession {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	s := &webSession{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	page := s.get("/login")
	m := formCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("login page without a form:\n%s", page)
	}
	resp, err := s.c.PostForm(base+"/login", url.Values{"csrf": {m[1]}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/r/main" {
		t.Fatalf("login ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	return s
}

func (s *webSession) get(path string) string {
	s.t.Helper()
	resp, err := s.c.Get(s.base + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
	}
	return string(b)
}

// post sends a message to the main room, as the page's script does.
func (s *webSession) post(text string) {
	s.t.Helper()
	m := pageCSRF.FindStringSubmatch(s.get("/r/main"))
	if m == nil {
		s.t.Fatal("room page without a CSRF token")
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", "Ann")
	mw.WriteField("text", text)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/r/main/messages", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-CSRF-Token", m[1])
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("post: %d", resp.StatusCode)
	}
}

type roomMessage struct {
	Seq       int64  `json:"seq"`
	From      string `json:"from"`
	Assistant bool   `json:"assistant"`
	Text      string `json:"text"`
}

// waitAnswer reads the main room's event stream until the assistant says
// something.
func (s *webSession) waitAnswer() roomMessage {
	s.t.Helper()
	c := *s.c
	c.Timeout = 90 * time.Second
	resp, err := c.Get(s.base + "/r/main/events?after=0")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m roomMessage
		if json.Unmarshal([]byte(data), &m) == nil && m.Assistant {
			return m
		}
	}
	s.t.Fatalf("the event stream ended without an answer: %v", sc.Err())
	return roomMessage{}
}

func exampleConfig(t *testing.T) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What `make run` does on a fresh clone with no environment: the example
// config, copied as is. botd stays up without any LLM key, prints one line
// with the address and a login token, serves the room, and both the page
// and the assistant's answer say which key to set.
func TestFreshConfigRunsWithoutAKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.yaml"), string(exampleConfig(t)))
	p := startBotdEnv(t, dir, minimalEnv(dir, "BOTD_WEB_LISTEN=127.0.0.1:0"), "run", "--config", "config.yaml")
	base, token := p.urlLine(t)
	p.waitLog(t, "botd running")

	s := webLogin(t, base, token)
	page := s.get("/r/main")
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENAI_BASE_URL", `id="composer"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the room page does not mention %s", want)
		}
	}
	s.post("hello, anyone there?")
	if ans := s.waitAnswer(); ans.From != "Andy" || !strings.Contains(ans.Text, "ANTHROPIC_API_KEY") {
		t.Fatalf("answer %+v, want one that says which key to set", ans)
	}
	select {
	case <-p.done:
		t.Fatalf("botd exited:\n%s", p.Logs())
	default:
	}
	if strings.Contains(p.Logs(), token) {
		t.Fatal("the login token reached the logs")
	}
	p.stop(t)
	var extra []string
	for line := range p.lines {
		extra = append(extra, line)
	}
	if len(extra) != 0 {
		t.Fatalf("botd printed more than the one line: %q", extra)
	}

	// The next start prints the address, not the token.
	p2 := startBotdEnv(t, dir, minimalEnv(dir, "BOTD_WEB_LISTEN=127.0.0.1:0"), "run", "--config", "config.yaml")
	select {
	case line := <-p2.lines:
		if strings.Contains(line, token) || !strings.HasPrefix(line, "botd web: open http://127.0.0.1:") {
			t.Fatalf("second start printed %q", line)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("no address on the second start:\n%s", p2.Logs())
	}
	p2.stop(t)
}
