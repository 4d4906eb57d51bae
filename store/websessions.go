package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// The web channel's access state (package channels/web): room links and
// the live sessions of its signed cookies. Kept here rather than in the
// channel's folder so instances sharing a database share it: a login on
// one is accepted by the other, and a logout or a revoked link is refused
// by both.

// keptEndedFactor bounds the ended sessions kept, as a multiple of the
// bound on live ones: ended rows only guard against a late import (see
// ImportWebSession), so the oldest go first.
const keptEndedFactor = 10

// WebSession is one session of the web channel, as its cookie's nonce
// names it.
type WebSession struct {
	Nonce string
	Role  string // admin | guest
	Room  string // a guest's room
	Link  string // the room link a guest came through
	// KeyID names the key the cookie was signed with (derived from the
	// admin token), so an instance can tell that another one signs with a
	// different token.
	KeyID   string
	Created time.Time
	Expires time.Time
	Ended   time.Time // zero while the session is live
}

// Live reports whether w is neither ended nor expired at now.
func (w WebSession) Live(now time.Time) bool { return w.Ended.IsZero() && now.Before(w.Expires) }

// RoomLink lets whoever has its URL (which carries Token) into one room
// of the web channel, until it is revoked.
type RoomLink struct {
	ID      string
	Room    string
	Token   string
	Created time.Time
	Revoked time.Time // zero while the link works
}

const webSessionCols = `nonce, role, room, link_id, key_id, created, expires, ended`

func scanWebSession(r sqlrows.Scanner) (WebSession, error) {
	var w WebSession
	var created, expires, ended int64
	if err := r.Scan(&w.Nonce, &w.Role, &w.Room, &w.Link, &w.KeyID, &created, &expires, &ended); err != nil {
		return WebSession{}, err
	}
	w.Created, w.Expires = time.UnixMilli(created).UTC(), time.UnixMilli(expires).UTC()
	if ended != 0 {
		w.Ended = time.UnixMilli(ended).UTC()
	}
	return w, nil
}

// CreateWebSession records w as a live session. Past max live sessions the
// oldest end (at now) and their nonces are returned, so the caller can
// close what they hold open. Expired sessions are removed, and ended ones
// past keptEndedFactor×max, oldest first. Two instances logging people in
// at the same moment may each count without the other's new session, so
// the bound can be passed by one until the next login.
func (s *Store) CreateWebSession(ctx context.Context, w WebSession, max int, now time.Time) (ended []string, err error) {
	if w.Nonce == "" || w.Role == "" {
		return nil, errors.New("web session: nonce and role are required")
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("web session: %w", err)
	}
	defer tx.Rollback()
	at := now.UnixMilli()
	if _, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE expires <= ?`, at); err != nil {
		return nil, fmt.Errorf("web session: drop expired: %w", err)
	}
	if err := insertWebSession(ctx, tx, w, ""); err != nil {
		return nil, err
	}
	var live int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM web_sessions WHERE ended = 0`).Scan(&live); err != nil {
		return nil, fmt.Errorf("web session: count: %w", err)
	}
	if live > max {
		ended, err = sqlrows.Query(ctx, tx, "web session: oldest", func(r sqlrows.Scanner) (string, error) {
			var n string
			return n, r.Scan(&n)
		}, `SELECT nonce FROM web_sessions WHERE ended = 0 ORDER BY id LIMIT ?`, live-max)
		if err != nil {
			return nil, err
		}
		for _, n := range ended {
			if _, err := tx.ExecContext(ctx, `UPDATE web_sessions SET ended = ? WHERE nonce = ? AND ended = 0`, at, n); err != nil {
				return nil, fmt.Errorf("web session: end oldest: %w", err)
			}
		}
	}
	var gone int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM web_sessions WHERE ended <> 0`).Scan(&gone); err != nil {
		return nil, fmt.Errorf("web session: count ended: %w", err)
	}
	if keep := keptEndedFactor * max; gone > keep {
		if _, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE id IN
			(SELECT id FROM web_sessions WHERE ended <> 0 ORDER BY ended, id LIMIT ?)`, gone-keep); err != nil {
			return nil, fmt.Errorf("web session: drop ended: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("web session: %w", err)
	}
	return ended, nil
}

