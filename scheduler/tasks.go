package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// Task states. A one-shot that ran is done; done and cancelled are final.
const (
	StateActive    = "active"
	StatePaused    = "paused"
	StateDone      = "done"
	StateCancelled = "cancelled"
)

// Context modes: a group run sees the group's memory and recent messages,
// an isolated one the prompt alone.
const (
	ContextGroup    = "group"
	ContextIsolated = "isolated"
)

// Task is one row of scheduled_tasks. Times are zero when unset.
type Task struct {
	ID      int64
	Folder  string // the group it runs in
	Prompt  string
	Kind    string // cron | every | at
	Spec    string // Schedule.Expr
	Context string
	// Batch runs go through the provider's batch API: cheaper, answered
	// within hours rather than seconds.
	Batch     bool
	State     string
	NextRun   time.Time // due time of the run not yet delivered
	LastRun   time.Time // due time of the last delivered run
	RetryAt   time.Time // after a failed delivery, not before this
	Failures  int       // failed deliveries of NextRun in a row
	LastError string
	Runs      int
	Skipped   int
	CreatedBy string // the group whose request made it
	Created   time.Time
}

// ErrNotFound is a task that does not exist, or not for the asking group.
var ErrNotFound = errors.New("no such task")

const taskCols = `id, folder, prompt, kind, spec, context, state, next_run, last_run, retry_at, failures, last_error,
	runs, skipped, created_by, created, batch`

func scanTask(r sqlrows.Scanner) (Task, error) {
	var t Task
	var next, last, retry, created int64
	err := r.Scan(&t.ID, &t.Folder, &t.Prompt, &t.Kind, &t.Spec, &t.Context, &t.State, &next, &last, &retry,
		&t.Failures, &t.LastError, &t.Runs, &t.Skipped, &t.CreatedBy, &created, &t.Batch)
	t.NextRun, t.LastRun, t.RetryAt, t.Created = fromMs(next), fromMs(last), fromMs(retry), fromMs(created)
	return t, err
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// insert stores a new task, or returns the one an earlier copy of the
// same request made (an IPC request carried out again after a crash).
func (s *Scheduler) insert(ctx context.Context, t Task, requestID string, now time.Time) (Task, bool, error) {
	if requestID != "" {
		old, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskCols+` FROM scheduled_tasks WHERE created_by = ? AND request_id = ?`,
			t.CreatedBy, requestID))
		if err == nil {
			return old, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return Task{}, false, fmt.Errorf("schedule task: %w", err)
		}
	}
	err := s.db.QueryRowContext(ctx, `INSERT INTO scheduled_tasks(folder, prompt, kind, spec, context, batch, state, next_run,
		created_by, request_id, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		t.Folder, t.Prompt, t.Kind, t.Spec, t.Context, t.Batch, StateActive, ms(t.NextRun), t.CreatedBy, requestID, ms(now), ms(now)).Scan(&t.ID)
	if err != nil {
		return Task{}, false, fmt.Errorf("schedule task: %w", err)
	}
	t.State, t.Created = StateActive, now
	return t, false, nil
}

// Get returns one task.
func (s *Scheduler) Get(ctx context.Context, id int64) (Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskCols+` FROM scheduled_tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("task %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("task %d: %w", id, err)
	}
	return t, nil
}

// FinishedListed is how many finished (done or cancelled) tasks List
// returns at most: a group that schedules and cancels all day must not make
// list_tasks (and the model's context) grow with every one of them.
const FinishedListed = 20

// List returns a group's tasks ("" for every group's): every active and
// paused one by id, then at most FinishedListed finished ones of the last
// week, newest first, and how many older finished ones of that week were
// left out.
func (s *Scheduler) List(ctx context.Context, folder string) (tasks []Task, omitted int, err error) {
	where, args := ` WHERE state IN (?, ?)`, []any{StateActive, StatePaused}
	if folder != "" {
		where += ` AND folder = ?`
		args = append(args, folder)
	}
	live, err := sqlrows.Query(ctx, s.db, "list tasks", scanTask, `SELECT `+taskCols+` FROM scheduled_tasks`+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, 0, err
	}
	where, args = ` WHERE state NOT IN (?, ?) AND updated > ?`, []any{StateActive, StatePaused, ms(s.now().Add(-finishedShown))}
	if folder != "" {
		where += ` AND folder = ?`
		args = append(args, folder)
	}
	done, err := sqlrows.Query(ctx, s.db, "list tasks", scanTask,
		`SELECT `+taskCols+` FROM scheduled_tasks`+where+` ORDER BY updated DESC, id DESC LIMIT ?`, append(args, FinishedListed)...)
	if err != nil {
		return nil, 0, err
	}
	if len(done) == FinishedListed {
		var all int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM scheduled_tasks`+where, args...).Scan(&all); err != nil {
			return nil, 0, fmt.Errorf("list tasks: %w", err)
		}
		omitted = all - len(done)
	}
	return append(live, done...), omitted, nil
}

// finishedShown is how long list_tasks keeps showing a task that is done
// or cancelled; finishedKept how long its row and its runs are kept.
const (
	finishedShown = 7 * 24 * time.Hour
	finishedKept  = 30 * 24 * time.Hour
)

// countLive is the group's active and paused tasks, what the cap counts.
func (s *Scheduler) countLive(ctx context.Context, folder string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM scheduled_tasks WHERE folder = ? AND state IN (?, ?)`,
		folder, StateActive, StatePaused).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count tasks of %s: %w", folder, err)
	}
	return n, nil
}

