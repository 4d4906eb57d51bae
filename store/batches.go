package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// Batch states. A batch run is handed off (pending), submitted to the
// provider, ended (result or error in), then answered: the answer is in
// the outbox. failed is only for a run that cannot be resumed at all.
const (
	BatchPending   = "pending"
	BatchSubmitted = "submitted"
	BatchEnded     = "ended"
	BatchAnswered  = "answered"
)

// Batch is one run answered through a provider's batch API.
type Batch struct {
	ID       string // the run id; also the batch item's custom id
	Folder   string
	ChatID   string
	ThreadID string
	ReplyTo  string
	UpToSeq  int64
	Provider string
	Model    string
	Request  string // the llm.Request as JSON
	State    string
	BatchID  string
	Result   string // the llm.Result as JSON once ended
	Error    string // why the batch gave no result (the run is resumed interactively)
	Polls    int
	NextPoll time.Time
	Created  time.Time
}

const batchCols = `id, folder, chat_id, thread_id, reply_to, up_to_seq, provider, model, request, state, batch_id, result, error, polls, next_poll, created`

func scanBatch(r sqlrows.Scanner) (Batch, error) {
	var b Batch
	var next, created int64
	err := r.Scan(&b.ID, &b.Folder, &b.ChatID, &b.ThreadID, &b.ReplyTo, &b.UpToSeq, &b.Provider, &b.Model, &b.Request,
		&b.State, &b.BatchID, &b.Result, &b.Error, &b.Polls, &next, &created)
	b.NextPoll, b.Created = time.UnixMilli(next), time.UnixMilli(created)
	return b, err
}

// HandOffBatch records a batch run and moves the group's cursor past its
// messages in one transaction: the group goes on with other messages
// while the batch runs, and a crash cannot leave the task both handed
// off and still due.
func (s *Store) HandOffBatch(ctx context.Context, b Batch) error {
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		if _, err := tx.ExecContext(ctx, `INSERT INTO llm_batches(id, folder, chat_id, thread_id, reply_to, up_to_seq, provider, model, request, state, next_poll, created, updated)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
			b.ID, b.Folder, b.ChatID, b.ThreadID, b.ReplyTo, b.UpToSeq, b.Provider, b.Model, b.Request, BatchPending, now, now); err != nil {
			return err
		}
		return raise(ctx, tx, b.Folder, b.UpToSeq)
	})
	if err != nil {
		return fmt.Errorf("hand off batch %s: %w", b.ID, err)
	}
	return nil
}

// Batches returns the batches in state, oldest first.
func (s *Store) Batches(ctx context.Context, state string) ([]Batch, error) {
	return sqlrows.Query(ctx, s.DB, "batches", scanBatch, `SELECT `+batchCols+` FROM llm_batches WHERE state = ? ORDER BY created, id`, state)
}

// Batch returns one batch by id.
func (s *Store) Batch(ctx context.Context, id string) (Batch, error) {
	b, err := scanBatch(s.DB.QueryRowContext(ctx, `SELECT `+batchCols+` FROM llm_batches WHERE id = ?`, id))
	if err != nil {
		return Batch{}, fmt.Errorf("batch %s: %w", id, err)
	}
	return b, nil
}

// EndedBatch returns the oldest batch of folder whose result is in and
// not yet answered.
func (s *Store) EndedBatch(ctx context.Context, folder string) (Batch, bool, error) {
	b, err := scanBatch(s.DB.QueryRowContext(ctx, `SELECT `+batchCols+` FROM llm_batches WHERE folder = ? AND state = ? ORDER BY created, id LIMIT 1`, folder, BatchEnded))
	if errors.Is(err, sql.ErrNoRows) {
		return Batch{}, false, nil
	}
	if err != nil {
		return Batch{}, false, fmt.Errorf("ended batch of %s: %w", folder, err)
	}
	return b, true, nil
}

// BatchSubmitted records the provider's batch id.
func (s *Store) BatchSubmitted(ctx context.Context, id, batchID string, nextPoll time.Time) error {
	return s.batchUpdate(ctx, id, BatchPending, `state = ?, batch_id = ?, next_poll = ?`, BatchSubmitted, batchID, nextPoll.UnixMilli())
}

// BatchPolled records a poll that found the batch still running.
func (s *Store) BatchPolled(ctx context.Context, id string, nextPoll time.Time) error {
	return s.batchUpdate(ctx, id, BatchSubmitted, `polls = polls + 1, next_poll = ?`, nextPoll.UnixMilli())
}

// BatchEnded stores the result (or why there is none) of a pending or
// submitted batch.
func (s *Store) BatchEnded(ctx context.Context, id, result, errMsg string) error {
	return s.Fenced(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE llm_batches SET state = ?, result = ?, error = ?, updated = ? WHERE id = ? AND state IN (?, ?)`,
			BatchEnded, result, errMsg, time.Now().UnixMilli(), id, BatchPending, BatchSubmitted)
		return batchChanged(id, res, err)
	})
}

// AnswerBatch marks an ended batch answered and, in the same fenced
// transaction, runs queue (nil: nothing), which puts the answer in the
// outbox (outboxdb.AddTx), so a crash cannot answer it twice.
func (s *Store) AnswerBatch(ctx context.Context, id string, queue func(tx *sql.Tx) error) error {
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE llm_batches SET state = ?, updated = ? WHERE id = ? AND state = ?`, BatchAnswered, time.Now().UnixMilli(), id, BatchEnded)
		if err := batchChanged(id, res, err); err != nil {
			return err
		}
		if queue != nil {
			return queue(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("answer batch %s: %w", id, err)
	}
	return nil
}

func (s *Store) batchUpdate(ctx context.Context, id, from, set string, args ...any) error {
	args = append(args, time.Now().UnixMilli(), id, from)
	return s.Fenced(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE llm_batches SET `+set+`, updated = ? WHERE id = ? AND state = ?`, args...)
		return batchChanged(id, res, err)
	})
}

// ErrBatchState means the batch was not in the state the change needs
// (another process or an earlier delivery moved it on).
var ErrBatchState = errors.New("batch is not in the expected state")

func batchChanged(id string, res sql.Result, err error) error {
	if err != nil {
		return fmt.Errorf("batch %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("batch %s: %w", id, ErrBatchState)
	}
	return nil
}
