package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/sqldialect"
)

// The full-text index's migration (package chatlog searches it) indexes
// the messages stored before it, on both databases: the database is put
// back as it was before the migration (its index dropped), messages are
// stored, and the migration's DDL run again finds them.
func TestSearchMigrationIndexesStoredMessages(t *testing.T) {
	i := slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, "messages_fts") })
	if i < 0 {
		t.Fatal("no migration makes the messages' full-text index")
	}
	drivers(t, func(t *testing.T, c Config) {
		s := open(t, c)
		ctx := context.Background()
		drop := `DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_delete; DROP TRIGGER messages_fts_update;
			DROP TABLE messages_fts; DROP INDEX messages_chat_ts;`
		find := `SELECT m.id FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid WHERE messages_fts MATCH 'tickets' ORDER BY m.id`
		if s.Dialect == sqldialect.Postgres {
			drop = `ALTER TABLE messages DROP COLUMN text_search; DROP INDEX messages_chat_ts;`
			find = `SELECT id FROM messages WHERE text_search @@ to_tsquery('simple', 'tickets') ORDER BY id`
		}
		if _, err := s.DB.ExecContext(ctx, drop); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertChat(ctx, Chat{ID: "telegram:-1", IsGroup: true}); err != nil {
			t.Fatal(err)
		}
		for id, text := range map[string]string{"a": "the tickets are here", "b": "nothing", "c": "Tickets!"} {
			if _, err := s.PutMessage(ctx, Message{ChatID: "telegram:-1", ID: id, Text: text, Time: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.DB.ExecContext(ctx, s.Dialect.Schema(migrations[i])); err != nil {
			t.Fatalf("migration %d on a database with messages: %v", i+1, err)
		}
		var got []string
		rows, err := s.DB.QueryContext(ctx, find)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("after the migration the index finds %v, want [a c]", got)
		}
	})
}
