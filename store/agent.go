package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// AgentCursorName is the router cursor of a group: the seq of the last
// message covered by an answer that was delivered (or deliberately empty).
func AgentCursorName(folder string) string { return "agent:" + folder }

// AgentCursor reads a group's cursor; a group never answered is at 0.
func (s *Store) AgentCursor(ctx context.Context, folder string) (int64, error) {
	v, err := s.Cursor(ctx, AgentCursorName(folder))
	if err != nil || v == "" {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cursor %s: %w", AgentCursorName(folder), err)
	}
	return n, nil
}

// raiseCursor moves a numeric cursor forward only, so a late or replayed
// completion can never rewind a group and make it answer twice.
const raiseCursor = `INSERT INTO cursors(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET
	value = CASE WHEN CAST(excluded.value AS BIGINT) > CAST(cursors.value AS BIGINT) THEN excluded.value ELSE cursors.value END`

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func raise(ctx context.Context, db execer, folder string, seq int64) error {
	if _, err := db.ExecContext(ctx, raiseCursor, AgentCursorName(folder), strconv.FormatInt(seq, 10)); err != nil {
		return fmt.Errorf("advance cursor of %s: %w", folder, err)
	}
	return nil
}

// AdvanceAgentCursor moves a group's cursor forward to seq (never back);
// fenced (ErrFenced when this instance no longer holds the lease).
func (s *Store) AdvanceAgentCursor(ctx context.Context, folder string, seq int64) error {
	return s.Fenced(ctx, func(tx *sql.Tx) error { return raise(ctx, tx, folder, seq) })
}

// Trigger is the newest message that asked a group for an answer.
type Trigger struct {
	Folder    string
	Seq       int64
	ChatID    string
	MessageID string
	ThreadID  string
}

// RecordTrigger remembers t as the group's latest trigger unless a newer
// one is already recorded. A restart re-queues every group whose trigger
// is past its cursor.
func (s *Store) RecordTrigger(ctx context.Context, t Trigger) error {
	_, err := s.DB.ExecContext(ctx, `INSERT INTO agent_triggers(folder, seq, chat_id, message_id, thread_id) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(folder) DO UPDATE SET seq = excluded.seq, chat_id = excluded.chat_id,
			message_id = excluded.message_id, thread_id = excluded.thread_id
		WHERE excluded.seq > agent_triggers.seq`,
		t.Folder, t.Seq, t.ChatID, t.MessageID, t.ThreadID)
	if err != nil {
		return fmt.Errorf("record trigger of %s: %w", t.Folder, err)
	}
	return nil
}

// LastTrigger returns the group's latest trigger; ok is false when the
// group was never triggered.
func (s *Store) LastTrigger(ctx context.Context, folder string) (t Trigger, ok bool, err error) {
	err = s.DB.QueryRowContext(ctx, `SELECT folder, seq, chat_id, message_id, thread_id FROM agent_triggers WHERE folder = ?`, folder).
		Scan(&t.Folder, &t.Seq, &t.ChatID, &t.MessageID, &t.ThreadID)
	if errors.Is(err, sql.ErrNoRows) {
		return Trigger{}, false, nil
	}
	if err != nil {
		return Trigger{}, false, fmt.Errorf("trigger of %s: %w", folder, err)
	}
	return t, true, nil
}

// Outbox statuses.
const (
	OutboxPending = "pending"
	OutboxSent    = "sent"
	OutboxFailed  = "failed" // given up after repeated send failures
)

// OutboxItem is an answer written before it is sent, so a crash between
// the model's reply and the channel's acknowledgement neither loses nor
// regenerates it.
type OutboxItem struct {
	ID      int64
	Folder  string
	ChatID  string
	UpToSeq int64 // the cursor moves here once the item is sent
	Text    string
	// Media are paths relative to the group folder, sent after Text.
	Media    []string
	ThreadID string
	ReplyTo  string
	// Voice: the text goes as a voice note ([[audio_as_voice]]), and
	// audio files as voice notes too.
	Voice bool
	// LiveIDs are the messages of the live answer this item finishes
	// (see channels.Streamer), empty when it was not streamed.
	LiveIDs   []string
	Status    string
	PartsDone int // text (if any) then each media file; resumes here
	Attempts  int
	LastError string
	Created   time.Time
}

