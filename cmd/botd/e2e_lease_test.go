package main

import (
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/pgtest"
)

const leaseConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
database: {driver: postgres, dsn: "%s", instance_id: %s}
channels:
  web: {enabled: true, listen: "127.0.0.1:0"}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
`

// Two real `botd run` on one Postgres: one active, one standing by;
// `botd status` names the active one and its epoch; a SIGKILLed active is
// replaced once its lease lapses, a cleanly stopped one at the standby's
// next try; an active frozen past its lease (SIGSTOP, then SIGCONT after
// the other took over) exits without serving on.
func TestTwoInstancesOneLease(t *testing.T) {
	dsn := pgtest.DSN(t)
	dirs := map[string]string{}
	for _, id := range []string{"alpha", "beta"} {
		dirs[id] = t.TempDir()
		writeFile(t, filepath.Join(dirs[id], "botd.yaml"), fmt.Sprintf(leaseConfig, dsn, id))
	}
	start := func(id string) *proc {
		p := startBotd(t, dirs[id], "run", "--config", "botd.yaml")
		p.waitLog(t, "taking the lease")
		return p
	}
	status := func(wantCode int, want ...string) {
		t.Helper()
		out, code := runCLI(t, dirs["alpha"], "status", "--config", "botd.yaml")
		if code != wantCode {
			t.Fatalf("botd status: exit %d, want %d:\n%s", code, wantCode, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("botd status lacks %q:\n%s", w, out)
			}
		}
	}

	a := start("alpha")
	a.waitLog(t, "botd running")
	status(0, "database: postgres", "active: alpha", "epoch: 1")
	b := start("beta")
	b.waitLog(t, "standing by: serving the dashboard")
	checkStandby(t, dirs["beta"], b, "alpha")

	// SIGKILL: the lease lapses 30 s after alpha's last renewal.
	if strings.Contains(b.Logs(), "botd running") {
		t.Fatal("beta served while alpha held the lease")
	}
	killed := time.Now()
	a.kill()
	b.waitLog(t, "botd running")
	t.Logf("beta active %s after alpha's SIGKILL", time.Since(killed).Round(100*time.Millisecond))
	status(0, "active: beta", "epoch: 2")

	// Restarted, alpha stands by; beta stopped cleanly hands over at once.
	a = start("alpha")
	stopped := time.Now()
	b.stop(t)
	a.waitLog(t, "botd running")
	t.Logf("alpha active %s after beta's clean stop", time.Since(stopped).Round(100*time.Millisecond))
	status(0, "active: alpha", "epoch: 3")

	// Frozen past its lease: beta takes over; alpha, thawed, stops.
	b = start("beta")
	a.cmd.Process.Signal(syscall.SIGSTOP)
	b.waitLog(t, "botd running")
	status(0, "active: beta", "epoch: 4")
	a.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("alpha went on after its lease was taken:\n%s", a.Logs())
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(a.Logs(), "the lease was lost") {
		t.Fatalf("thawed alpha: exit %d:\n%s", code, a.Logs())
	}
	status(0, "active: beta", "epoch: 4")
	b.stop(t)
	status(3, "active: none")
}

var webListening = regexp.MustCompile(`web channel listening.* addr=(\S+)`)

// checkStandby checks what an instance standing by serves: its dashboard
// and rooms say so and name the active instance, a post is refused and
// nothing reaches the model; `botd mcp` reads are answered, a send is
// refused with the active instance's name.
func checkStandby(t *testing.T, dir string, p *proc, active string) {
	t.Helper()
	ms := webListening.FindAllStringSubmatch(p.Logs(), -1)
	if len(ms) == 0 {
		t.Fatalf("the standby's web server is not listening:\n%s", p.Logs())
	}
	token, err := os.ReadFile(filepath.Join(dir, "data", "web", "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	s := webLogin(t, "http://"+ms[len(ms)-1][1], strings.TrimSpace(string(token)))
	page := html.UnescapeString(s.get("/admin"))
	for _, w := range []string{"is standing by", "Active: <b>" + active + "</b>"} {
		if !strings.Contains(page, w) {
			t.Errorf("the standby's dashboard lacks %q", w)
		}
	}
	if code, body := s.uploadWith(s.csrf("main"), "main", "note.txt", []byte("hello")); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, active+" answers") {
		t.Errorf("a post to the standby's room: %d %s; want 503 naming %s", code, body, active)
	}

	c := mcpStdio(t, dir, "botd.yaml", "main")
	initMCP(t, c)
	if res := callTool(t, c, "list_media", map[string]any{}); res.IsError {
		t.Errorf("list_media on a standby: %s", resultText(res))
	}
	// The stored conversation is read from the shared database there too.
	if res := callTool(t, c, "list_chats", nil); res.IsError || !strings.Contains(resultText(res), "group main") {
		t.Errorf("list_chats on a standby: %s", resultText(res))
	}
	res := callTool(t, c, "send_message", map[string]any{"text": "hello from the standby"})
	if txt := resultText(res); !res.IsError || !strings.Contains(txt, "standing by: "+active+" is active") {
		t.Errorf("send_message on a standby: error %v, %q; want a refusal naming %s", res.IsError, txt, active)
	}
}
