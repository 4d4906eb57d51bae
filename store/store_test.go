package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/sqldialect"
)

func TestMigrationsApplyOnceAndPragmas(t *testing.T) { drivers(t, testMigrationsApplyOnceAndPragmas) }

func testMigrationsApplyOnceAndPragmas(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	v, err := s.Version(ctx)
	if err != nil || v != SchemaVersion {
		t.Fatalf("version = %d, %v; want %d", v, err, SchemaVersion)
	}
	if s.Dialect == sqldialect.SQLite {
		var mode string
		var fk, busy int
		s.DB.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
		s.DB.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk)
		s.DB.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy)
		if mode != "wal" || fk != 1 || busy < 1000 {
			t.Errorf("pragmas: journal_mode=%s foreign_keys=%d busy_timeout=%d", mode, fk, busy)
		}
	}
	s.Close()
	// Reopening must not re-run migration 1 (it would fail on CREATE TABLE).
	s2 := open(t, c)
	var n int
	s2.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
	if n != SchemaVersion {
		t.Errorf("schema_migrations rows = %d, want %d", n, SchemaVersion)
	}
}

func TestNewerSchemaRefused(t *testing.T) { drivers(t, testNewerSchemaRefused) }

func testNewerSchemaRefused(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Connect(ctx, c, ""); err == nil {
		t.Fatal("opened a database from a newer botd")
	}
}

func TestMessagesUpsertAndCursor(t *testing.T) { drivers(t, testMessagesUpsertAndCursor) }

func testMessagesUpsertAndCursor(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if _, err := s.PutMessage(ctx, Message{ChatID: "telegram:9", ID: "1", Time: time.Now()}); !errors.Is(err, ErrNoChat) {
		t.Fatalf("message for unknown chat: %v", err)
	}
	chat := "telegram:-100"
	if err := s.UpsertChat(ctx, Chat{ID: chat, Name: "Family", IsGroup: true, LastMessageAt: time.UnixMilli(5)}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertChat(ctx, Chat{ID: chat, LastMessageAt: time.UnixMilli(3)}); err != nil {
		t.Fatal(err)
	}
	chats, _ := s.Chats(ctx)
	if len(chats) != 1 || chats[0].Name != "Family" || chats[0].LastMessageAt.UnixMilli() != 5 {
		t.Errorf("chats = %+v", chats)
	}
	var seqs []int64
	for i, text := range []string{"one", "two", "three"} {
		seq, err := s.PutMessage(ctx, Message{ChatID: chat, ID: string(rune('a' + i)), SenderName: "Ann", Text: text, Time: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	// An edit re-delivered with the same id keeps its seq.
	seq, err := s.PutMessage(ctx, Message{ChatID: chat, ID: "b", Text: "two (edited)", Time: time.Now()})
	if err != nil || seq != seqs[1] {
		t.Fatalf("upsert seq = %d, %v; want %d", seq, err, seqs[1])
	}
	got, err := s.MessagesAfter(ctx, []string{chat}, seqs[0], 10)
	if err != nil || len(got) != 2 || got[0].Text != "two (edited)" || got[1].Text != "three" {
		t.Fatalf("after = %+v, %v", got, err)
	}
	// The bound keeps the newest.
	got, _ = s.MessagesAfter(ctx, []string{chat}, 0, 2)
	if len(got) != 2 || got[0].ID != "b" || got[1].ID != "c" {
		t.Errorf("bounded = %+v", got)
	}
	if v, _ := s.Cursor(ctx, "family"); v != "" {
		t.Errorf("missing cursor = %q", v)
	}
	s.SetCursor(ctx, "family", "2")
	s.SetCursor(ctx, "family", "3")
	if v, _ := s.Cursor(ctx, "family"); v != "3" {
		t.Errorf("cursor = %q", v)
	}
}