// AddOutbox stores a pending answer and returns its id. It is fenced
// (ErrFenced when this instance no longer holds the lease): an answer a
// stale instance made after its successor took over must not wait in the
// outbox for that successor, which answers the same messages itself, to
// send it a second time.
func (s *Store) AddOutbox(ctx context.Context, it OutboxItem) (id int64, err error) {
	err = s.Fenced(ctx, func(tx *sql.Tx) error {
		id, err = addOutbox(ctx, tx, it)
		return err
	})
	return id, err
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func addOutbox(ctx context.Context, db queryer, it OutboxItem) (int64, error) {
	media, err := json.Marshal(nonNil(it.Media))
	if err != nil {
		return 0, fmt.Errorf("add outbox: %w", err)
	}
	live, err := json.Marshal(nonNil(it.LiveIDs))
	if err != nil {
		return 0, fmt.Errorf("add outbox: %w", err)
	}
	if it.Created.IsZero() {
		it.Created = time.Now()
	}
	var id int64
	err = db.QueryRowContext(ctx, `INSERT INTO agent_outbox(folder, chat_id, up_to_seq, text, media, thread_id, reply_to, status, created, voice, live_ids)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		it.Folder, it.ChatID, it.UpToSeq, it.Text, string(media), it.ThreadID, it.ReplyTo, OutboxPending, it.Created.UnixMilli(), it.Voice, string(live)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("add outbox for %s: %w", it.Folder, err)
	}
	return id, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

const outboxCols = `id, folder, chat_id, up_to_seq, text, media, thread_id, reply_to, status, parts_done, attempts, last_error, created, voice, live_ids`

func scanOutbox(r sqlrows.Scanner) (OutboxItem, error) {
	var it OutboxItem
	var media, live string
	var ms int64
	if err := r.Scan(&it.ID, &it.Folder, &it.ChatID, &it.UpToSeq, &it.Text, &media, &it.ThreadID, &it.ReplyTo,
		&it.Status, &it.PartsDone, &it.Attempts, &it.LastError, &ms, &it.Voice, &live); err != nil {
		return it, err
	}
	if err := json.Unmarshal([]byte(live), &it.LiveIDs); err != nil {
		return it, fmt.Errorf("outbox %d live ids: %w", it.ID, err)
	}
	it.Created = time.UnixMilli(ms)
	if err := json.Unmarshal([]byte(media), &it.Media); err != nil {
		return it, fmt.Errorf("outbox %d media: %w", it.ID, err)
	}
	return it, nil
}

// PendingOutbox lists unsent answers, oldest first; folder "" lists all.
func (s *Store) PendingOutbox(ctx context.Context, folder string) ([]OutboxItem, error) {
	q := `SELECT ` + outboxCols + ` FROM agent_outbox WHERE status = ?`
	args := []any{OutboxPending}
	if folder != "" {
		q += ` AND folder = ?`
		args = append(args, folder)
	}
	return sqlrows.Query(ctx, s.DB, "pending outbox", scanOutbox, q+` ORDER BY id`, args...)
}

// Outbox fetches one outbox item.
func (s *Store) Outbox(ctx context.Context, id int64) (OutboxItem, error) {
	it, err := scanOutbox(s.DB.QueryRowContext(ctx, `SELECT `+outboxCols+` FROM agent_outbox WHERE id = ?`, id))
	if err != nil {
		return it, fmt.Errorf("outbox %d: %w", id, err)
	}
	return it, nil
}

// ErrOutboxDone: the item is no longer pending (sent or given up,
// perhaps by the instance that held the lease before).
var ErrOutboxDone = errors.New("outbox item is no longer pending")

// ClaimOutbox is the fenced claim made before an item's parts are sent:
// it records the lease epoch sending it and fails with ErrFenced when this
// instance no longer holds the lease, or ErrOutboxDone when the item was
// finished meanwhile, so a stale instance sends nothing.
func (s *Store) ClaimOutbox(ctx context.Context, id int64) error {
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE agent_outbox SET claimed_epoch = ? WHERE id = ? AND status = ?`, max(s.fence.Load(), 0), id, OutboxPending)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrOutboxDone
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("claim outbox %d: %w", id, err)
	}
	return nil
}

