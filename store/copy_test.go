package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/pgtest"
)

func TestCopyToPostgresKeepsEveryRow(t *testing.T) {
	ctx := context.Background()
	from := open(t, Config{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "botd.db")})
	pg := Config{Driver: "postgres", DSN: pgtest.DSN(t)}
	to := open(t, pg)

	// Rows through the store's own writes, and the kinds of value each
	// column type holds: blobs, reals, NUL in text, explicit ids.
	if err := from.UpsertChat(ctx, Chat{ID: "telegram:-1", Name: "Family", IsGroup: true, LastMessageAt: time.UnixMilli(9)}); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i, text := range []string{"one", "two\x00nul", "three"} {
		seq, err := from.PutMessage(ctx, Message{ChatID: "telegram:-1", ID: string(rune('a' + i)), Text: text, Time: time.UnixMilli(int64(i))})
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	if err := from.AdvanceAgentCursor(ctx, "family", last); err != nil {
		t.Fatal(err)
	}
	out, err := from.AddOutbox(ctx, OutboxItem{Folder: "family", ChatID: "telegram:-1", UpToSeq: last, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if err := from.SaveRun(ctx, AgentRun{ID: "r1", Folder: "family", Started: time.UnixMilli(1), Outcome: "answered", CostKnown: true},
		[]TranscriptEntry{{Role: "assistant", Parts: json.RawMessage(`[{"kind":"tool_call","tool_call":{"name":"fetch_media"}}]`)}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO media_refs(id, channel, chat_id, kind, private, created, expires) VALUES ('tg_1', 'telegram', 'telegram:-1', 'image', X'00FF10', 1, 2)`,
		`INSERT INTO media_generations(folder, at, kind, provider, model, outcome, units) VALUES ('family', 1, 'voice', 'p', 'm', 'ok', 2.5)`,
		`INSERT INTO scheduled_tasks(id, folder, prompt, kind, spec, created_by, created, updated) VALUES (41, 'family', 'p', 'every', '1h', 'family', 1, 1)`,
	} {
		if _, err := from.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	counts, err := from.CopyTo(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, c := range counts {
		if c.From != c.To {
			t.Errorf("%s: %d rows, %d copied", c.Table, c.From, c.To)
		}
		seen[c.Table] = c.To
	}
	for table, want := range map[string]int64{"chats": 1, "messages": 3, "cursors": 1, "agent_outbox": 1, "agent_runs": 1,
		"agent_transcripts": 1, "media_refs": 1, "media_generations": 1, "scheduled_tasks": 1, "live_messages": 0} {
		if seen[table] != want {
			t.Errorf("%s: %d rows copied, want %d (all: %v)", table, seen[table], want, seen)
		}
	}

	// The copy reads back through the store, as botd on Postgres will.
	msgs, err := to.MessagesAfter(ctx, []string{"telegram:-1"}, 0, 10)
	if err != nil || len(msgs) != 3 || msgs[2].Seq != last || msgs[1].Text != "two\uFFFDnul" {
		t.Fatalf("messages on postgres: %+v, %v", msgs, err)
	}
	if cur, _ := to.AgentCursor(ctx, "family"); cur != last {
		t.Errorf("cursor %d, want %d", cur, last)
	}
	var private []byte
	var units float64
	to.DB.QueryRowContext(ctx, `SELECT private FROM media_refs WHERE id = 'tg_1'`).Scan(&private)
	to.DB.QueryRowContext(ctx, `SELECT units FROM media_generations`).Scan(&units)
	if string(private) != "\x00\xff\x10" || units != 2.5 {
		t.Errorf("private %x, units %v", private, units)
	}
	runs, err := to.FindRuns(ctx, RunFilter{Limit: 10})
	if err != nil || len(runs) != 1 || strings.Join(runs[0].Tools, ",") != "fetch_media" {
		t.Errorf("runs on postgres: %+v, %v", runs, err)
	}
	// New rows continue after the copied ids.
	next, err := to.AddOutbox(ctx, OutboxItem{Folder: "family", ChatID: "telegram:-1", UpToSeq: last, Text: "again"})
	if err != nil || next <= out {
		t.Errorf("new outbox id %d after copied %d: %v", next, out, err)
	}
	seq, err := to.PutMessage(ctx, Message{ChatID: "telegram:-1", ID: "d", Time: time.UnixMilli(5)})
	if err != nil || seq <= last {
		t.Errorf("new message seq %d after copied %d: %v", seq, last, err)
	}

	// A second copy into the same database is refused, leaving it as is.
	if _, err := from.CopyTo(ctx, to); err == nil || !strings.Contains(err.Error(), "already holds botd data") {
		t.Fatalf("copy into a non-empty database: %v", err)
	}
}
