package sqlrows_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/botd-dev/botd/internal/sqlrows"
)

type pet struct {
	ID   int64
	Name string
}

func scanPet(r sqlrows.Scanner) (pet, error) {
	var p pet
	err := r.Scan(&p.ID, &p.Name)
	return p, err
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT);
		INSERT INTO pets VALUES (1, 'ada'), (2, 'bo'), (3, NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestQuery(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		query   string
		args    []any
		want    []pet
		wantErr string // prefix of the error; "" for none
	}{
		{name: "rows in order", query: `SELECT id, name FROM pets WHERE id < 3 ORDER BY id DESC`,
			want: []pet{{2, "bo"}, {1, "ada"}}},
		{name: "args", query: `SELECT id, name FROM pets WHERE name = ?`, args: []any{"ada"}, want: []pet{{1, "ada"}}},
		{name: "no rows is nil", query: `SELECT id, name FROM pets WHERE id > 9`},
		{name: "bad query", query: `SELECT id, name FROM nopets`, wantErr: "list pets: "},
		// A NULL name cannot scan into a string: the whole list fails,
		// not just that row.
		{name: "scan error drops the rows", query: `SELECT id, name FROM pets ORDER BY id`, wantErr: "list pets: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sqlrows.Query(ctx, db, "list pets", scanPet, tt.query, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				if got != nil {
					t.Fatalf("got %v with an error, want nil", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestQueryWrapsScanError(t *testing.T) {
	db := openDB(t)
	boom := errors.New("boom")
	_, err := sqlrows.Query(context.Background(), db, "pets", func(sqlrows.Scanner) (pet, error) { return pet{}, boom },
		`SELECT id FROM pets`)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap %v", err, boom)
	}
}

func TestQueryCancelled(t *testing.T) {
	db := openDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sqlrows.Query(ctx, db, "pets", scanPet, `SELECT id, name FROM pets`)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
