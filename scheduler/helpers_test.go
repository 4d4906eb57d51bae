package scheduler

import (
	"context"
	"errors"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store/storetest"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/store"
)

const (
	famChat  = "telegram:-1001"
	mainChat = "telegram:42"
	workChat = "slack:C0WORK"
)

func testGroups(t testing.TB) *groups.Set {
	t.Helper()
	gs, err := groups.NewSet("Andy", []groups.Group{
		{Folder: "family", Name: "Family", Chat: famChat, RequiresTrigger: true},
		{Folder: "main", Name: "Me", Chat: mainChat, Main: true},
		{Folder: "work", Name: "Work", Chat: workChat},
	})
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// fakeAgent stands in for agent.DeliverTask: it stores the run's message
// (upserted by id, as the agent does) and, while answering is on, moves
// the group's cursor past it as an answer would.
type fakeAgent struct {
	st *store.Store

	mu       sync.Mutex
	fires    []Run // every delivery, repeats included
	fail     error
	noAnswer bool
}

func (f *fakeAgent) Fire(ctx context.Context, r Run) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.fires = append(f.fires, r)
	if err := f.st.UpsertChat(ctx, store.Chat{ID: r.Chat, LastMessageAt: r.Due}); err != nil {
		return err
	}
	seq, err := f.st.PutMessage(ctx, store.Message{ChatID: r.Chat, ID: r.MessageID, SenderID: "botd:task", Text: r.Prompt, Time: r.Due})
	if err != nil {
		return err
	}
	if !f.noAnswer {
		return f.st.AdvanceAgentCursor(ctx, r.Folder, seq)
	}
	return nil
}

func (f *fakeAgent) set(fail error, noAnswer bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.noAnswer = fail, noAnswer
}

// Fires lists the due times delivered for task id, in UTC RFC 3339.
func (f *fakeAgent) dues(id int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.fires {
		if r.TaskID == id {
			out = append(out, r.Due.UTC().Format(time.RFC3339))
		}
	}
	return out
}

func (f *fakeAgent) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.fires)
}

// rig is a scheduler over a real store, a fake clock and a fake agent.
type rig struct {
	t     testing.TB
	dir   string
	st    *store.Store
	gs    *groups.Set
	clock *clock.Fake
	agent *fakeAgent
	logs  *logBuf
	s     *Scheduler
	mod   func(*Options)
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newRig makes a rig on a new database of d.
func newRig(t testing.TB, d sqldialect.Dialect, start time.Time, mod func(*Options)) *rig {
	t.Helper()
	return newRigOn(t, storetest.Config(t, d), start, mod)
}

// newRigOn makes a rig on the database c names.
func newRigOn(t testing.TB, c store.Config, start time.Time, mod func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), gs: testGroups(t), clock: clock.NewFake(start), logs: &logBuf{}, mod: mod}
	r.st = storetest.Open(t, c)
	r.agent = &fakeAgent{st: r.st}
	r.s = New(r.options())
	return r
}

func (r *rig) options() Options {
	var w io.Writer = r.logs
	if testing.Verbose() {
		w = io.MultiWriter(r.logs, os.Stderr)
	}
	o := Options{Store: r.st, Groups: r.gs, Fire: r.agent.Fire, Location: berlin(r.t), Clock: r.clock,
		Log: slog.New(slog.NewTextHandler(w, nil))}
	if r.mod != nil {
		r.mod(&o)
	}
	return o
}

// restart replaces the scheduler with a new one over the same store, as
// a new botd process would.
func (r *rig) restart() { r.s = New(r.options()) }

func (r *rig) schedule(folder, kind, expr string, mods ...func(*NewTask)) Task {
	r.t.Helper()
	n := NewTask{Folder: folder, CreatedBy: folder, Prompt: "do it", Kind: kind, Expr: expr}
	for _, m := range mods {
		m(&n)
	}
	task, err := r.s.Schedule(context.Background(), n)
	if err != nil {
		r.t.Fatalf("schedule %s %q: %v", kind, expr, err)
	}
	return task
}

func (r *rig) runDue() {
	r.t.Helper()
	if err := r.s.RunDue(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// until runs the scheduler the way its loop does, jumping the clock from
// one due time to the next, until the clock reaches end.
func (r *rig) until(end time.Time) {
	r.t.Helper()
	for i := 0; i < 10000; i++ {
		r.runDue()
		next, err := r.s.nextWake(context.Background())
		if err != nil {
			r.t.Fatal(err)
		}
		if next.IsZero() || next.After(end) {
			r.clock.Set(end)
			r.runDue()
			return
		}
		r.clock.Set(next)
	}
	r.t.Fatal("until: too many steps")
}

func (r *rig) task(id int64) Task {
	r.t.Helper()
	task, err := r.s.Get(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return task
}

var errDown = errors.New("database is locked")
