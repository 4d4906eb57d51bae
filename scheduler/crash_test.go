package scheduler_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/store"
)

// rentModel answers every task with the same reminder.
type rentModel struct{ calls atomic.Int64 }

func (m *rentModel) Name() string                   { return "fake" }
func (m *rentModel) Capabilities() llm.Capabilities { return llm.Capabilities{Tools: true} }
func (m *rentModel) Stream(context.Context, *llm.Request) (llm.Stream, error) {
	return nil, llm.NewError("fake", llm.KindBadRequest, "not scripted")
}

func (m *rentModel) Generate(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	m.calls.Add(1)
	return &llm.Result{Parts: []llm.Part{llm.Text("Reminder: pay the rent.")}, StopReason: llm.StopEnd}, nil
}

var errCrash = errors.New("crash")

// daemon is the agent and the scheduler over one store, wired as botd run
// wires them; stop is a crash as far as the two are concerned (nothing
// after the hook that failed is done).
type daemon struct {
	st     *store.Store
	a      *agent.Agent
	s      *scheduler.Scheduler
	cancel context.CancelFunc
}

func startDaemon(t *testing.T, dir string, gs *groups.Set, ch *chantest.Channel, model *rentModel, clock *clock.Fake,
	beforeOutbox func(string) error, afterFire func(scheduler.Run) error) *daemon {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := agent.New(agent.Options{Store: st, Groups: gs, GroupsDir: filepath.Join(dir, "groups"),
		Channels: map[string]channels.Channel{"telegram": ch}, LLM: model, Run: agent.RunLimits{Model: "fake-1"}, Log: log,
		Intake: agent.IntakeOptions{RetryDelay: func(int) time.Duration { return time.Millisecond }},
		Hooks:  agent.Hooks{BeforeOutbox: beforeOutbox}})
	s := scheduler.New(scheduler.Options{Store: st, Groups: gs, Clock: clock, Log: log, AfterFire: afterFire,
		Fire: a.DeliverTask})
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	d := &daemon{st: st, a: a, s: s, cancel: cancel}
	t.Cleanup(d.stop)
	return d
}

func (d *daemon) stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.a.Wait()
	d.st.Close()
	d.cancel = nil
}

// settled waits until the agent has handled the run's message and owes
// no answer: after that nothing more can be sent for it.
func (d *daemon) settled(t *testing.T, chat, id, folder string) {
	t.Helper()
	var (
		err     error
		cur     int64
		pending int
	)
	if !testwait.Eventually(func() bool {
		var m store.Message
		m, err = d.st.Message(context.Background(), chat, id)
		cur, _ = d.st.AgentCursor(context.Background(), folder)
		p, _ := outboxdb.New(d.st).Pending(context.Background(), folder)
		pending = len(p)
		return err == nil && m.Seq <= cur && pending == 0
	}) {
		t.Fatalf("the agent never handled %s (err %v, cursor %d, pending %d)", id, err, cur, pending)
	}
}

// A crash between "due" and "answered" runs the task once: wherever the
// crash falls, the restarted scheduler and agent over the same database
// send exactly one answer.
func TestCrashBetweenDueAndAnsweredAnswersOnce(t *testing.T) {
	tests := []struct {
		name string
		// the first process: the agent dies before writing its answer,
		// and/or the scheduler dies before recording the run.
		agentCrash, schedCrash bool
		modelCalls             int64
	}{
		{"agent stops before its answer is written", true, false, 2},
		{"scheduler stops before recording the run; the agent had answered", false, true, 1},
		{"both stop: nothing recorded, nothing answered", true, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			gs, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Name: "Family", Chat: "telegram:-1001", RequiresTrigger: true}})
			if err != nil {
				t.Fatal(err)
			}
			ch := chantest.New("telegram")
			model := &rentModel{}
			clock := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))

			aborted := make(chan struct{}, 1)
			var beforeOutbox func(string) error
			if tt.agentCrash {
				beforeOutbox = func(string) error { aborted <- struct{}{}; return errCrash }
			}
			var afterFire func(scheduler.Run) error
			if tt.schedCrash {
				afterFire = func(scheduler.Run) error { return errCrash }
			}
			d := startDaemon(t, dir, gs, ch, model, clock, beforeOutbox, afterFire)
			task, err := d.s.Schedule(context.Background(), scheduler.NewTask{Folder: "family", CreatedBy: "family",
				Prompt: "remind us to pay the rent", Kind: scheduler.KindIn, Expr: "1m"})
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			due := task.NextRun
			id := scheduler.MessageID(task.ID, due)
			if err := d.s.RunDue(context.Background()); (err != nil) != tt.schedCrash {
				t.Fatalf("RunDue: %v", err)
			}
			if tt.agentCrash {
				select {
				case <-aborted:
				case <-time.After(chantest.HangGuard):
					t.Fatal("the agent never ran the task")
				}
			} else {
				d.settled(t, "telegram:-1001", id, "family")
			}
			d.stop()

			// The restart, a little later but within the grace.
			clock.Advance(5 * time.Minute)
			d2 := startDaemon(t, dir, gs, ch, model, clock, nil, nil)
			for range 3 {
				if err := d2.s.RunDue(context.Background()); err != nil {
					t.Fatal(err)
				}
				clock.Advance(time.Minute)
			}
			d2.settled(t, "telegram:-1001", id, "family")
			var answers []string
			for _, m := range ch.Sent() {
				if strings.Contains(m.Text, "pay the rent") {
					answers = append(answers, m.Text)
				}
			}
			if len(answers) != 1 {
				t.Errorf("%d answers, want 1: %q", len(answers), answers)
			}
			if n := model.calls.Load(); n != tt.modelCalls {
				t.Errorf("%d model calls, want %d", n, tt.modelCalls)
			}
			got, err := d2.s.Get(context.Background(), task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != scheduler.StateDone || got.Runs != 1 || got.Skipped != 0 {
				t.Errorf("task after restart: %+v", got)
			}
			var msgs int
			d2.st.DB.QueryRow(`SELECT COUNT(*) FROM messages WHERE id LIKE 'task-%'`).Scan(&msgs)
			if msgs != 1 {
				t.Errorf("%d task messages stored, want 1", msgs)
			}
		})
	}
}