// setState changes a task's state from one of from; resumed tasks get
// their next run. It reports false when the task was in none of them.
func (s *Scheduler) setState(ctx context.Context, id int64, to string, next time.Time, from ...string) (bool, error) {
	q := `UPDATE scheduled_tasks SET state = ?, updated = ?`
	args := []any{to, ms(s.now())}
	if to == StateActive {
		q += `, next_run = ?, retry_at = 0, failures = 0`
		args = append(args, ms(next))
	}
	q += ` WHERE id = ? AND state IN (` + strings.TrimSuffix(strings.Repeat("?,", len(from)), ",") + `)`
	args = append(args, id)
	for _, f := range from {
		args = append(args, f)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("task %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// due lists the active tasks whose next run is at or before now and not
// waiting for a retry, oldest due first.
func (s *Scheduler) due(ctx context.Context, now time.Time) ([]Task, error) {
	return sqlrows.Query(ctx, s.db, "due tasks", scanTask, `SELECT `+taskCols+` FROM scheduled_tasks
		WHERE state = ? AND next_run > 0 AND next_run <= ? AND retry_at <= ? ORDER BY next_run, id`,
		StateActive, ms(now), ms(now))
}

// nextWake is the earliest time an active task needs attention; zero if
// none does.
func (s *Scheduler) nextWake(ctx context.Context) (time.Time, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MIN(CASE WHEN next_run > retry_at THEN next_run ELSE retry_at END) FROM scheduled_tasks WHERE state = ? AND next_run > 0`,
		StateActive).Scan(&v)
	if err != nil {
		return time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	return fromMs(v.Int64), nil
}

// runRecord is one delivered run.
type runRecord struct {
	TaskID    int64
	Due       time.Time
	Chat      string
	MessageID string
}

// claim records that the run due at due was delivered and moves the task
// to next (zero: finished), in one transaction. It is written after the
// delivery: a crash in between leaves next_run at due, and the run is
// delivered again under the same message id, which the agent answers
// once. The WHERE on next_run makes a second claim of one due time a
// no-op. A paused or cancelled task keeps its state. The claim is fenced:
// an instance that lost the lease gets store.ErrFenced and records nothing.
func (s *Scheduler) claim(ctx context.Context, t Task, r runRecord, next, now time.Time) error {
	err := s.opts.Store.Fenced(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO scheduled_runs(task_id, due, folder, chat_id, message_id, fired)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, t.ID, ms(r.Due), t.Folder, r.Chat, r.MessageID, ms(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE scheduled_tasks SET next_run = ?, last_run = ?, runs = runs + 1, failures = 0,
			retry_at = 0, last_error = '', updated = ?,
			state = CASE WHEN ? = 1 AND state = ? THEN ? ELSE state END
			WHERE id = ? AND next_run = ?`,
			ms(next), ms(r.Due), ms(now), next.IsZero(), StateActive, StateDone, t.ID, ms(r.Due))
		return err
	})
	if err != nil {
		return fmt.Errorf("claim task %d: %w", t.ID, err)
	}
	return nil
}

// skip passes over the run due at due without delivering it, saying why.
// Fenced like claim: a stale instance must not pass over a run its
// successor is to deliver.
func (s *Scheduler) skip(ctx context.Context, t Task, next, now time.Time, why string) error {
	err := s.opts.Store.Fenced(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE scheduled_tasks SET next_run = ?, skipped = skipped + 1, failures = 0, retry_at = 0,
			last_error = ?, updated = ?, state = CASE WHEN ? = 1 AND state = ? THEN ? ELSE state END
			WHERE id = ? AND next_run = ?`,
			ms(next), why, ms(now), next.IsZero(), StateActive, StateDone, t.ID, ms(t.NextRun))
		return err
	})
	if err != nil {
		return fmt.Errorf("skip run of task %d: %w", t.ID, err)
	}
	return nil
}

// failed counts a failed delivery and sets when to try again.
func (s *Scheduler) failed(ctx context.Context, t Task, retry, now time.Time, why string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE scheduled_tasks SET failures = failures + 1, retry_at = ?, last_error = ?, updated = ?
		WHERE id = ? AND next_run = ?`, ms(retry), why, ms(now), t.ID, ms(t.NextRun))
	if err != nil {
		return fmt.Errorf("record failure of task %d: %w", t.ID, err)
	}
	return nil
}

// lastRun is the task's newest delivered run; ok is false before the first.
func (s *Scheduler) lastRun(ctx context.Context, id int64) (r runRecord, ok bool, err error) {
	var due int64
	err = s.db.QueryRowContext(ctx, `SELECT task_id, due, chat_id, message_id FROM scheduled_runs WHERE task_id = ?
		ORDER BY due DESC LIMIT 1`, id).Scan(&r.TaskID, &due, &r.Chat, &r.MessageID)
	if errors.Is(err, sql.ErrNoRows) {
		return runRecord{}, false, nil
	}
	if err != nil {
		return runRecord{}, false, fmt.Errorf("last run of task %d: %w", id, err)
	}
	r.Due = fromMs(due)
	return r, true, nil
}

// runsSince counts the group's runs delivered after since.
func (s *Scheduler) runsSince(ctx context.Context, folder string, since time.Time) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM scheduled_runs WHERE folder = ? AND fired > ?`, folder, ms(since)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("runs of %s: %w", folder, err)
	}
	return n, nil
}

// prune removes finished tasks and runs older than finishedKept, so a
// group that schedules and cancels in a loop cannot grow the database.
func (s *Scheduler) prune(ctx context.Context, now time.Time) error {
	cut := ms(now.Add(-finishedKept))
	if _, err := s.db.ExecContext(ctx, `DELETE FROM scheduled_runs WHERE fired < ?`, cut); err != nil {
		return fmt.Errorf("prune task runs: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM scheduled_tasks WHERE state IN (?, ?) AND updated < ?`,
		StateDone, StateCancelled, cut); err != nil {
		return fmt.Errorf("prune tasks: %w", err)
	}
	return nil
}
