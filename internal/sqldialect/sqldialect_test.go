package sqldialect_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/sqldialect"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestRebind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE a = ? AND b IN (?, ?)`, `SELECT a FROM t WHERE a = $1 AND b IN ($2, $3)`},
		{`SELECT '?' , "we?ird", ? -- what?
		/* why? */ FROM t WHERE c = 'it''s ?' AND d = ?`, `SELECT '?' , "we?ird", $1 -- what?
		/* why? */ FROM t WHERE c = 'it''s ?' AND d = $2`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
	} {
		if got := sqldialect.Rebind(tc.in); got != tc.want {
			t.Errorf("Rebind(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestStorableText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"nul\x00byte", "nul\uFFFDbyte"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"", ""},
	} {
		if got := sqldialect.StorableText(tc.in); got != tc.want {
			t.Errorf("StorableText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSchemaOnSQLiteIsUnchanged(t *testing.T) {
	ddl := `CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, b BLOB);`
	if got := sqldialect.SQLite.Schema(ddl); got != ddl {
		t.Fatalf("SQLite DDL changed: %s", got)
	}
}

// TestOnly: a part marked for one database is run there alone, on both.
func TestOnly(t *testing.T) {
	ddl := `CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, b TEXT NOT NULL);
	` + sqldialect.Only(sqldialect.SQLite, `CREATE TABLE only_sqlite (x INTEGER);`) +
		sqldialect.Only(sqldialect.Postgres, `CREATE TABLE only_postgres (x INTEGER);`) +
		`CREATE INDEX a_b ON a(b);`
	for _, tc := range []struct {
		d          sqldialect.Dialect
		has, hasnt string
	}{
		{sqldialect.SQLite, "only_sqlite", "only_postgres"},
		{sqldialect.Postgres, "only_postgres", "only_sqlite"},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			got := tc.d.Schema(ddl)
			if strings.Contains(got, tc.hasnt) || strings.Contains(got, "/*") || !strings.Contains(got, "a_b") {
				t.Fatalf("Schema kept the wrong parts:\n%s", got)
			}
			db := open(t, tc.d)
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, got); err != nil {
				t.Fatalf("schema: %v\n%s", err, got)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO `+tc.has+`(x) VALUES (1)`); err != nil {
				t.Fatalf("the part for %s was not run: %v", tc.d, err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO `+tc.hasnt+`(x) VALUES (1)`); err == nil {
				t.Fatalf("the part for the other database was run on %s", tc.d)
			}
		})
	}
}

// open returns a handle on a fresh database of each dialect.
func open(t *testing.T, d sqldialect.Dialect) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch d {
	case sqldialect.SQLite:
		db, err = sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db")+"?_pragma=foreign_keys(1)")
	case sqldialect.Postgres:
		db, err = sqldialect.OpenPostgres(pgtest.DSN(t))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestOneSQLOnBoth runs the forms botd's SQL relies on against both
// databases: the same text, the same arguments, the same answers.
func TestOneSQLOnBoth(t *testing.T) {
	ddl := `CREATE TABLE parents (id TEXT PRIMARY KEY, n INTEGER NOT NULL);
	CREATE TABLE kids (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		parent TEXT NOT NULL REFERENCES parents(id),
		flag INTEGER NOT NULL DEFAULT 0,
		note TEXT NOT NULL DEFAULT '',
		raw BLOB,
		units REAL NOT NULL DEFAULT 0
	);
	INSERT OR IGNORE INTO parents(id, n) SELECT 'p0', 0 WHERE 1 = 0;`
	for _, d := range []sqldialect.Dialect{sqldialect.SQLite, sqldialect.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			db := open(t, d)
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, d.Schema(ddl)); err != nil {
				t.Fatalf("schema: %v\n%s", err, d.Schema(ddl))
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO parents(id, n) VALUES (?, ?)`, "p1", 1); err != nil {
				t.Fatal(err)
			}
			var id int64
			err := db.QueryRowContext(ctx, `INSERT INTO kids(parent, flag, note, raw, units) VALUES (?, ?, ?, ?, ?) RETURNING id`,
				"p1", true, "a\x00b", []byte{0, 1, 2}, 1.5).Scan(&id)
			if err != nil {
				t.Fatal(err)
			}
			var flag bool
			var note string
			var raw []byte
			var units float64
			if err := db.QueryRowContext(ctx, `SELECT flag, note, raw, units FROM kids WHERE id = ? AND flag = ?`, id, true).
				Scan(&flag, &note, &raw, &units); err != nil {
				t.Fatal(err)
			}
			wantNote := "a\x00b"
			if d == sqldialect.Postgres {
				wantNote = "a\uFFFDb"
			}
			if !flag || note != wantNote || string(raw) != "\x00\x01\x02" || units != 1.5 {
				t.Fatalf("read back flag=%v note=%q raw=%v units=%v", flag, note, raw, units)
			}
			_, err = db.ExecContext(ctx, `INSERT INTO kids(parent) VALUES (?)`, "nobody")
			if !sqldialect.IsForeignKey(err) {
				t.Fatalf("a missing parent: %v, want a foreign-key violation", err)
			}
			_, err = db.ExecContext(ctx, `INSERT INTO parents(id, n) VALUES (?, ?)`, "p1", 2)
			if !sqldialect.IsUnique(err) || sqldialect.IsForeignKey(err) {
				t.Fatalf("a second p1: %v, want a unique violation", err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO parents(id, n) VALUES (?, ?) ON CONFLICT DO NOTHING`, "p1", 3); err != nil {
				t.Fatal(err)
			}
			var rowsInOrder []string
			rows, err := db.QueryContext(ctx, `SELECT id FROM parents ORDER BY rowid`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				rows.Scan(&s)
				rowsInOrder = append(rowsInOrder, s)
			}
			rows.Close()
			if strings.Join(rowsInOrder, ",") != "p1" {
				t.Fatalf("parents by rowid: %v", rowsInOrder)
			}
			// A prepared statement takes the same rewriting.
			st, err := db.PrepareContext(ctx, `SELECT COUNT(*) FROM kids WHERE flag = ? AND parent = ?`)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var n int
			if err := st.QueryRowContext(ctx, true, "p1").Scan(&n); err != nil || n != 1 {
				t.Fatalf("prepared count: %d, %v", n, err)
			}
		})
	}
}
