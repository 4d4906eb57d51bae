package chatlog

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// The change notification of the conversation: which chats got a message
// since a point in the store's order (messages.seq). Every writer — the
// networks' messages, botd's own answers, what generation sends, another
// instance sharing the database — shows up here, so one cheap indexed
// read replaces a hook in each of them.

// Newest is the seq of the newest stored message (0 with none).
func (l *Log) Newest(ctx context.Context) (int64, error) {
	var seq int64
	if err := l.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM messages`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("newest message: %w", err)
	}
	return seq, nil
}

// changedBatch bounds one look: a burst past it is read at the next.
const changedBatch = 1000

// Changed are the chats that got a message after seq, and the newest seq
// read (seq itself when none did); past changedBatch messages the rest
// are the next call's. An edit keeps its message's seq and is not a
// change here. It walks the primary key from seq (a range, not a scan:
// grouping in SQL would let SQLite walk the (chat_id, seq) index whole).
func (l *Log) Changed(ctx context.Context, seq int64) (chats []string, newest int64, err error) {
	type row struct {
		chat string
		seq  int64
	}
	rows, err := sqlrows.Query(ctx, l.db, "changed chats", func(r sqlrows.Scanner) (row, error) {
		var x row
		err := r.Scan(&x.chat, &x.seq)
		return x, err
	}, `SELECT chat_id, seq FROM messages WHERE seq > ? ORDER BY seq LIMIT `+strconv.Itoa(changedBatch), seq)
	if err != nil {
		return nil, seq, err
	}
	newest = seq
	for _, r := range rows {
		if !slices.Contains(chats, r.chat) {
			chats = append(chats, r.chat)
		}
		newest = max(newest, r.seq)
	}
	return chats, newest, nil
}

// Follow calls fn with the chats that got a message after seq since,
// looking every interval, until ctx ends (Newest is where "from now" is).
// A failed look is logged and tried again at the next.
func (l *Log) Follow(ctx context.Context, since int64, every time.Duration, log *slog.Logger, fn func(chats []string)) {
	seq := since
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		chats, newest, err := l.Changed(ctx, seq)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("chatlog: cannot read new messages; trying again", "err", err)
			}
			continue
		}
		seq = newest
		if len(chats) > 0 {
			fn(chats)
		}
	}
}
