package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
)

// soleRig is one `botd run` on SQLite with the fake Telegram and a model
// that answers every question with the same words.
type soleRig struct {
	*agentRig
	p   *proc
	ids int
}

const soleAnswer = "Dinner is at seven."

func startSole(t *testing.T) *soleRig {
	t.Helper()
	r := &soleRig{agentRig: newAgentRig(t, "openai", soleAnswer)}
	r.p = startBotd(t, r.dir, "run", "--config", "botd.yaml")
	r.p.waitLog(t, "botd running")
	return r
}

// ask asks the family group a question and waits for one more answer.
func (r *soleRig) ask(t *testing.T) {
	t.Helper()
	n := len(r.answers(soleAnswer))
	r.ids++
	r.tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), r.ids,
		fmt.Sprintf("@Andy when is dinner? (%d)", r.ids)))
	testwait.Within(t, 2*time.Minute, "the answer", func() bool { return len(r.answers(soleAnswer)) > n })
}

// running fails t unless r's botd still runs and never logged a stop.
func (r *soleRig) running(t *testing.T) {
	t.Helper()
	select {
	case <-r.p.done:
		t.Fatalf("botd exited:\n%s", r.p.Logs())
	default:
	}
	for _, bad := range []string{"the lease was lost", "stopping", "another instance took the lease"} {
		if strings.Contains(r.p.Logs(), bad) {
			t.Fatalf("botd logged %q:\n%s", bad, r.p.Logs())
		}
	}
}

// A second `botd run` on the data folder of a running one says which
// botd runs there (its pid, since when) and exits 1 without touching the
// folder's database: the first keeps its lease at its epoch and answers.
func TestSecondRunOnOneDataFolderExits(t *testing.T) {
	r := startSole(t)
	r.ask(t)
	status := func() string {
		t.Helper()
		out, code := runCLI(t, r.dir, "status", "--config", "botd.yaml")
		if code != 0 {
			t.Fatalf("botd status: exit %d:\n%s", code, out)
		}
		return out
	}
	before := status()

	second := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	select {
	case <-second.done:
	case <-time.After(time.Minute):
		t.Fatalf("the second botd run did not exit:\n%s", second.Logs())
	}
	out := second.Logs()
	want := fmt.Sprintf("another botd (pid %d, running since ", r.p.cmd.Process.Pid)
	if code := second.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(out, want) ||
		!strings.Contains(out, "uses data folder "+filepath.Join(r.dir, "data")) {
		t.Fatalf("second botd run: exit %d, want 1 and %q naming the data folder:\n%s", code, want, out)
	}
	if strings.Contains(out, "taking the lease") {
		t.Errorf("the second botd run went on to the lease:\n%s", out)
	}
	if after := status(); !strings.Contains(after, "epoch: 1") || !strings.Contains(before, "epoch: 1") {
		t.Errorf("the lease changed: before\n%s\nafter\n%s", before, after)
	}
	r.ask(t)
	r.running(t)
	r.p.stop(t)
}

// A lone instance on SQLite whose database is locked by another
// connection (BEGIN IMMEDIATE) until its lease lapsed runs on: it logs
// that renewals fail, logs when one succeeds again after the lock is
// released, and answers.
func TestLoneSQLiteRunsOnThroughALockedDatabase(t *testing.T) {
	r := startSole(t)
	r.ask(t)

	ctx := context.Background()
	db, err := sql.Open("sqlite", store.DSN(filepath.Join(r.dir, "data", "botd.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var expires int64
	if err := conn.QueryRowContext(ctx, "SELECT expires FROM leases WHERE name = ?", store.LeaseName).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	// Held until the lease lapsed, past the 15 s after which an instance
	// that may have a successor gives up.
	r.p.waitLog(t, "lease: renewal failing")
	testwait.Within(t, 2*time.Minute, "the lease to lapse", func() bool { return time.Now().UnixMilli() > expires })
	r.running(t)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	r.p.waitLog(t, "lease: renewed again")
	r.ask(t)
	r.running(t)
	if n := strings.Count(r.p.Logs(), "lease: renewal failing"); n != 1 {
		t.Errorf("the failing renewals were logged %d times, want once", n)
	}
	r.p.stop(t)
}
