package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// LiveMessage is an answer being shown while the model writes it: where,
// the network's ids of its messages and the text they show. A row that
// outlives its run (a crash) is marked interrupted at the next start.
type LiveMessage struct {
	ID      int64
	Folder  string
	ChatID  string
	IDs     []string
	Text    string
	Opened  time.Time
	Updated time.Time
}

// OpenLive records a live answer just begun and returns its id.
func (s *Store) OpenLive(ctx context.Context, m LiveMessage) (int64, error) {
	ids, err := json.Marshal(nonNil(m.IDs))
	if err != nil {
		return 0, fmt.Errorf("open live message: %w", err)
	}
	if m.Opened.IsZero() {
		m.Opened = time.Now()
	}
	var id int64
	err = s.DB.QueryRowContext(ctx, `INSERT INTO live_messages(folder, chat_id, ids, text, opened, updated) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		m.Folder, m.ChatID, string(ids), m.Text, m.Opened.UnixMilli(), m.Opened.UnixMilli()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("open live message in %s: %w", m.ChatID, err)
	}
	return id, nil
}

// GrowLive records what a live answer shows now.
func (s *Store) GrowLive(ctx context.Context, id int64, ids []string, text string, at time.Time) error {
	b, err := json.Marshal(nonNil(ids))
	if err != nil {
		return fmt.Errorf("live message %d: %w", id, err)
	}
	if _, err := s.DB.ExecContext(ctx, `UPDATE live_messages SET ids = ?, text = ?, updated = ? WHERE id = ?`, string(b), text, at.UnixMilli(), id); err != nil {
		return fmt.Errorf("live message %d: %w", id, err)
	}
	return nil
}

// CloseLive forgets a live answer that was finished, cancelled or marked
// interrupted.
func (s *Store) CloseLive(ctx context.Context, id int64) error {
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM live_messages WHERE id = ?`, id); err != nil {
		return fmt.Errorf("close live message %d: %w", id, err)
	}
	return nil
}

// OpenLives lists the live answers not closed, oldest first: at start-up,
// the ones a crash left behind.
func (s *Store) OpenLives(ctx context.Context) ([]LiveMessage, error) {
	return sqlrows.Query(ctx, s.DB, "open live messages", func(r sqlrows.Scanner) (LiveMessage, error) {
		var m LiveMessage
		var ids string
		var opened, updated int64
		if err := r.Scan(&m.ID, &m.Folder, &m.ChatID, &ids, &m.Text, &opened, &updated); err != nil {
			return m, err
		}
		m.Opened, m.Updated = time.UnixMilli(opened), time.UnixMilli(updated)
		if err := json.Unmarshal([]byte(ids), &m.IDs); err != nil {
			return m, fmt.Errorf("live message %d ids: %w", m.ID, err)
		}
		return m, nil
	}, `SELECT id, folder, chat_id, ids, text, opened, updated FROM live_messages ORDER BY id`)
}

// nonNil is s, or an empty slice: it marshals as [], never null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
