// Package chatlog reads the conversation botd stored: full-text search of
// a chat's messages (SQLite's FTS5 index, Postgres's tsvector column: both
// made by the store's migrations and kept in step with the messages by the
// database itself), windows of the conversation around a message or a
// time, and the chats with their last activity. Every call names the chats
// it may read; nothing here reads a chat it was not given (service.go
// decides which a group may name).
package chatlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/internal/sqlrows"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// Bounds of a call.
const (
	// DefaultLimit and MaxLimit bound how many messages one call returns.
	DefaultLimit = 20
	MaxLimit     = 100
	// MaxQueryRunes is how much of a query is read; the rest is ignored.
	MaxQueryRunes = 1000
	// MaxTerms is how many words of a query are searched for.
	MaxTerms = 16
	// maxTermRunes cuts a word: no message word is longer in practice,
	// and a prefix of it still finds it.
	maxTermRunes = 64
	// rankWindow is how many of the newest matches a search ranks.
	rankWindow = tools.SearchRankWindow
	// minPrefixRunes: shorter words are matched whole, not as prefixes
	// (a one-letter prefix matches most of a chat, and costs it).
	minPrefixRunes = 3
)

// Errors a caller shows as they are.
var (
	ErrEmptyQuery = errors.New("the query has no words to search for: give one or more words, e.g. \"tickets saturday\"")
	ErrNoChats    = errors.New("no chats to read")
	ErrNotFound   = errors.New("no such message in this chat")
)

// Log reads the messages of a store.
type Log struct {
	db      *sql.DB
	dialect sqldialect.Dialect
	st      *store.Store // for Follow's news of a message stored
}

// New reads st's messages.
func New(st *store.Store) *Log { return &Log{db: st.DB, dialect: st.Dialect, st: st} }

// Query is one search.
type Query struct {
	// Chats are the chats searched: the caller's, never empty.
	Chats []string
	// Text is what the person typed: words, each matched as a word
	// prefix ("ticket" finds "tickets"), all of them in a message. It is
	// never read as query syntax.
	Text string
	// From and To bound the message time, From inclusive and To
	// exclusive; zero is open.
	From, To time.Time
	// Sender keeps messages whose sender name contains it (case-insensitive
	// for ASCII) or whose sender id is it.
	Sender string
	// Limit is at most MaxLimit; 0 is DefaultLimit.
	Limit int
}

// Terms splits a query into the words the indexes hold: runs of letters,
// digits and marks, lower-cased, each once, at most MaxTerms. Everything
// else (quotes, operators, brackets, stars) separates words and is never
// passed to a query parser.
func Terms(q string) []string {
	if utf8.RuneCountInString(q) > MaxQueryRunes {
		q = string([]rune(q)[:MaxQueryRunes])
	}
	var out []string
	seen := map[string]bool{}
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }
	for _, f := range strings.FieldsFunc(strings.ToValidUTF8(q, " "), func(r rune) bool { return !word(r) }) {
		f = strings.ToLower(f)
		if utf8.RuneCountInString(f) > maxTermRunes {
			f = string([]rune(f)[:maxTermRunes])
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
		if len(out) == MaxTerms {
			break
		}
	}
	return out
}

// matchExpr is terms as the dialect's query syntax: every term required,
// quoted, a prefix when long enough. The terms hold no syntax (Terms),
// and are quoted all the same.
func (l *Log) matchExpr(terms []string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		prefix := utf8.RuneCountInString(t) >= minPrefixRunes
		if l.dialect == sqldialect.Postgres {
			parts[i] = "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(t) + "'"
			if prefix {
				parts[i] += ":*"
			}
			continue
		}
		parts[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		if prefix {
			parts[i] += "*"
		}
	}
	if l.dialect == sqldialect.Postgres {
		return strings.Join(parts, " & ")
	}
	return strings.Join(parts, " ")
}

func limit(n int) int {
	switch {
	case n <= 0:
		return DefaultLimit
	case n > MaxLimit:
		return MaxLimit
	}
	return n
}