// OutboxProgress records that the first parts of an item were delivered,
// so a crash mid-way resends only the rest (fenced).
func (s *Store) OutboxProgress(ctx context.Context, id int64, partsDone int) error {
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE agent_outbox SET parts_done = CASE WHEN parts_done > ? THEN parts_done ELSE ? END WHERE id = ?`, partsDone, partsDone, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox %d progress: %w", id, err)
	}
	return nil
}

// OutboxAttemptFailed counts a failed delivery and returns the attempts so far.
func (s *Store) OutboxAttemptFailed(ctx context.Context, id int64, reason string) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `UPDATE agent_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ? RETURNING attempts`,
		reason, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("outbox %d attempt: %w", id, err)
	}
	return n, nil
}

// CompleteOutbox marks an item sent and advances its group's cursor in one
// transaction: either both happen or neither, so a crash cannot leave a
// sent answer whose messages would be answered again. It is fenced:
// ErrFenced when this instance no longer holds the lease.
func (s *Store) CompleteOutbox(ctx context.Context, id int64) error {
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		var folder string
		var seq int64
		err := tx.QueryRowContext(ctx, `UPDATE agent_outbox SET status = ?, finished = ? WHERE id = ? AND status = ? RETURNING folder, up_to_seq`,
			OutboxSent, time.Now().UnixMilli(), id, OutboxPending).Scan(&folder, &seq)
		if err != nil {
			return err
		}
		return raise(ctx, tx, folder, seq)
	})
	if err != nil {
		return fmt.Errorf("complete outbox %d: %w", id, err)
	}
	return nil
}

// AbandonOutbox gives up on an item that cannot be delivered. The cursor
// stays put, so the next trigger answers those messages afresh.
func (s *Store) AbandonOutbox(ctx context.Context, id int64, reason string) error {
	_, err := s.DB.ExecContext(ctx, `UPDATE agent_outbox SET status = ?, last_error = ?, finished = ? WHERE id = ? AND status = ?`,
		OutboxFailed, reason, time.Now().UnixMilli(), id, OutboxPending)
	if err != nil {
		return fmt.Errorf("abandon outbox %d: %w", id, err)
	}
	return nil
}

// AgentRun is the bookkeeping of one agent run.
type AgentRun struct {
	ID             string
	Folder         string
	Started        time.Time
	Finished       time.Time
	Outcome        string
	UpToSeq        int64
	Iterations     int
	InputTokens    int64
	OutputTokens   int64
	CostMicrocents int64
	CostKnown      bool
	Error          string
	// Model answered the run (the last successful attempt's).
	Model string
	// Attempts are every model call of the run, failed ones included.
	Attempts []Attempt
}

// Attempt is one model call and what it cost.
type Attempt struct {
	At                                   time.Time
	Provider, Model, Outcome             string
	Input, Output, CacheRead, CacheWrite int64
	Reasoning                            int64
	CostMicrocents                       int64
	CostKnown                            bool
	Duration                             time.Duration
	Error                                string
}

// TranscriptEntry is one message of a run. Parts is JSON that the agent
// built without media bytes: images are paths or hashes, never base64.
type TranscriptEntry struct {
	Role  string
	Parts json.RawMessage
}

// SaveRun stores a finished run and its transcript in one transaction.
func (s *Store) SaveRun(ctx context.Context, r AgentRun, entries []TranscriptEntry) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.ID, err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO agent_runs(id, folder, started, finished, outcome, up_to_seq, iterations,
		input_tokens, output_tokens, cost_microcents, cost_known, error, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Folder, r.Started.UnixMilli(), r.Finished.UnixMilli(), r.Outcome, r.UpToSeq, r.Iterations,
		r.InputTokens, r.OutputTokens, r.CostMicrocents, r.CostKnown, r.Error, r.Model)
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.ID, err)
	}
	for _, a := range r.Attempts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO llm_attempts(run_id, folder, at, provider, model, outcome, input_tokens,
			output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_microcents, cost_known, duration_ms, error)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Folder, a.At.UnixMilli(), a.Provider, a.Model, a.Outcome, a.Input, a.Output, a.CacheRead, a.CacheWrite,
			a.Reasoning, a.CostMicrocents, a.CostKnown, a.Duration.Milliseconds(), a.Error); err != nil {
			return fmt.Errorf("save run %s attempts: %w", r.ID, err)
		}
	}
	now := time.Now().UnixMilli()
	for i, e := range entries {
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_transcripts(run_id, folder, idx, role, parts, created) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, r.Folder, i, e.Role, string(e.Parts), now); err != nil {
			return fmt.Errorf("save run %s transcript: %w", r.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save run %s: %w", r.ID, err)
	}
	return nil
}

// Runs lists a group's runs, newest first.
func (s *Store) Runs(ctx context.Context, folder string, limit int) ([]AgentRun, error) {
	return sqlrows.Query(ctx, s.DB, "runs of "+folder, func(row sqlrows.Scanner) (AgentRun, error) {
		var r AgentRun
		var st, fin int64
		err := row.Scan(&r.ID, &r.Folder, &st, &fin, &r.Outcome, &r.UpToSeq, &r.Iterations, &r.InputTokens,
			&r.OutputTokens, &r.CostMicrocents, &r.CostKnown, &r.Error)
		r.Started, r.Finished = time.UnixMilli(st), time.UnixMilli(fin)
		return r, err
	}, `SELECT id, folder, started, finished, outcome, up_to_seq, iterations, input_tokens,
		output_tokens, cost_microcents, cost_known, error FROM agent_runs WHERE folder = ? ORDER BY started DESC, rowid DESC LIMIT ?`, folder, limit)
}

// Transcript returns a run's messages in order.
func (s *Store) Transcript(ctx context.Context, runID string) ([]TranscriptEntry, error) {
	return sqlrows.Query(ctx, s.DB, "transcript "+runID, func(r sqlrows.Scanner) (TranscriptEntry, error) {
		var e TranscriptEntry
		var p string
		err := r.Scan(&e.Role, &p)
		e.Parts = json.RawMessage(p)
		return e, err
	}, `SELECT role, parts FROM agent_transcripts WHERE run_id = ? ORDER BY idx`, runID)
}
