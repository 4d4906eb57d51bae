package chatlog

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/botd-dev/botd/internal/clock"
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
	chats, newest, _, err = l.changed(ctx, seq)
	return chats, newest, err
}

// changed is Changed, and whether the batch was full (more may wait).
func (l *Log) changed(ctx context.Context, seq int64) (chats []string, newest int64, more bool, err error) {
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
		return nil, seq, false, err
	}
	newest = seq
	for _, r := range rows {
		if !slices.Contains(chats, r.chat) {
			chats = append(chats, r.chat)
		}
		newest = max(newest, r.seq)
	}
	return chats, newest, len(rows) == changedBatch, nil
}

// Following is how Follow paces its looks.
type Following struct {
	// Gap is the least time between two looks: a burst of messages costs
	// one look (and one call of fn) per Gap. A failed look is tried again
	// after it (a second at least).
	Gap time.Duration
	// Poll is how often it looks with no news, for the writers it cannot
	// hear: another process storing messages in the same database (a
	// second instance on Postgres). 0 never looks unasked.
	Poll time.Duration
	// Clock is the wall clock when nil; tests pass a clock.Fake.
	Clock clock.Clock
}

// Follow calls fn with the chats that got a message after seq since,
// until ctx ends (Newest is where "from now" is). It looks once at start,
// then when a message is stored through this process's store (Stored:
// every writer in the process — the networks' messages, botd's answers,
// what generation sends — goes through PutMessage), and every p.Poll
// besides: an idle follower neither wakes nor reads the database. A
// message stored during a look wakes the next one, so none is lost.
func (l *Log) Follow(ctx context.Context, since int64, p Following, log *slog.Logger, fn func(chats []string)) {
	clk := p.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	retry := max(p.Gap, time.Second)
	seq := since
	var last time.Time
	news := l.st.Stored()
	for again := true; ; {
		if !again && !waitFor(ctx, clk, news, p.Poll) {
			return
		}
		if !last.IsZero() {
			if d := p.Gap - clk.Now().Sub(last); d > 0 && !sleep(ctx, clk, d) {
				return
			}
		}
		// Taken before the look: a message committed after it closes it,
		// and the next wait ends at once.
		news = l.st.Stored()
		last = clk.Now()
		chats, newest, more, err := l.changed(ctx, seq)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("chatlog: cannot read new messages; trying again", "err", err)
			if !sleep(ctx, clk, retry) {
				return
			}
			again = true
			continue
		}
		seq = newest
		if len(chats) > 0 {
			fn(chats)
		}
		again = more // a burst past one batch: the rest at once (spaced)
	}
}

// waitFor waits for news, or poll (when not 0), or the end of ctx (false).
func waitFor(ctx context.Context, clk clock.Clock, news <-chan struct{}, poll time.Duration) bool {
	var tick <-chan time.Time
	if poll > 0 {
		t := clk.NewTimer(poll)
		defer t.Stop()
		tick = t.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-news:
	case <-tick:
	}
	return true
}

// sleep waits d, or for the end of ctx (false).
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
