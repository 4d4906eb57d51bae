// Package outboxdb is the outbox's queries: an answer is written down
// before it is sent, so a crash between the model's reply and the
// channel's acknowledgement neither loses nor regenerates it. The agent's
// outbox (agent/deliver.go) owns these rows; package store keeps the
// handle, the dialect, the migrations (the agent_outbox table) and the
// fencing every write here goes through.
package outboxdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
	"github.com/botd-dev/botd/store"
)

// Statuses of an item.
const (
	Pending = "pending"
	Sent    = "sent"
	Failed  = "failed" // given up after repeated send failures
)

// Item is an answer written before it is sent.
type Item struct {
	ID      int64
	Folder  string
	ChatID  string
	UpToSeq int64 // the group's cursor moves here once the item is sent
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

// ErrDone: the item is no longer pending (sent or given up, perhaps by
// the instance that held the lease before).
var ErrDone = errors.New("outbox item is no longer pending")

// DB is the outbox's queries over the store's handle.
type DB struct{ st *store.Store }

// New is the outbox's queries over st.
func New(st *store.Store) DB { return DB{st: st} }

// Add stores a pending answer and returns its id. It is fenced
// (store.ErrFenced when this instance no longer holds the lease): an
// answer a stale instance made after its successor took over must not
// wait in the outbox for that successor, which answers the same messages
// itself, to send it a second time.
func (d DB) Add(ctx context.Context, it Item) (id int64, err error) {
	err = d.st.Fenced(ctx, func(tx *sql.Tx) error {
		id, err = AddTx(ctx, tx, it)
		return err
	})
	return id, err
}

// AddTx stores a pending answer in tx, a fenced transaction of the
// caller's that does more in the same breath (a batch marked answered).
func AddTx(ctx context.Context, tx *sql.Tx, it Item) (int64, error) {
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
	err = tx.QueryRowContext(ctx, `INSERT INTO agent_outbox(folder, chat_id, up_to_seq, text, media, thread_id, reply_to, status, created, voice, live_ids)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		it.Folder, it.ChatID, it.UpToSeq, it.Text, string(media), it.ThreadID, it.ReplyTo, Pending, it.Created.UnixMilli(), it.Voice, string(live)).Scan(&id)
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

const cols = `id, folder, chat_id, up_to_seq, text, media, thread_id, reply_to, status, parts_done, attempts, last_error, created, voice, live_ids`

func scan(r sqlrows.Scanner) (Item, error) {
	var it Item
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

// Pending lists unsent answers, oldest first; folder "" lists all.
func (d DB) Pending(ctx context.Context, folder string) ([]Item, error) {
	q := `SELECT ` + cols + ` FROM agent_outbox WHERE status = ?`
	args := []any{Pending}
	if folder != "" {
		q += ` AND folder = ?`
		args = append(args, folder)
	}
	return sqlrows.Query(ctx, d.st.DB, "pending outbox", scan, q+` ORDER BY id`, args...)
}

// Get fetches one item.
func (d DB) Get(ctx context.Context, id int64) (Item, error) {
	it, err := scan(d.st.DB.QueryRowContext(ctx, `SELECT `+cols+` FROM agent_outbox WHERE id = ?`, id))
	if err != nil {
		return it, fmt.Errorf("outbox %d: %w", id, err)
	}
	return it, nil
}

// Claim is the fenced claim made before an item's parts are sent: it
// records the lease epoch sending it and fails with store.ErrFenced when
// this instance no longer holds the lease, or ErrDone when the item was
// finished meanwhile, so a stale instance sends nothing.
func (d DB) Claim(ctx context.Context, id int64) error {
	err := d.st.Fenced(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE agent_outbox SET claimed_epoch = ? WHERE id = ? AND status = ?`, max(d.st.FenceEpoch(), 0), id, Pending)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrDone
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("claim outbox %d: %w", id, err)
	}
	return nil
}

// Progress records that the first parts of an item were delivered, so a
// crash mid-way resends only the rest (fenced).
func (d DB) Progress(ctx context.Context, id int64, partsDone int) error {
	err := d.st.Fenced(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE agent_outbox SET parts_done = CASE WHEN parts_done > ? THEN parts_done ELSE ? END WHERE id = ?`, partsDone, partsDone, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox %d progress: %w", id, err)
	}
	return nil
}

// AttemptFailed counts a failed delivery and returns the attempts so far.
func (d DB) AttemptFailed(ctx context.Context, id int64, reason string) (int, error) {
	var n int
	err := d.st.DB.QueryRowContext(ctx, `UPDATE agent_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ? RETURNING attempts`,
		reason, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("outbox %d attempt: %w", id, err)
	}
	return n, nil
}

// Complete marks an item sent and advances its group's cursor in one
// transaction: either both happen or neither, so a crash cannot leave a
// sent answer whose messages would be answered again. It is fenced:
// store.ErrFenced when this instance no longer holds the lease.
func (d DB) Complete(ctx context.Context, id int64) error {
	err := d.st.Fenced(ctx, func(tx *sql.Tx) error {
		var folder string
		var seq int64
		err := tx.QueryRowContext(ctx, `UPDATE agent_outbox SET status = ?, finished = ? WHERE id = ? AND status = ? RETURNING folder, up_to_seq`,
			Sent, time.Now().UnixMilli(), id, Pending).Scan(&folder, &seq)
		if err != nil {
			return err
		}
		return store.RaiseAgentCursor(ctx, tx, folder, seq)
	})
	if err != nil {
		return fmt.Errorf("complete outbox %d: %w", id, err)
	}
	return nil
}

// Abandon gives up on an item that cannot be delivered. The cursor stays
// put, so the next trigger answers those messages afresh.
func (d DB) Abandon(ctx context.Context, id int64, reason string) error {
	_, err := d.st.DB.ExecContext(ctx, `UPDATE agent_outbox SET status = ?, last_error = ?, finished = ? WHERE id = ? AND status = ?`,
		Failed, reason, time.Now().UnixMilli(), id, Pending)
	if err != nil {
		return fmt.Errorf("abandon outbox %d: %w", id, err)
	}
	return nil
}
