// Package scheduler runs a group's scheduled tasks: "every Monday at 9
// summarise last week's photos", "in two hours check whether anyone
// answered". Tasks live in SQLite. A task that is due does not start a
// run of its own: it becomes a message to the group, delivered to the
// agent's normal intake (Options.Fire), so its answer goes through the
// same queue, cursor and outbox as any answer — one run per group at a
// time, crash-safe, sent once.
//
// Never twice for one due time: a run is identified by (task, due time),
// and its message id is derived from both. The scheduler delivers the
// message first and only then, in one transaction, records the run and
// moves the task's next_run on. A crash between the two leaves next_run
// where it was; the restart delivers the same message again, which the
// store upserts and the agent, whose cursor already covers it or not,
// answers exactly once.
package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/wake"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// MaxPromptRunes bounds a task's prompt: it is a request, not a
// document.
const MaxPromptRunes = 4000

// maxSleep bounds one wait of the loop, so a wall clock that jumps (a
// suspended laptop, a corrected clock) is noticed within a minute.
const maxSleep = time.Minute

// errorPause is the loop's wait after a pass that failed.
const errorPause = 10 * time.Second

// Run is one delivery of a task: what Fire turns into a message.
type Run struct {
	TaskID int64
	Folder string
	Chat   string
	// MessageID is "task-<id>-<due unix seconds>": the same for every
	// delivery of this run, so a repeat upserts the same message.
	MessageID string
	Prompt    string
	// Schedule describes when the task runs ("cron "0 9 * * 1" (...)").
	Schedule string
	Isolated bool
	Batch    bool
	Due      time.Time
}

// MessageID is the id of the message of task id's run due at due.
func MessageID(id int64, due time.Time) string {
	return fmt.Sprintf("task-%d-%d", id, due.Unix())
}

// Options configures a Scheduler. Store, Groups and Fire are required.
type Options struct {
	Store  *store.Store
	Groups *groups.Set
	// Fire delivers a run to the agent (agent.DeliverTask in the daemon).
	// It must be idempotent for one Run.MessageID.
	Fire func(ctx context.Context, r Run) error
	// Location is the timezone of cron and at (config timezone); nil is
	// the system's.
	Location *time.Location
	// Grace is how late a run may start: a due time missed by more (botd
	// was down, delivery kept failing) is skipped and logged. Zero means
	// DefaultConfig's, as for MaxTasksPerGroup and MaxRunsPerHour.
	Grace time.Duration
	// MaxTasksPerGroup caps a group's active and paused tasks;
	// MaxRunsPerHour the runs delivered to one group in any hour (more are
	// skipped). Zero means the defaults.
	MaxTasksPerGroup int
	MaxRunsPerHour   int
	Clock            clock.Clock
	Log              *slog.Logger
	// RetryDelay is the wait after the nth failed delivery in a row; nil
	// means 10s·3^(n-1), at most 10 minutes.
	RetryDelay func(n int) time.Duration

	// AfterFire, a test hook, runs after a successful delivery and before
	// the run is recorded; an error stops the run there, as a crash would.
	AfterFire func(Run) error
}

// Scheduler keeps the tasks and delivers them when due.
type Scheduler struct {
	opts Options
	db   *sql.DB
	log  *slog.Logger

	// mu serialises every change of a task: the loop's deliveries and the
	// tools' schedule, pause, resume and cancel.
	mu        sync.Mutex
	lastPrune time.Time

	wake    wake.Signal
	started bool
	wg      sync.WaitGroup
}

