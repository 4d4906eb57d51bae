package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/store"
)

// FakeClock is a Clock a test moves by hand. Timers fire when Advance or
// Set passes their deadline, never by themselves.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Set moves the clock to t (forward only) and fires the timers due.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.at.After(c.now) {
			tm.ch <- c.now
			continue
		}
		keep = append(keep, tm)
	}
	c.timers = keep
}

func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Waiting lists the deadlines of the timers not fired yet.
func (c *FakeClock) Waiting() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for _, t := range c.timers {
		out = append(out, t.at)
	}
	return out
}

type fakeTimer struct {
	c  *FakeClock
	ch chan time.Time
	at time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, tm := range t.c.timers {
		if tm == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

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

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

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
	clock *FakeClock
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

func newRig(t testing.TB, start time.Time, mod func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), gs: testGroups(t), clock: NewFakeClock(start), logs: &logBuf{}, mod: mod}
	r.st = openStore(t, r.dir)
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