func inChats(col string, chats []string) (string, []any) {
	args := make([]any, len(chats))
	for i, c := range chats {
		args[i] = c
	}
	return col + ` IN (` + strings.TrimSuffix(strings.Repeat("?,", len(chats)), ",") + `)`, args
}

const cols = `m.seq, m.chat_id, m.id, m.sender_id, m.sender_name, m.text, m.ts, m.from_me, m.is_bot, m.reply_to, m.thread_id`

func scan(r sqlrows.Scanner) (store.Message, error) {
	var m store.Message
	var ms int64
	err := r.Scan(&m.Seq, &m.ChatID, &m.ID, &m.SenderID, &m.SenderName, &m.Text, &ms, &m.FromMe, &m.IsBot, &m.ReplyTo, &m.ThreadID)
	m.Time = time.UnixMilli(ms)
	return m, err
}

// Search returns the messages of q.Chats that hold every word of q.Text,
// best first (the index's rank: rarer words and shorter messages first;
// ties newest first) among the newest rankWindow that do.
func (l *Log) Search(ctx context.Context, q Query) ([]store.Message, error) {
	if len(q.Chats) == 0 {
		return nil, ErrNoChats
	}
	terms := Terms(q.Text)
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	where, args := inChats("m.chat_id", q.Chats)
	if !q.From.IsZero() {
		where += ` AND m.ts >= ?`
		args = append(args, q.From.UnixMilli())
	}
	if !q.To.IsZero() {
		where += ` AND m.ts < ?`
		args = append(args, q.To.UnixMilli())
	}
	if s := strings.TrimSpace(q.Sender); s != "" {
		like := `LIKE`
		if l.dialect == sqldialect.Postgres {
			like = `ILIKE`
		}
		where += ` AND (m.sender_id = ? OR m.sender_name ` + like + ` ? ESCAPE '!')`
		args = append(args, s, "%"+strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)+"%")
	}
	// The newest rankWindow matches are ranked, not all: a common word
	// matches a tenth of a chat, and ranking them all is what would make
	// a search slow (at a million messages, a second instead of
	// milliseconds). Both databases walk the matches newest first and stop.
	// ts_rank's normalization 1 divides by the log of the message's
	// length, as bm25 weighs it: a short message about the word beats a
	// long one that mentions it.
	var query string
	expr := l.matchExpr(terms)
	if l.dialect == sqldialect.Postgres {
		query = `SELECT ` + cols + ` FROM (SELECT ` + cols + `, ts_rank(m.text_search, q, 1) AS score
				FROM messages m, to_tsquery('simple', ?) q
				WHERE m.text_search @@ q AND ` + where + `
				ORDER BY m.seq DESC LIMIT ` + fmt.Sprint(rankWindow) + `) AS m
			ORDER BY m.score DESC, m.seq DESC LIMIT ?`
	} else {
		// CROSS JOIN keeps the index the outer loop (SQLite's rule):
		// the matches are walked, and each one's row looked up.
		query = `SELECT ` + cols + ` FROM (SELECT messages_fts.rowid AS rid, bm25(messages_fts) AS score
				FROM messages_fts CROSS JOIN messages m ON m.seq = messages_fts.rowid
				WHERE messages_fts MATCH ? AND ` + where + `
				ORDER BY messages_fts.rowid DESC LIMIT ` + fmt.Sprint(rankWindow) + `) AS r
			CROSS JOIN messages m ON m.seq = r.rid
			ORDER BY r.score, m.seq DESC LIMIT ?`
	}
	args = append(append([]any{expr}, args...), limit(q.Limit))
	return sqlrows.Query(ctx, l.db, "search messages", scan, query, args...)
}

// Direction is which part of the conversation Read returns.
type Direction int

const (
	// Around: the anchor with the messages before and after it, about
	// half each.
	Around Direction = iota
	// Before: the messages before the anchor.
	Before
	// After: the messages after the anchor.
	After
)

// Window is one read of the conversation.
type Window struct {
	// Chats are the chats read: the caller's, never empty.
	Chats []string
	Dir   Direction
	// ID is the anchor message's id; when empty, Time is the anchor (a
	// zero Time with Before is now: the latest messages).
	ID   string
	Time time.Time
	// Limit is at most MaxLimit; 0 is DefaultLimit.
	Limit int
}

