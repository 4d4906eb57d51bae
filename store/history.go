package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// History returns up to limit messages of the chats with after < seq <=
// upTo sent at or after since: the newest when there are more, in order.
// It is the part of a conversation a run has already handled.
func (s *Store) History(ctx context.Context, chats []string, after, upTo int64, since time.Time, limit int) ([]Message, error) {
	if len(chats) == 0 || limit <= 0 || upTo <= after {
		return nil, nil
	}
	where, args := historyWhere(chats, after, upTo, since)
	return sqlrows.Query(ctx, s.DB, fmt.Sprintf("history %d..%d", after, upTo), scanMessage,
		`SELECT * FROM (SELECT `+msgCols+` FROM messages WHERE `+where+`
		ORDER BY seq DESC LIMIT ?) AS newest ORDER BY seq`, append(args, limit)...)
}

// historyWhere is the condition History and CountHistory share.
func historyWhere(chats []string, after, upTo int64, since time.Time) (string, []any) {
	args := make([]any, 0, len(chats)+4)
	for _, c := range chats {
		args = append(args, c)
	}
	args = append(args, after, upTo, since.UnixMilli())
	return `chat_id IN (` + strings.TrimSuffix(strings.Repeat("?,", len(chats)), ",") + `) AND seq > ? AND seq <= ? AND ts >= ?`, args
}

// CountHistory counts what History would return without a limit.
func (s *Store) CountHistory(ctx context.Context, chats []string, after, upTo int64, since time.Time) (int, error) {
	if len(chats) == 0 || upTo <= after {
		return 0, nil
	}
	where, args := historyWhere(chats, after, upTo, since)
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE `+where, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count history %d..%d: %w", after, upTo, err)
	}
	return n, nil
}

// Summary is a compaction of a group's conversation up to a message.
type Summary struct {
	Folder  string
	UpToSeq int64
	Text    string
	Created time.Time
}

// LatestSummary returns the group's newest summary, if any.
func (s *Store) LatestSummary(ctx context.Context, folder string) (Summary, bool, error) {
	sm := Summary{Folder: folder}
	var created int64
	err := s.DB.QueryRowContext(ctx, `SELECT up_to_seq, text, created FROM agent_summaries WHERE folder = ? ORDER BY up_to_seq DESC LIMIT 1`, folder).
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
func (s *Store) SaveSummary(ctx context.Context, sm Summary) error {
	tx, err := s.DB.BeginTx(ctx, nil)
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

// MediaNote is what the assistant learnt from fetching one ref: the tool's
// text (metadata, a transcript, a document's text) or, for what it saw,
// its own answer. Never bytes.
type MediaNote struct {
	Ref     string
	Note    string
	RunID   string
	Created time.Time
}

// PutMediaNote records (or replaces) the group's note on a ref.
func (s *Store) PutMediaNote(ctx context.Context, folder string, n MediaNote) error {
	_, err := s.DB.ExecContext(ctx, `INSERT INTO agent_media_notes(folder, ref_id, note, run_id, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(folder, ref_id) DO UPDATE SET note = excluded.note, run_id = excluded.run_id, created = excluded.created`,
		folder, n.Ref, n.Note, n.RunID, n.Created.UnixMilli())
	if err != nil {
		return fmt.Errorf("save media note %s: %w", n.Ref, err)
	}
	return nil
}

// MediaNotes returns the group's notes on the given refs, by ref.
func (s *Store) MediaNotes(ctx context.Context, folder string, refs []string) (map[string]MediaNote, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(refs)+1)
	args = append(args, folder)
	for _, r := range refs {
		args = append(args, r)
	}
	notes, err := sqlrows.Query(ctx, s.DB, "media notes", func(r sqlrows.Scanner) (MediaNote, error) {
		var n MediaNote
		var created int64
		err := r.Scan(&n.Ref, &n.Note, &n.RunID, &created)
		n.Created = time.UnixMilli(created)
		return n, err
	}, `SELECT ref_id, note, run_id, created FROM agent_media_notes
		WHERE folder = ? AND ref_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(refs)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]MediaNote, len(notes))
	for _, n := range notes {
		out[n.Ref] = n
	}
	return out, nil
}
