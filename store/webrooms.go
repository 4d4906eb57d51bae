package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/internal/sqlrows"
)

// The web channel's rooms (package channels/web) keep their recent
// messages here rather than in a log in the channel's folder, so that
// instances sharing a database show the same rooms: a standby's room
// pages show what the active instance wrote, and the instance that takes
// over opens each room with its whole recent history. These rows are
// what a page shows; the agent reads the messages table.

// WebRoomMessage is one message of a web room as its pages show it.
type WebRoomMessage struct {
	Room string
	// Seq numbers the room's messages, from 1, in the order they were
	// added by any instance; a page resumes its event stream after one.
	Seq       int64
	ID        string
	Time      time.Time // kept to the millisecond
	From      string
	Assistant bool
	System    bool
	Text      string
	// Files is the JSON the channel wrote for the message's files, ""
	// for none: the store keeps it, the channel reads it.
	Files   string
	ReplyTo string
	Note    string
}

// appendRetries bounds the tries of an append that lost a race for its
// seq to another process (on Postgres; SQLite has one writer at a time).
const appendRetries = 32

const webRoomCols = `room, seq, id, at, sender, is_assistant, is_system, text, files, reply_to, note`

func scanWebRoomMessage(r sqlrows.Scanner) (WebRoomMessage, error) {
	var m WebRoomMessage
	var at int64
	err := r.Scan(&m.Room, &m.Seq, &m.ID, &at, &m.From, &m.Assistant, &m.System, &m.Text, &m.Files, &m.ReplyTo, &m.Note)
	m.Time = time.UnixMilli(at)
	return m, err
}

// insertWebRoomMessage adds m unless its id is known in the room (then ok
// is false). Its seq is one past the room's newest, or m.Seq when that is
// larger (an import keeps the numbers pages know). The seq is read and
// taken in one statement; another process taking the same one at once
// makes it fail with a unique violation, which the caller retries.
func insertWebRoomMessage(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, m WebRoomMessage) (seq int64, ok bool, err error) {
	err = db.QueryRowContext(ctx, `INSERT INTO web_room_messages(`+webRoomCols+`)
		VALUES (?, (SELECT CASE WHEN COALESCE(MAX(seq), 0) < ? THEN ? ELSE COALESCE(MAX(seq), 0) + 1 END
			FROM web_room_messages WHERE room = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (room, id) DO NOTHING RETURNING seq`,
		m.Room, m.Seq, m.Seq, m.Room, m.ID, m.Time.UnixMilli(), m.From, m.Assistant, m.System, m.Text, m.Files, m.ReplyTo, m.Note).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return seq, true, nil
}

// AppendWebRoomMessage adds m to its room after the newest message, as
// whichever process added that, and returns it with its seq (m.Seq is
// ignored). A message whose id the room holds already is not added again:
// added is false and the stored one is returned.
func (s *Store) AppendWebRoomMessage(ctx context.Context, m WebRoomMessage) (stored WebRoomMessage, added bool, err error) {
	if m.Room == "" || m.ID == "" {
		return WebRoomMessage{}, false, errors.New("web room message: room and id are required")
	}
	m.Seq = 0
	for try := 1; ; try++ {
		seq, ok, err := insertWebRoomMessage(ctx, s.DB, m)
		switch {
		case err == nil && ok:
			m.Seq, m.Time = seq, time.UnixMilli(m.Time.UnixMilli())
			return m, true, nil
		case err == nil:
			stored, err = scanWebRoomMessage(s.DB.QueryRowContext(ctx, `SELECT `+webRoomCols+` FROM web_room_messages
				WHERE room = ? AND id = ?`, m.Room, m.ID))
			if err != nil {
				return WebRoomMessage{}, false, fmt.Errorf("web room %s: message %s: %w", m.Room, m.ID, err)
			}
			return stored, false, nil
		case sqldialect.IsUnique(err) && try < appendRetries:
			continue // another process took the seq: the next statement reads its row
		default:
			return WebRoomMessage{}, false, fmt.Errorf("web room %s: add message: %w", m.Room, err)
		}
	}
}

// ImportWebRoomMessages adds msgs (one room's, oldest first) in one
// transaction, each unless the room holds its id already, keeping a
// message's seq when it is past the room's newest (otherwise it follows
// the newest). A message older than the room's newest is skipped: seqs
// are the order pages show, so history cannot be put below what they
// show already. Importing the same messages twice, or on two instances,
// adds them once. It returns how many were added and how many skipped as
// older.
func (s *Store) ImportWebRoomMessages(ctx context.Context, msgs []WebRoomMessage) (added, older int, err error) {
	for try := 1; ; try++ {
		added, older, err = s.importWebRoomMessages(ctx, msgs)
		if err == nil || !sqldialect.IsUnique(err) || try == appendRetries {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("import web room messages: %w", err)
	}
	return added, older, nil
}

func (s *Store) importWebRoomMessages(ctx context.Context, msgs []WebRoomMessage) (added, older int, err error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	newest := map[string]int64{}
	for _, m := range msgs {
		if m.Room == "" || m.ID == "" {
			continue
		}
		at, ok := newest[m.Room]
		if !ok {
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(at), 0) FROM web_room_messages WHERE room = ?`, m.Room).Scan(&at); err != nil {
				return 0, 0, err
			}
			newest[m.Room] = at
		}
		if m.Time.UnixMilli() < at {
			var known int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM web_room_messages WHERE room = ? AND id = ?`, m.Room, m.ID).Scan(&known); err != nil {
				return 0, 0, err
			}
			if known == 0 {
				older++
			}
			continue
		}
		_, ok, err := insertWebRoomMessage(ctx, tx, m)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			added++
		}
	}
	return added, older, tx.Commit()
}

// WebRoomMessages returns the newest limit messages of room with a seq
// past after (0: the newest limit), oldest first.
func (s *Store) WebRoomMessages(ctx context.Context, room string, after int64, limit int) ([]WebRoomMessage, error) {
	return sqlrows.Query(ctx, s.DB, "web room "+room, scanWebRoomMessage,
		`SELECT * FROM (SELECT `+webRoomCols+` FROM web_room_messages WHERE room = ? AND seq > ?
		ORDER BY seq DESC LIMIT ?) AS newest ORDER BY seq`, room, after, limit)
}

// TrimWebRoom removes all but the newest keep messages of room and
// returns how many went.
func (s *Store) TrimWebRoom(ctx context.Context, room string, keep int) (int64, error) {
	if keep < 1 {
		return 0, fmt.Errorf("trim web room %s: keep %d, want at least 1", room, keep)
	}
	res, err := s.DB.ExecContext(ctx, `DELETE FROM web_room_messages WHERE room = ? AND seq <
		(SELECT seq FROM web_room_messages WHERE room = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`, room, room, keep-1)
	if err != nil {
		return 0, fmt.Errorf("trim web room %s: %w", room, err)
	}
	return res.RowsAffected()
}