// anchor is a position in the conversation's order (time, then store
// order).
type anchor struct{ ts, seq int64 }

// Read returns the window's messages in conversation order (time, then
// the order they were stored in). An ID no chat of w holds is
// ErrNotFound.
func (l *Log) Read(ctx context.Context, w Window) ([]store.Message, error) {
	if len(w.Chats) == 0 {
		return nil, ErrNoChats
	}
	n := limit(w.Limit)
	var at anchor
	var anchorMsg *store.Message
	switch {
	case w.ID != "":
		where, args := inChats("m.chat_id", w.Chats)
		row := l.db.QueryRowContext(ctx, `SELECT `+cols+` FROM messages m WHERE `+where+` AND m.id = ? ORDER BY m.seq DESC LIMIT 1`,
			append(args, w.ID)...)
		m, err := scan(row)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("message %q: %w", w.ID, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("read messages: %w", err)
		}
		at, anchorMsg = anchor{m.Time.UnixMilli(), m.Seq}, &m
	case w.Time.IsZero():
		at = anchor{ts: 1<<62 - 1}
	default:
		// A time sits before every message stored at that millisecond.
		at = anchor{ts: w.Time.UnixMilli(), seq: 0}
	}
	switch w.Dir {
	case Before:
		return l.side(ctx, w.Chats, at, false, n)
	case After:
		if anchorMsg == nil {
			at.seq = -1 // a time: the messages at it are after it
		}
		return l.side(ctx, w.Chats, at, true, n)
	}
	before := n / 2
	prev, err := l.side(ctx, w.Chats, at, false, before)
	if err != nil {
		return nil, err
	}
	rest := n - len(prev)
	out := prev
	if anchorMsg != nil {
		out = append(out, *anchorMsg)
		rest--
	} else {
		at.seq = -1
	}
	next, err := l.side(ctx, w.Chats, at, true, rest)
	if err != nil {
		return nil, err
	}
	out = append(out, next...)
	if len(next) < rest && len(prev) == before {
		// Near the end of the conversation: the room left goes to the
		// messages before.
		more, err := l.side(ctx, w.Chats, at, false, before+rest-len(next))
		if err != nil {
			return nil, err
		}
		out = append(more, out[len(prev):]...)
	}
	return out, nil
}

// side reads up to n messages strictly after (or before) at, in order.
func (l *Log) side(ctx context.Context, chats []string, at anchor, after bool, n int) ([]store.Message, error) {
	if n <= 0 {
		return nil, nil
	}
	where, args := inChats("m.chat_id", chats)
	// The bound on ts alone is what the (chat_id, ts) index ranges over;
	// the rest only sorts out the messages of the anchor's millisecond.
	args = append(args, at.ts, at.ts, at.seq, n)
	if after {
		return sqlrows.Query(ctx, l.db, "read messages", scan, `SELECT `+cols+` FROM messages m WHERE `+where+`
			AND m.ts >= ? AND (m.ts > ? OR m.seq > ?) ORDER BY m.ts, m.seq LIMIT ?`, args...)
	}
	return sqlrows.Query(ctx, l.db, "read messages", scan, `SELECT * FROM (SELECT `+cols+` FROM messages m WHERE `+where+`
		AND m.ts <= ? AND (m.ts < ? OR m.seq < ?) ORDER BY m.ts DESC, m.seq DESC LIMIT ?) AS w ORDER BY ts, seq`, args...)
}

// Chats returns the stored chats among ids, most recently active first;
// a chat never stored is left out.
func (l *Log) Chats(ctx context.Context, ids []string) ([]store.Chat, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	where, args := inChats("id", ids)
	return sqlrows.Query(ctx, l.db, "list chats", func(r sqlrows.Scanner) (store.Chat, error) {
		var c store.Chat
		var ms int64
		err := r.Scan(&c.ID, &c.Name, &c.IsGroup, &ms)
		c.LastMessageAt = time.UnixMilli(ms)
		return c, err
	}, `SELECT id, name, is_group, last_message_at FROM chats WHERE `+where+` ORDER BY last_message_at DESC`, args...)
}