// insertWebSession adds w; conflict is "" for a plain insert (a nonce
// taken is an error) or the clause that settles one.
func insertWebSession(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, w WebSession, conflict string) error {
	var ended int64
	if !w.Ended.IsZero() {
		ended = w.Ended.UnixMilli()
	}
	_, err := db.ExecContext(ctx, `INSERT INTO web_sessions(`+webSessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`+conflict,
		w.Nonce, w.Role, w.Room, w.Link, w.KeyID, w.Created.UnixMilli(), w.Expires.UnixMilli(), ended)
	if err != nil {
		return fmt.Errorf("web session: record: %w", err)
	}
	return nil
}

// ImportWebSession adds w unless its nonce is known (live, or ended and
// still kept): importing the same file twice, or on two instances, adds
// it once and never revives a session ended since.
func (s *Store) ImportWebSession(ctx context.Context, w WebSession) error {
	return insertWebSession(ctx, s.DB, w, ` ON CONFLICT DO NOTHING`)
}

// WebSession returns the session nonce names; ok is false when there is
// none (never made, or expired or ended long enough ago to be dropped).
func (s *Store) WebSession(ctx context.Context, nonce string) (w WebSession, ok bool, err error) {
	w, err = scanWebSession(s.DB.QueryRowContext(ctx, `SELECT `+webSessionCols+` FROM web_sessions WHERE nonce = ?`, nonce))
	if errors.Is(err, sql.ErrNoRows) {
		return WebSession{}, false, nil
	}
	if err != nil {
		return WebSession{}, false, fmt.Errorf("web session: %w", err)
	}
	return w, true, nil
}

// WebSessions returns the sessions of nonces that exist, by nonce: one
// query per 500, for an instance re-checking the sessions it holds open.
func (s *Store) WebSessions(ctx context.Context, nonces []string) (map[string]WebSession, error) {
	out := make(map[string]WebSession, len(nonces))
	for len(nonces) > 0 {
		n := min(len(nonces), 500)
		args := make([]any, n)
		for i, v := range nonces[:n] {
			args[i] = v
		}
		ws, err := sqlrows.Query(ctx, s.DB, "web sessions", scanWebSession,
			`SELECT `+webSessionCols+` FROM web_sessions WHERE nonce IN (?`+strings.Repeat(", ?", n-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			out[w.Nonce] = w
		}
		nonces = nonces[n:]
	}
	return out, nil
}

// EndWebSession ends the session nonce names at now (a logout); ok is
// false when it was not live.
func (s *Store) EndWebSession(ctx context.Context, nonce string, now time.Time) (ok bool, err error) {
	res, err := s.DB.ExecContext(ctx, `UPDATE web_sessions SET ended = ? WHERE nonce = ? AND ended = 0`, now.UnixMilli(), nonce)
	if err != nil {
		return false, fmt.Errorf("end web session: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// LiveWebSessionKeys counts the live sessions at now by the key that
// signed them.
func (s *Store) LiveWebSessionKeys(ctx context.Context, now time.Time) (map[string]int, error) {
	type keyCount struct {
		key string
		n   int
	}
	rows, err := sqlrows.Query(ctx, s.DB, "web session keys", func(r sqlrows.Scanner) (keyCount, error) {
		var k keyCount
		return k, r.Scan(&k.key, &k.n)
	}, `SELECT key_id, COUNT(*) FROM web_sessions WHERE ended = 0 AND expires > ? GROUP BY key_id`, now.UnixMilli())
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, k := range rows {
		out[k.key] = k.n
	}
	return out, nil
}

// tokenSHA256 is what a link is looked up by: a query on the token itself
// would compare it in the database's own (not constant) time.
func tokenSHA256(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

const roomLinkCols = `id, room, token, created, revoked`

func scanRoomLink(r sqlrows.Scanner) (RoomLink, error) {
	var l RoomLink
	var created, revoked int64
	if err := r.Scan(&l.ID, &l.Room, &l.Token, &created, &revoked); err != nil {
		return RoomLink{}, err
	}
	l.Created = time.UnixMilli(created).UTC()
	if revoked != 0 {
		l.Revoked = time.UnixMilli(revoked).UTC()
	}
	return l, nil
}

func (s *Store) insertRoomLink(ctx context.Context, l RoomLink, conflict string) error {
	if l.ID == "" || l.Room == "" || l.Token == "" {
		return errors.New("room link: id, room and token are required")
	}
	var revoked int64
	if !l.Revoked.IsZero() {
		revoked = l.Revoked.UnixMilli()
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO web_room_links(id, room, token, token_sha256, created, revoked) VALUES (?, ?, ?, ?, ?, ?)`+conflict,
		l.ID, l.Room, l.Token, tokenSHA256(l.Token), l.Created.UnixMilli(), revoked)
	if err != nil {
		return fmt.Errorf("room link: record: %w", err)
	}
	return nil
}

// CreateRoomLink records a new link.
func (s *Store) CreateRoomLink(ctx context.Context, l RoomLink) error {
	return s.insertRoomLink(ctx, l, "")
}

// ImportRoomLink adds l unless a link with its id or token is known
// (working or revoked), so a file imported again never revives a link.
func (s *Store) ImportRoomLink(ctx context.Context, l RoomLink) error {
	return s.insertRoomLink(ctx, l, ` ON CONFLICT DO NOTHING`)
}

// RoomLinks lists the links that work, oldest first.
func (s *Store) RoomLinks(ctx context.Context) ([]RoomLink, error) {
	return sqlrows.Query(ctx, s.DB, "room links", scanRoomLink,
		`SELECT `+roomLinkCols+` FROM web_room_links WHERE revoked = 0 ORDER BY created, rowid`)
}

// RoomLink returns the link id names, revoked or not; ok is false when
// there is none.
func (s *Store) RoomLink(ctx context.Context, id string) (l RoomLink, ok bool, err error) {
	l, err = scanRoomLink(s.DB.QueryRowContext(ctx, `SELECT `+roomLinkCols+` FROM web_room_links WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return RoomLink{}, false, nil
	}
	if err != nil {
		return RoomLink{}, false, fmt.Errorf("room link %s: %w", id, err)
	}
	return l, true, nil
}

// RoomLinkByToken returns the working link whose URL carries token.
func (s *Store) RoomLinkByToken(ctx context.Context, token string) (l RoomLink, ok bool, err error) {
	l, err = scanRoomLink(s.DB.QueryRowContext(ctx, `SELECT `+roomLinkCols+` FROM web_room_links
		WHERE token_sha256 = ? AND revoked = 0`, tokenSHA256(token)))
	if errors.Is(err, sql.ErrNoRows) {
		return RoomLink{}, false, nil
	}
	if err != nil {
		return RoomLink{}, false, fmt.Errorf("room link: %w", err)
	}
	return l, true, nil
}

// RevokeRoomLink revokes the link id names and, in the same transaction,
// ends the sessions opened through it, whose nonces it returns; found is
// false when no working link has that id.
func (s *Store) RevokeRoomLink(ctx context.Context, id string, now time.Time) (found bool, ended []string, err error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return false, nil, fmt.Errorf("revoke room link: %w", err)
	}
	defer tx.Rollback()
	at := now.UnixMilli()
	res, err := tx.ExecContext(ctx, `UPDATE web_room_links SET revoked = ? WHERE id = ? AND revoked = 0`, at, id)
	if err != nil {
		return false, nil, fmt.Errorf("revoke room link: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, nil, err
	}
	ended, err = sqlrows.Query(ctx, tx, "revoke room link: sessions", func(r sqlrows.Scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `UPDATE web_sessions SET ended = ? WHERE link_id = ? AND ended = 0 RETURNING nonce`, at, id)
	if err != nil {
		return false, nil, err
	}
	if err := tx.Commit(); err != nil {
		return false, nil, fmt.Errorf("revoke room link: %w", err)
	}
	return true, ended, nil
}

// SetWebSessionName gives the session nonce names its display name, once:
// ok is false when it had one already (a guest's name is fixed for the
// session) or is not live at now.
func (s *Store) SetWebSessionName(ctx context.Context, nonce, name string, now time.Time) (ok bool, err error) {
	res, err := s.DB.ExecContext(ctx, `UPDATE web_sessions SET name = ? WHERE nonce = ? AND name = '' AND ended = 0 AND expires > ?`,
		name, nonce, now.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("web session name: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// WebSessionName is the display name of the session nonce names, "" when
// it has none.
func (s *Store) WebSessionName(ctx context.Context, nonce string) (string, error) {
	var name string
	err := s.DB.QueryRowContext(ctx, `SELECT name FROM web_sessions WHERE nonce = ?`, nonce).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("web session name: %w", err)
	}
	return name, nil
}

// WebRoomNames is the names live sessions other than nonce hold in room
// at now, for a guest choosing one that is not taken.
func (s *Store) WebRoomNames(ctx context.Context, room, nonce string, now time.Time) ([]string, error) {
	return sqlrows.Query(ctx, s.DB, "web room names", func(r sqlrows.Scanner) (string, error) {
		var n string
		err := r.Scan(&n)
		return n, err
	}, `SELECT name FROM web_sessions WHERE room = ? AND nonce <> ? AND name <> '' AND ended = 0 AND expires > ?`,
		room, nonce, now.UnixMilli())
}

// SenderNames is the names the sender senderID posted under in chat, for
// the web rooms' guests, who may not take the admin's.
func (s *Store) SenderNames(ctx context.Context, chat, senderID string) ([]string, error) {
	return sqlrows.Query(ctx, s.DB, "sender names", func(r sqlrows.Scanner) (string, error) {
		var n string
		err := r.Scan(&n)
		return n, err
	}, `SELECT DISTINCT sender_name FROM messages WHERE chat_id = ? AND sender_id = ?`, chat, senderID)
}
