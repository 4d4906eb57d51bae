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

// RaiseAgentCursor moves a group's cursor forward to seq (never back)
// inside tx, a fenced transaction of the caller's that commits what the
// move stands for (an answer sent, a task handed off) in the same breath.
func RaiseAgentCursor(ctx context.Context, tx *sql.Tx, folder string, seq int64) error {
	return raise(ctx, tx, folder, seq)
}

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

// DueTrigger returns the group's latest trigger and its cursor in one
// read; ok is false when the group was never triggered (the cursor is
// then not read). The trigger is due when t.Seq > cursor.
func (s *Store) DueTrigger(ctx context.Context, folder string) (t Trigger, cursor int64, ok bool, err error) {
	var cur string
	err = s.DB.QueryRowContext(ctx, `SELECT t.folder, t.seq, t.chat_id, t.message_id, t.thread_id, COALESCE(c.value, '')
		FROM agent_triggers t LEFT JOIN cursors c ON c.name = ? WHERE t.folder = ?`, AgentCursorName(folder), folder).
		Scan(&t.Folder, &t.Seq, &t.ChatID, &t.MessageID, &t.ThreadID, &cur)
	if errors.Is(err, sql.ErrNoRows) {
		return Trigger{}, 0, false, nil
	}
	if err != nil {
		return Trigger{}, 0, false, fmt.Errorf("trigger of %s: %w", folder, err)
	}
	if cur != "" {
		if cursor, err = strconv.ParseInt(cur, 10, 64); err != nil {
			return Trigger{}, 0, false, fmt.Errorf("cursor %s: %w", AgentCursorName(folder), err)
		}
	}
	return t, cursor, true, nil
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
	// Split is where InputTokens went; nil for a run recorded before
	// botd split the bill.
	Split *TokenSplit
}

// TokenSplit is a run's input tokens (cache reads and writes included)
// apportioned over what the requests held: the fixed system prompt, the
// tools' schemas, the conversation (messages, tool calls and results)
// and media (images, documents, audio). Its parts sum to the run's
// InputTokens.
type TokenSplit struct {
	Prompt, Tools, Conversation, Media int64
}

// Total is the sum of the parts.
func (s TokenSplit) Total() int64 { return s.Prompt + s.Tools + s.Conversation + s.Media }

// Add adds o to s part by part.
func (s *TokenSplit) Add(o TokenSplit) {
	s.Prompt += o.Prompt
	s.Tools += o.Tools
	s.Conversation += o.Conversation
	s.Media += o.Media
}

// splitColumns are a run's split as its four nullable columns.
func splitColumns(s *TokenSplit) [4]any {
	if s == nil {
		return [4]any{nil, nil, nil, nil}
	}
	return [4]any{s.Prompt, s.Tools, s.Conversation, s.Media}
}

// splitScan reads the four columns splitColumns writes.
type splitScan [4]sql.NullInt64

func (c *splitScan) dest() []any { return []any{&c[0], &c[1], &c[2], &c[3]} }

// split is the run's split; nil when the row has none.
func (c *splitScan) split() *TokenSplit {
	if !c[0].Valid || !c[1].Valid || !c[2].Valid || !c[3].Valid {
		return nil
	}
	return &TokenSplit{Prompt: c[0].Int64, Tools: c[1].Int64, Conversation: c[2].Int64, Media: c[3].Int64}
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

// SaveRun stores a finished run and its transcript in one transaction,
// with its tool calls as summaries show them (toolcalls.go).
func (s *Store) SaveRun(ctx context.Context, r AgentRun, entries []TranscriptEntry) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save run %s: %w", r.ID, err)
	}
	defer tx.Rollback()
	sp := splitColumns(r.Split)
	_, err = tx.ExecContext(ctx, `INSERT INTO agent_runs(id, folder, started, finished, outcome, up_to_seq, iterations,
		input_tokens, output_tokens, cost_microcents, cost_known, error, model,
		prompt_tokens, tool_tokens, conversation_tokens, media_tokens, tool_calls_kept) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		r.ID, r.Folder, r.Started.UnixMilli(), r.Finished.UnixMilli(), r.Outcome, r.UpToSeq, r.Iterations,
		r.InputTokens, r.OutputTokens, r.CostMicrocents, r.CostKnown, r.Error, r.Model, sp[0], sp[1], sp[2], sp[3])
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
	var k toolKeeper
	for i, e := range entries {
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_transcripts(run_id, folder, idx, role, parts, created) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, r.Folder, i, e.Role, string(e.Parts), now); err != nil {
			return fmt.Errorf("save run %s transcript: %w", r.ID, err)
		}
		k.add(e.Role, e.Parts)
	}
	if err := k.save(ctx, tx, r.ID); err != nil {
		return err
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
		var sp splitScan
		err := row.Scan(append([]any{&r.ID, &r.Folder, &st, &fin, &r.Outcome, &r.UpToSeq, &r.Iterations, &r.InputTokens,
			&r.OutputTokens, &r.CostMicrocents, &r.CostKnown, &r.Error}, sp.dest()...)...)
		r.Started, r.Finished, r.Split = time.UnixMilli(st), time.UnixMilli(fin), sp.split()
		return r, err
	}, `SELECT id, folder, started, finished, outcome, up_to_seq, iterations, input_tokens,
		output_tokens, cost_microcents, cost_known, error, prompt_tokens, tool_tokens, conversation_tokens, media_tokens FROM agent_runs WHERE folder = ? ORDER BY started DESC, rowid DESC LIMIT ?`, folder, limit)
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
