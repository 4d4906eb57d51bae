// Package historydb is the conversation's own queries: the summary that
// stands for a group's older messages, and the notes runs keep on what
// they fetched. The agent's history (agent/history.go) owns these rows;
// package store keeps the handle, the dialect, the migrations (the
// agent_summaries and agent_media_notes tables) and the messages
// themselves.
package historydb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
	"github.com/botd-dev/botd/store"
)

// Summary is a compaction of a group's conversation up to a message.
type Summary struct {
	Folder  string
	UpToSeq int64
	Text    string
	Created time.Time
}

// Note is what the assistant learnt from fetching one ref: the tool's
// text (metadata, a transcript, a document's text) or, for what it saw,
// its own answer. Never bytes.
type Note struct {
	Ref     string
	Note    string
	RunID   string
	Created time.Time
}

// DB is the conversation's queries over the store's handle.
type DB struct{ st *store.Store }

// New is the conversation's queries over st.
func New(st *store.Store) DB { return DB{st: st} }

// LatestSummary returns the group's newest summary, if any.
func (d DB) LatestSummary(ctx context.Context, folder string) (Summary, bool, error) {
	sm := Summary{Folder: folder}
	var created int64
	err := d.st.DB.QueryRowContext(ctx, `SELECT up_to_seq, text, created FROM agent_summaries WHERE folder = ? ORDER BY up_to_seq DESC LIMIT 1`, folder).
		Scan(&sm.UpToSeq, &sm.Text, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Summary{}, false, nil
	}
	if err != nil {
		return Summary{}, false, fmt.Errorf("latest summary of %s: %w", folder, err)
	}
	sm.Created = time.UnixMilli(created)
	return sm, true, nil
}

// SaveSummary stores a summary and drops the group's older ones: each
// summary folds in the one before it, so only the newest is ever read.
func (d DB) SaveSummary(ctx context.Context, sm Summary) error {
	tx, err := d.st.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save summary of %s: %w", sm.Folder, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO agent_summaries(folder, up_to_seq, text, created) VALUES (?, ?, ?, ?)
		ON CONFLICT(folder, up_to_seq) DO UPDATE SET text = excluded.text, created = excluded.created`,
		sm.Folder, sm.UpToSeq, sm.Text, sm.Created.UnixMilli()); err != nil {
		return fmt.Errorf("save summary of %s: %w", sm.Folder, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM agent_summaries WHERE folder = ? AND up_to_seq < ?`, sm.Folder, sm.UpToSeq); err != nil {
		return fmt.Errorf("save summary of %s: %w", sm.Folder, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save summary of %s: %w", sm.Folder, err)
	}
	return nil
}

// PutNote records (or replaces) the group's note on a ref.
func (d DB) PutNote(ctx context.Context, folder string, n Note) error {
	_, err := d.st.DB.ExecContext(ctx, `INSERT INTO agent_media_notes(folder, ref_id, note, run_id, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(folder, ref_id) DO UPDATE SET note = excluded.note, run_id = excluded.run_id, created = excluded.created`,
		folder, n.Ref, n.Note, n.RunID, n.Created.UnixMilli())
	if err != nil {
		return fmt.Errorf("save media note %s: %w", n.Ref, err)
	}
	return nil
}

// Notes returns the group's notes on the given refs, by ref.
func (d DB) Notes(ctx context.Context, folder string, refs []string) (map[string]Note, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(refs)+1)
	args = append(args, folder)
	for _, r := range refs {
		args = append(args, r)
	}
	notes, err := sqlrows.Query(ctx, d.st.DB, "media notes", func(r sqlrows.Scanner) (Note, error) {
		var n Note
		var created int64
		err := r.Scan(&n.Ref, &n.Note, &n.RunID, &created)
		n.Created = time.UnixMilli(created)
		return n, err
	}, `SELECT ref_id, note, run_id, created FROM agent_media_notes
		WHERE folder = ? AND ref_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(refs)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Note, len(notes))
	for _, n := range notes {
		out[n.Ref] = n
	}
	return out, nil
}

// StartAfresh makes the group's next run start without the earlier
// conversation (/new): an empty summary stands for everything up to the
// newest message stored in chats, and the group's cursor moves there, so
// neither what was answered nor what was said since is shown again.
// Notes on refs and the memory stay.
func (d DB) StartAfresh(ctx context.Context, folder string, chats []string, now time.Time) error {
	if len(chats) == 0 {
		return nil
	}
	args := make([]any, 0, len(chats))
	for _, c := range chats {
		args = append(args, c)
	}
	var seq int64
	err := d.st.DB.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM messages WHERE chat_id IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(chats)), ",")+`)`, args...).Scan(&seq)
	if err != nil {
		return fmt.Errorf("start %s afresh: %w", folder, err)
	}
	if err := d.SaveSummary(ctx, Summary{Folder: folder, UpToSeq: seq, Created: now}); err != nil {
		return fmt.Errorf("start %s afresh: %w", folder, err)
	}
	if err := d.st.AdvanceAgentCursor(ctx, folder, seq); err != nil {
		return fmt.Errorf("start %s afresh: %w", folder, err)
	}
	return nil
}
