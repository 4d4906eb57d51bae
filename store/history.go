package store

import (
	"context"
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