// New returns a Scheduler; nothing happens until Start.
func New(opts Options) *Scheduler {
	if opts.Location == nil {
		opts.Location = time.Local
	}
	def := DefaultConfig()
	if opts.Grace <= 0 {
		opts.Grace = def.Grace.D()
	}
	if opts.MaxTasksPerGroup <= 0 {
		opts.MaxTasksPerGroup = def.MaxTasksPerGroup
	}
	if opts.MaxRunsPerHour <= 0 {
		opts.MaxRunsPerHour = def.MaxRunsPerHour
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.RetryDelay == nil {
		opts.RetryDelay = defaultRetryDelay
	}
	s := &Scheduler{opts: opts, log: opts.Log, wake: wake.New()}
	if opts.Store != nil {
		s.db = opts.Store.DB
	}
	return s
}

func defaultRetryDelay(n int) time.Duration {
	return backoff.Schedule{Initial: 10 * time.Second, Factor: 3, Max: 10 * time.Minute}.Wait(n - 1)
}

// Location is the timezone tasks are scheduled in.
func (s *Scheduler) Location() *time.Location { return s.opts.Location }

func (s *Scheduler) now() time.Time { return s.opts.Clock.Now() }

// Start delivers what fell due while botd was down (within the grace, once
// per task; older runs are skipped and logged) and keeps delivering until
// ctx ends. Wait blocks until the loop has stopped.
func (s *Scheduler) Start(ctx context.Context) error {
	if s.db == nil || s.opts.Groups == nil || s.opts.Fire == nil {
		return errors.New("scheduler: Store, Groups and Fire are required")
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("scheduler: already started")
	}
	s.started = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.loop(ctx)
	}()
	return nil
}

// Wait blocks until the loop started by Start has returned.
func (s *Scheduler) Wait() { s.wg.Wait() }

// Wake makes the loop look at the tasks again (a task was added or
// resumed).
func (s *Scheduler) Wake() { s.wake.Wake() }

func (s *Scheduler) loop(ctx context.Context) {
	for ctx.Err() == nil {
		// After an error (the database, most likely) a task may still be
		// due: wait a little instead of spinning on it.
		least := time.Duration(0)
		if err := s.RunDue(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("scheduler: delivering due tasks failed", "err", err)
			least = errorPause
		}
		wait := maxSleep
		if next, err := s.nextWake(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Error("scheduler: cannot read the next due time", "err", err)
			}
		} else if !next.IsZero() {
			wait = min(max(next.Sub(s.now()), least), maxSleep)
		}
		clock.Wait(ctx, s.opts.Clock, wait, s.wake.C())
	}
}

// RunDue delivers every run that is due now. The loop calls it; tests
// call it after moving the clock.
func (s *Scheduler) RunDue(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.lastPrune) > time.Hour {
		if err := s.prune(ctx, now); err != nil {
			s.log.Warn("scheduler: pruning finished tasks failed", "err", err)
		}
		s.lastPrune = now
	}
	tasks, err := s.due(ctx, now)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tasks {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := s.runTask(ctx, t, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runTask delivers the run of t due at t.NextRun, or skips it.
func (s *Scheduler) runTask(ctx context.Context, t Task, now time.Time) error {
	log := s.log.With("task", t.ID, "group", t.Folder)
	due := t.NextRun
	sched, err := Load(t.Kind, t.Spec, s.opts.Location)
	if err != nil {
		// Cannot happen for rows this package wrote; pausing keeps it
		// visible instead of failing every tick.
		log.Error("scheduler: task has an unreadable schedule; pausing it", "err", err)
		_, perr := s.db.ExecContext(ctx, `UPDATE scheduled_tasks SET state = ?, last_error = ?, updated = ? WHERE id = ?`,
			StatePaused, err.Error(), ms(now), t.ID)
		return perr
	}
	next := sched.Next(due, now)
	g, ok := s.opts.Groups.ByFolder(t.Folder)
	if !ok {
		why := fmt.Sprintf("run due %s skipped: the group %q is no longer configured", FormatTime(due, s.opts.Location), t.Folder)
		log.Warn("scheduler: "+why, "due", due)
		return s.skip(ctx, t, next, now, why)
	}
	run := Run{TaskID: t.ID, Folder: t.Folder, Chat: g.Chat, MessageID: MessageID(t.ID, due), Prompt: t.Prompt,
		Schedule: sched.Describe(), Isolated: t.Context == ContextIsolated, Batch: t.Batch, Due: due}
	// Delivered before a stop but not recorded: deliver it again (the
	// same message; the agent answers it once) and record it, whatever
	// the limits, since it already counts.
	if _, err := s.opts.Store.Message(ctx, run.Chat, run.MessageID); err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %d: %w", t.ID, err)
		}
		if why, err := s.refuse(ctx, t, sched, due, now); err != nil || why != "" {
			if err != nil {
				return err
			}
			log.Warn("scheduler: "+why, "due", due)
			return s.skip(ctx, t, next, now, why)
		}
	}
	if err := s.opts.Fire(ctx, run); err != nil {
		n := t.Failures + 1
		retry := now.Add(s.opts.RetryDelay(n))
		why := fmt.Sprintf("delivering the run due %s failed (%d times; next try %s): %v", FormatTime(due, s.opts.Location), n,
			FormatTime(retry, s.opts.Location), err)
		log.Warn("scheduler: delivering a run failed", "due", due, "failures", n, "retry_at", retry, "err", err)
		return s.failed(ctx, t, retry, now, why)
	}
	if s.opts.AfterFire != nil {
		if err := s.opts.AfterFire(run); err != nil {
			return err
		}
	}
	if err := s.claim(ctx, t, runRecord{TaskID: t.ID, Due: due, Chat: run.Chat, MessageID: run.MessageID}, next, now); err != nil {
		return err
	}
	log.Info("scheduler: task run delivered", "due", due, "message", run.MessageID, "late", now.Sub(due).Round(time.Second),
		"next_run", FormatTime(next, s.opts.Location))
	return nil
}

