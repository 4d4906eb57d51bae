package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/sqlrows"
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
	out := insertOutbox(t, from, last, "hi")
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
	if next := insertOutbox(t, to, last, "again"); next <= out {
		t.Errorf("new outbox id %d after copied %d", next, out)
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

// attachedFixture is an SQLite database of someone else's tables (shaped
// like whatsmeow's: a real BOOLEAN, bytes, a uuid, a foreign key) and the
// same tables created on Postgres, as their owner's migrations would.
func attachedFixture(t *testing.T, to *Store) Attached {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", DSN(filepath.Join(t.TempDir(), "ext.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const ddl = `CREATE TABLE ext_parent (jid TEXT PRIMARY KEY, fb uuid, key %[1]s NOT NULL, name TEXT);
		CREATE TABLE ext_child (jid TEXT REFERENCES ext_parent(jid), id INTEGER, uploaded BOOLEAN NOT NULL, pinned BOOLEAN,
			PRIMARY KEY (jid, id))`
	if _, err := db.ExecContext(ctx, fmt.Sprintf(ddl, "BLOB")); err != nil {
		t.Fatal(err)
	}
	if _, err := to.DB.ExecContext(ctx, fmt.Sprintf(ddl, "bytea")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ext_parent VALUES (?, ?, ?, ?)`, []any{"a@s", "5c1b5e0e-8a53-4b5e-9f43-1b0e5d6a7c8d", []byte{0, 0xff, 0x10}, "Ann"}},
		// Bytes kept as text, a name kept as a blob.
		{`INSERT INTO ext_parent VALUES (?, NULL, ?, ?)`, []any{"b@s", "as text", []byte("Bob")}},
		{`INSERT INTO ext_child VALUES (?, ?, ?, ?)`, []any{"a@s", 1, true, nil}},
		{`INSERT INTO ext_child VALUES (?, ?, ?, ?)`, []any{"a@s", 2, false, true}},
		{`INSERT INTO ext_child VALUES (?, ?, ?, ?)`, []any{"b@s", 3, "true", "f"}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	// The child first: the copy orders parents first itself.
	return Attached{Name: "ext", DB: db, Tables: []string{"ext_child", "ext_parent"}}
}

// An attached database's rows go in with botd's, each value made what its
// Postgres column's type takes.
func TestCopyToPostgresWithAttached(t *testing.T) {
	ctx := context.Background()
	from := open(t, Config{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "botd.db")})
	to := open(t, Config{Driver: "postgres", DSN: pgtest.DSN(t)})
	if err := from.UpsertChat(ctx, Chat{ID: "whatsapp:1@g.us", Name: "Family", IsGroup: true}); err != nil {
		t.Fatal(err)
	}
	ext := attachedFixture(t, to)

	counts, err := from.CopyTo(ctx, to, ext)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, c := range counts {
		seen[c.Table] = c.To
	}
	if seen["chats"] != 1 || seen["ext_parent"] != 2 || seen["ext_child"] != 3 {
		t.Fatalf("counts %v", seen)
	}
	type parent struct {
		jid  string
		fb   sql.NullString
		key  []byte
		name string
	}
	ps, err := sqlrows.Query(ctx, to.DB, "parents", func(r sqlrows.Scanner) (parent, error) {
		var p parent
		return p, r.Scan(&p.jid, &p.fb, &p.key, &p.name)
	}, `SELECT jid, CAST(fb AS TEXT), key, name FROM ext_parent ORDER BY jid`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].fb.String != "5c1b5e0e-8a53-4b5e-9f43-1b0e5d6a7c8d" || string(ps[0].key) != "\x00\xff\x10" || ps[0].name != "Ann" ||
		ps[1].fb.Valid || string(ps[1].key) != "as text" || ps[1].name != "Bob" {
		t.Errorf("parents on postgres: %+v", ps)
	}
	var flags []string
	rows, err := to.DB.QueryContext(ctx, `SELECT uploaded, pinned FROM ext_child ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var up bool
		var pinned sql.NullBool
		if err := rows.Scan(&up, &pinned); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, fmt.Sprintf("%v/%v", up, map[bool]string{true: fmt.Sprint(pinned.Bool), false: "null"}[pinned.Valid]))
	}
	if got := strings.Join(flags, " "); got != "true/null false/true true/false" {
		t.Errorf("booleans on postgres: %s", got)
	}
}

