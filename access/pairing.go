// Package access decides who botd answers beyond the groups of the
// config: a chat no group registers is paired (it gets a code once an
// hour; an owner approves it with the code from `botd chats` or the
// chat), and approved chats are groups kept in the database that the
// running daemon takes up within seconds.
//
// Everything is kept in botd's database, so the command line and the
// daemon (or two instances) see the same pending chats, and a restart
// resets no limit.
package access

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/sqlrows"
	"github.com/botd-dev/botd/internal/textclip"
)

// Bounds of what strangers can make botd keep and send.
const (
	// CodeTTL is how long a code can be approved.
	CodeTTL = 24 * time.Hour
	// ReplyEvery is how often one chat is told its code at most.
	ReplyEvery = time.Hour
	// MaxPending is how many chats wait for approval at most; a new one
	// past it drops the oldest.
	MaxPending = 50
	// MaxRepliesPerHour bounds the pairing replies of all chats together,
	// so a stranger writing from many chats cannot make botd send without
	// end.
	MaxRepliesPerHour = 20
)

// Request is a chat waiting for approval.
type Request struct {
	Code       string // as stored; ShowCode for people
	Chat       string
	ChatName   string
	IsGroup    bool
	SenderID   string
	SenderName string
	Created    time.Time
	Expires    time.Time
}

// Kept is a group approved live, kept in the database.
type Kept struct {
	Folder     string
	Name       string
	Chat       string
	Approved   time.Time
	ApprovedBy string
}

// Group is the group k registers (the defaults of a config entry: the
// trigger is needed, it is not the main group).
func (k Kept) Group() groups.Group {
	return groups.Group{Folder: k.Folder, Name: k.Name, Chat: k.Chat, RequiresTrigger: true, Kept: true}
}