// refuse says why the run due at due must not be delivered, or "": it is
// older than the grace, the previous run is not answered yet (one run of
// a task at a time), or the group had its runs for this hour.
func (s *Scheduler) refuse(ctx context.Context, t Task, sched Schedule, due, now time.Time) (string, error) {
	loc := s.opts.Location
	if late := now.Sub(due); late > s.opts.Grace {
		return fmt.Sprintf("run due %s skipped: missed by %s, more than the grace of %s (botd was not running?)",
			FormatTime(due, loc), late.Round(time.Second), shortDur(s.opts.Grace)), nil
	}
	prev, ok, err := s.lastRun(ctx, t.ID)
	if err != nil {
		return "", err
	}
	if ok {
		done, err := s.handled(ctx, t.Folder, prev.Chat, prev.MessageID)
		if err != nil {
			return "", err
		}
		if !done {
			// Deliver the previous run again: the same message, so it is
			// not answered twice, but it wakes an agent that gave up.
			p := Run{TaskID: t.ID, Folder: t.Folder, Chat: prev.Chat, MessageID: prev.MessageID, Prompt: t.Prompt,
				Schedule: sched.Describe(), Isolated: t.Context == ContextIsolated, Batch: t.Batch, Due: prev.Due}
			if err := s.opts.Fire(ctx, p); err != nil {
				s.log.Warn("scheduler: could not deliver the unanswered run again", "task", t.ID, "err", err)
			}
			return fmt.Sprintf("run due %s skipped: the run due %s is not answered yet", FormatTime(due, loc), FormatTime(prev.Due, loc)), nil
		}
	}
	n, err := s.runsSince(ctx, t.Folder, now.Add(-time.Hour))
	if err != nil {
		return "", err
	}
	if n >= s.opts.MaxRunsPerHour {
		return fmt.Sprintf("run due %s skipped: the group had %d task runs in the last hour, the most allowed (scheduler.max_runs_per_hour)",
			FormatTime(due, loc), n), nil
	}
	return "", nil
}

// handled reports whether the agent's cursor has passed a run's message:
// answered, or deliberately left unanswered. A message that is gone
// counts as handled.
func (s *Scheduler) handled(ctx context.Context, folder, chat, id string) (bool, error) {
	m, err := s.opts.Store.Message(ctx, chat, id)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	cur, err := s.opts.Store.AgentCursor(ctx, folder)
	if err != nil {
		return false, err
	}
	return m.Seq <= cur, nil
}

// NewTask is what schedule_task asks for, already authorised.
type NewTask struct {
	Folder    string // the group it runs in
	CreatedBy string // the group that asked
	Prompt    string
	Kind      string // cron | every | at | in
	Expr      string
	Context   string // group (default) | isolated
	Batch     bool
	// RequestID is the IPC request's id: the same request carried out
	// again (after a crash) returns the task it made instead of a second.
	RequestID string
}

