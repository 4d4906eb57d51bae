package main

import (
	"fmt"
	"path/filepath"
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