// Store keeps pending chats, the replies sent to them and the approved
// groups in botd's database (tables of migration 19, store/store.go).
type Store struct {
	DB  *sql.DB
	Now func() time.Time // nil: time.Now
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// tx runs fn in one transaction.
func (s *Store) tx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Ask records that a stranger's chat addressed botd. It returns the
// chat's code (a new one, or the one still pending) and whether botd
// should tell the chat now: at most once per chat per ReplyEvery, and
// MaxRepliesPerHour for all chats together. A denied chat gets nothing
// (code ""). The pending list keeps MaxPending chats, dropping the oldest.
func (s *Store) Ask(ctx context.Context, r Request) (code string, tell bool, err error) {
	now := s.now()
	err = s.tx(ctx, "pairing request", func(tx *sql.Tx) error {
		var at int64
		var denied bool
		switch err := tx.QueryRowContext(ctx, `SELECT at, denied FROM pairing_replies WHERE chat_id = ?`, r.Chat).Scan(&at, &denied); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("pairing request: %w", err)
		}
		if denied {
			return nil
		}
		var expires int64
		switch err := tx.QueryRowContext(ctx, `SELECT code, expires FROM pairing_requests WHERE chat_id = ?`, r.Chat).Scan(&code, &expires); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("pairing request: %w", err)
		}
		if code != "" && expires <= now.UnixMilli() {
			if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_requests WHERE code = ?`, code); err != nil {
				return fmt.Errorf("pairing request: %w", err)
			}
			code = ""
		}
		if code == "" {
			code = newCode()
			if _, err := tx.ExecContext(ctx, `INSERT INTO pairing_requests(code, chat_id, chat_name, is_group, sender_id, sender_name, created, expires)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, code, r.Chat, clip(r.ChatName), r.IsGroup, clip(r.SenderID), clip(r.SenderName),
				now.UnixMilli(), now.Add(CodeTTL).UnixMilli()); err != nil {
				return fmt.Errorf("pairing request: %w", err)
			}
			// The newest MaxPending stay: a flood of strangers pushes out
			// the oldest of its own, never grows the table.
			if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_requests WHERE code IN (
				SELECT code FROM pairing_requests ORDER BY created DESC, code LIMIT 1000000 OFFSET ?)`, MaxPending); err != nil {
				return fmt.Errorf("pairing request: %w", err)
			}
		}
		if at > now.Add(-ReplyEvery).UnixMilli() {
			return nil
		}
		var recent int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pairing_replies WHERE at > ?`, now.Add(-time.Hour).UnixMilli()).Scan(&recent); err != nil {
			return fmt.Errorf("pairing request: %w", err)
		}
		if recent >= MaxRepliesPerHour {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO pairing_replies(chat_id, at) VALUES (?, ?)
			ON CONFLICT(chat_id) DO UPDATE SET at = excluded.at`, r.Chat, now.UnixMilli()); err != nil {
			return fmt.Errorf("pairing request: %w", err)
		}
		tell = true
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return code, tell, nil
}

// clip is what a network said about a stranger (a chat's title, a
// sender's name) as botd keeps and shows it: one line, no bidi controls,
// at most maxName runes.
func clip(s string) string { return textclip.OneLine(s, maxName) }

// maxName bounds a stranger's chat or sender name.
const maxName = 100

// Pending lists the chats waiting for approval, newest first.
func (s *Store) Pending(ctx context.Context) ([]Request, error) {
	return sqlrows.Query(ctx, s.DB, "pending chats", scanRequest,
		`SELECT code, chat_id, chat_name, is_group, sender_id, sender_name, created, expires FROM pairing_requests
		WHERE expires > ? ORDER BY created DESC, code`, s.now().UnixMilli())
}

func scanRequest(r sqlrows.Scanner) (Request, error) {
	var q Request
	var created, expires int64
	err := r.Scan(&q.Code, &q.Chat, &q.ChatName, &q.IsGroup, &q.SenderID, &q.SenderName, &created, &expires)
	q.Created, q.Expires = time.UnixMilli(created), time.UnixMilli(expires)
	return q, err
}

// Kept lists the groups approved live, oldest first.
func (s *Store) Kept(ctx context.Context) ([]Kept, error) {
	return sqlrows.Query(ctx, s.DB, "approved groups", func(r sqlrows.Scanner) (Kept, error) {
		var k Kept
		var at int64
		err := r.Scan(&k.Folder, &k.Name, &k.Chat, &at, &k.ApprovedBy)
		k.Approved = time.UnixMilli(at)
		return k, err
	}, `SELECT folder, name, chat_id, approved, approved_by FROM approved_groups ORDER BY approved, folder`)
}

// refusal is an error that says what the person asking did wrong (a code
// no chat waits with, a folder taken): it may be shown to them as it is.
// Any other error of this package is the database's and is logged.
type refusal string

func (r refusal) Error() string { return string(r) }

func refuse(format string, args ...any) error { return refusal(fmt.Sprintf(format, args...)) }

// Refused reports whether err is one a person may read as it is: a
// refusal of what they asked, not a failure of botd's.
func Refused(err error) bool {
	var r refusal
	return errors.As(err, &r) || errors.Is(err, ErrNoCode) || errors.Is(err, ErrBadCode) || errors.Is(err, ErrNotKept)
}

// ErrNoCode is a code no chat waits with: mistyped, expired, used or
// denied.
var ErrNoCode = errors.New("no chat waits with that code (codes expire after 24h and are used once; the chat gets a new one when it writes to the assistant again)")

// Approval is what Approve may be told beyond the code.
type Approval struct {
	// Folder is the group's folder; empty picks one from the chat's name.
	Folder string
	// Name is the group's name; empty keeps the chat's.
	Name string
	// By says who approved: "cli", or the owner's "<network>:<id>".
	By string
	// Taken reports whether a folder or chat is already a group's (the
	// config's groups); the approved groups are checked here.
	Taken func(folderOrChat string) bool
}

// Approve makes the chat waiting with code a group kept in the database,
// and uses the code up.
func (s *Store) Approve(ctx context.Context, code string, a Approval) (Kept, error) {
	code, err := ParseCode(code)
	if err != nil {
		return Kept{}, err
	}
	if a.Folder != "" {
		if err := groups.ValidateFolder(a.Folder); err != nil {
			return Kept{}, refuse("folder: %v", err)
		}
	}
	taken := func(tx *sql.Tx, col, v string) (bool, error) {
		if a.Taken != nil && a.Taken(v) {
			return true, nil
		}
		var n int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM approved_groups WHERE `+col+` = ?`, v).Scan(&n)
		return n > 0, err
	}
	var k Kept
	err = s.tx(ctx, "approve", func(tx *sql.Tx) error {
		var req Request
		req, err := scanRequest(tx.QueryRowContext(ctx, `SELECT code, chat_id, chat_name, is_group, sender_id, sender_name, created, expires
			FROM pairing_requests WHERE code = ? AND expires > ?`, code, s.now().UnixMilli()))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoCode
		}
		if err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		if t, err := taken(tx, "chat_id", req.Chat); err != nil {
			return fmt.Errorf("approve: %w", err)
		} else if t {
			return refuse("chat %s is already a group", req.Chat)
		}
		k = Kept{Folder: a.Folder, Name: a.Name, Chat: req.Chat, Approved: s.now(), ApprovedBy: a.By}
		if k.Name == "" {
			k.Name = req.ChatName
		}
		if k.Folder != "" {
			if t, err := taken(tx, "folder", k.Folder); err != nil {
				return fmt.Errorf("approve: %w", err)
			} else if t {
				return refuse("folder %q is already a group's; choose another", k.Folder)
			}
		} else {
			base := folderFor(req)
			for i := 1; ; i++ {
				k.Folder = base
				if i > 1 {
					k.Folder = fmt.Sprintf("%s-%d", base, i)
				}
				t, err := taken(tx, "folder", k.Folder)
				if err != nil {
					return fmt.Errorf("approve: %w", err)
				}
				if !t && groups.ValidateFolder(k.Folder) == nil {
					break
				}
				if i > 100 {
					return refuse("no free folder for this chat; choose one")
				}
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO approved_groups(folder, name, chat_id, approved, approved_by) VALUES (?, ?, ?, ?, ?)`,
			k.Folder, clip(k.Name), k.Chat, k.Approved.UnixMilli(), clip(k.ApprovedBy)); err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_requests WHERE code = ?`, code); err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_replies WHERE chat_id = ?`, k.Chat); err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		return nil
	})
	return k, err
}

var notFolder = regexp.MustCompile(`[^a-z0-9]+`)

// folderFor picks a folder for a chat from its name ("Family Chat" →
// family-chat), else from its network and id (telegram-1001234).
func folderFor(r Request) string {
	name := strings.Trim(notFolder.ReplaceAllString(strings.ToLower(r.ChatName), "-"), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name != "" && groups.ValidateFolder(name) == nil {
		return name
	}
	net, id, _ := strings.Cut(r.Chat, ":")
	id = strings.Trim(notFolder.ReplaceAllString(strings.ToLower(id), "-"), "-")
	if len(id) > 40 {
		id = id[len(id)-40:]
	}
	return strings.Trim(net+"-"+id, "-")
}

// Deny drops the chat waiting with code; botd stays silent there from now
// on (it can still be registered under groups: in the config).
func (s *Store) Deny(ctx context.Context, code string) (Request, error) {
	code, err := ParseCode(code)
	if err != nil {
		return Request{}, err
	}
	var req Request
	err = s.tx(ctx, "deny", func(tx *sql.Tx) error {
		var err error
		req, err = scanRequest(tx.QueryRowContext(ctx, `SELECT code, chat_id, chat_name, is_group, sender_id, sender_name, created, expires
			FROM pairing_requests WHERE code = ? AND expires > ?`, code, s.now().UnixMilli()))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoCode
		}
		if err != nil {
			return fmt.Errorf("deny: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_requests WHERE code = ?`, code); err != nil {
			return fmt.Errorf("deny: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO pairing_replies(chat_id, at, denied) VALUES (?, ?, ?)
			ON CONFLICT(chat_id) DO UPDATE SET denied = excluded.denied`, req.Chat, s.now().UnixMilli(), true); err != nil {
			return fmt.Errorf("deny: %w", err)
		}
		return nil
	})
	return req, err
}

// ErrNotKept is a folder that is no group approved live.
var ErrNotKept = errors.New("no group approved live has that folder")

// Remove forgets the group approved live in folder: the running daemon
// stops answering there within seconds. Its folder and messages stay.
func (s *Store) Remove(ctx context.Context, folder string) (Kept, error) {
	var k Kept
	err := s.tx(ctx, "remove", func(tx *sql.Tx) error {
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT folder, name, chat_id, approved, approved_by FROM approved_groups WHERE folder = ?`, folder).
			Scan(&k.Folder, &k.Name, &k.Chat, &at, &k.ApprovedBy)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotKept
		}
		if err != nil {
			return fmt.Errorf("remove: %w", err)
		}
		k.Approved = time.UnixMilli(at)
		if _, err := tx.ExecContext(ctx, `DELETE FROM approved_groups WHERE folder = ?`, folder); err != nil {
			return fmt.Errorf("remove: %w", err)
		}
		return nil
	})
	return k, err
}

// Sweep removes expired codes and the reply marks older than the reply
// limit (a denial is kept). One sweep for both: they expire together.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	now := s.now()
	var n int64
	err := s.tx(ctx, "pairing sweep", func(tx *sql.Tx) error {
		for _, q := range []struct {
			sql string
			arg int64
		}{
			{`DELETE FROM pairing_requests WHERE expires <= ?`, now.UnixMilli()},
			{`DELETE FROM pairing_replies WHERE denied = 0 AND at <= ?`, now.Add(-ReplyEvery).UnixMilli()},
		} {
			res, err := tx.ExecContext(ctx, q.sql, q.arg)
			if err != nil {
				return fmt.Errorf("pairing sweep: %w", err)
			}
			d, _ := res.RowsAffected()
			n += d
		}
		return nil
	})
	return n, err
}