// Schedule validates and stores a new task.
func (s *Scheduler) Schedule(ctx context.Context, n NewTask) (Task, error) {
	prompt, err := cleanPrompt(n.Prompt)
	if err != nil {
		return Task{}, err
	}
	switch n.Context {
	case "":
		n.Context = ContextGroup
	case ContextGroup, ContextIsolated:
	default:
		return Task{}, fmt.Errorf("%w: context must be %q or %q", ErrInvalid, ContextGroup, ContextIsolated)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	sched, err := Parse(n.Kind, n.Expr, s.opts.Location, now)
	if err != nil {
		return Task{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	live, err := s.countLive(ctx, n.Folder)
	if err != nil {
		return Task{}, err
	}
	t := Task{Folder: n.Folder, Prompt: prompt, Kind: sched.Kind, Spec: sched.Expr, Context: n.Context, Batch: n.Batch,
		NextRun: sched.First(now), CreatedBy: n.CreatedBy}
	if live >= s.opts.MaxTasksPerGroup {
		// A replayed request that already made its task is not refused.
		if n.RequestID != "" {
			if old, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskCols+` FROM scheduled_tasks WHERE created_by = ? AND request_id = ?`,
				n.CreatedBy, n.RequestID)); err == nil {
				return old, nil
			}
		}
		return Task{}, fmt.Errorf("%w: the group %q has %d tasks, the most allowed (scheduler.max_tasks_per_group); cancel one first",
			ErrLimit, n.Folder, live)
	}
	t, replay, err := s.insert(ctx, t, n.RequestID, now)
	if err != nil {
		return Task{}, err
	}
	if !replay {
		s.log.Info("scheduler: task scheduled", "task", t.ID, "group", t.Folder, "by", t.CreatedBy, "schedule", sched.Describe(),
			"context", t.Context, "next_run", t.NextRun)
	}
	s.Wake()
	return t, nil
}

// Errors of the task operations, for the IPC codes.
var (
	ErrInvalid = errors.New("invalid task")
	ErrLimit   = errors.New("limit reached")
	ErrState   = errors.New("task state does not allow this")
)

// cleanPrompt keeps a prompt on the rails: not empty, not huge, no
// control characters but newlines and tabs, and no placeholder of botd's
// own (only botd writes those; a copied one is defused).
func cleanPrompt(p string) (string, error) {
	p = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, p)
	p = strings.TrimSpace(mediaregistry.Neutralize(p))
	if p == "" {
		return "", fmt.Errorf("%w: prompt is empty", ErrInvalid)
	}
	if n := len([]rune(p)); n > MaxPromptRunes {
		return "", fmt.Errorf("%w: prompt has %d characters, at most %d", ErrInvalid, n, MaxPromptRunes)
	}
	return p, nil
}

// Pause stops a task from running until it is resumed.
func (s *Scheduler) Pause(ctx context.Context, id int64) (Task, error) {
	return s.change(ctx, id, StatePaused, StateActive)
}

// Cancel ends a task for good.
func (s *Scheduler) Cancel(ctx context.Context, id int64) (Task, error) {
	return s.change(ctx, id, StateCancelled, StateActive, StatePaused)
}

// Resume makes a paused task run again from its next time after now: runs
// that fell in the pause are not made up for. A one-shot whose time
// passed meanwhile cannot be resumed.
func (s *Scheduler) Resume(ctx context.Context, id int64) (Task, error) {
	return s.change(ctx, id, StateActive, StatePaused)
}

func (s *Scheduler) change(ctx context.Context, id int64, to string, from ...string) (Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.Get(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if t.State == to {
		return t, nil // asked twice: the answer is the same
	}
	var next time.Time
	now := s.now()
	if to == StateActive {
		sched, err := Load(t.Kind, t.Spec, s.opts.Location)
		if err != nil {
			return Task{}, err
		}
		next = t.NextRun
		if !next.After(now) {
			if sched.Once() {
				return Task{}, fmt.Errorf("%w: task %d was due %s, while it was paused; schedule it again", ErrState, id,
					FormatTime(next, s.opts.Location))
			}
			next = sched.Next(next, now)
		}
	}
	ok, err := s.setState(ctx, id, to, next, from...)
	if err != nil {
		return Task{}, err
	}
	if !ok {
		return Task{}, fmt.Errorf("%w: task %d is %s", ErrState, id, t.State)
	}
	s.log.Info("scheduler: task "+verb(to), "task", id, "group", t.Folder)
	if to == StateActive {
		s.Wake()
	}
	return s.Get(ctx, id)
}

func verb(state string) string {
	switch state {
	case StateActive:
		return "resumed"
	case StatePaused:
		return "paused"
	}
	return state
}