// A Postgres database holding rows of an attached database is refused
// before anything is written; a failure in an attached table leaves botd's
// tables empty too (one transaction).
func TestCopyToPostgresAttachedRefusedAndAtomic(t *testing.T) {
	ctx := context.Background()
	from := open(t, Config{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "botd.db")})
	if err := from.UpsertChat(ctx, Chat{ID: "whatsapp:1@g.us", Name: "Family", IsGroup: true}); err != nil {
		t.Fatal(err)
	}
	chats := func(to *Store) int {
		var n int
		if err := to.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM chats`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	to := open(t, Config{Driver: "postgres", DSN: pgtest.DSN(t)})
	ext := attachedFixture(t, to)
	if _, err := to.DB.ExecContext(ctx, `INSERT INTO ext_parent(jid, key) VALUES ('z@s', '\x00')`); err != nil {
		t.Fatal(err)
	}
	if _, err := from.CopyTo(ctx, to, ext); err == nil || !strings.Contains(err.Error(), "already holds ext data (1 rows in ext_parent)") {
		t.Fatalf("copy into a database with ext rows: %v", err)
	}
	if n := chats(to); n != 0 {
		t.Errorf("%d chats copied by a refused copy", n)
	}

	to = open(t, Config{Driver: "postgres", DSN: pgtest.DSN(t)})
	ext = attachedFixture(t, to)
	if _, err := to.DB.ExecContext(ctx, `ALTER TABLE ext_parent DROP COLUMN name`); err != nil {
		t.Fatal(err)
	}
	if _, err := from.CopyTo(ctx, to, ext); err == nil || !strings.Contains(err.Error(), "ext_parent.name: no such column on postgres") {
		t.Fatalf("copy with a column postgres lacks: %v", err)
	}
	if n := chats(to); n != 0 {
		t.Errorf("%d chats kept by a failed copy", n)
	}
}

func TestConvertTo(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		in      any
		want    any
		mark    string
		wantErr string
	}{
		{"boolean", int64(1), int64(1), "(CAST(? AS BIGINT) <> 0)", ""},
		{"boolean", int64(0), int64(0), "", ""},
		{"boolean", true, int64(1), "", ""},
		{"boolean", 2.0, int64(1), "", ""},
		{"boolean", "FALSE", int64(0), "", ""},
		{"boolean", []byte("t"), int64(1), "", ""},
		{"boolean", "maybe", nil, "", `"maybe" is not a boolean`},
		{"bytea", "ab", []byte("ab"), "?", ""},
		{"bytea", int64(3), nil, "", "a int64 where bytes belong"},
		{"text", []byte("x"), "x", "?", ""},
		{"text", int64(42), "42", "", ""},
		{"bigint", int64(7), int64(7), "?", ""},
		{"uuid", "5c1b5e0e-8a53-4b5e-9f43-1b0e5d6a7c8d", "5c1b5e0e-8a53-4b5e-9f43-1b0e5d6a7c8d", "CAST(CAST(? AS TEXT) AS uuid)", ""},
	} {
		conv, mark := convertTo(tc.typ)
		if tc.mark != "" && mark != tc.mark {
			t.Errorf("%s: placeholder %q, want %q", tc.typ, mark, tc.mark)
		}
		got, err := tc.in, error(nil)
		if conv != nil {
			got, err = conv(tc.in)
		}
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s(%#v): %v, want %q", tc.typ, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("%s(%#v) = %#v, %v, want %#v", tc.typ, tc.in, got, err, tc.want)
		}
	}
}

// insertOutbox adds an answer to the outbox as agent/outboxdb does (its
// queries live there; store only copies the table) and returns its id.
func insertOutbox(t *testing.T, s *Store, upTo int64, text string) int64 {
	t.Helper()
	var id int64
	err := s.DB.QueryRowContext(context.Background(), `INSERT INTO agent_outbox(folder, chat_id, up_to_seq, text, media, thread_id, reply_to, status, created, voice, live_ids)
		VALUES ('family', 'telegram:-1', ?, ?, '[]', '', '', 'pending', 1, ?, '[]') RETURNING id`, upTo, text, false).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
