package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/sqldialect"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// drivers runs test once per database botd supports, each time on a
// new, empty one: an SQLite file, a Postgres database.
func drivers(t *testing.T, test func(t *testing.T, c Config)) {
	t.Helper()
	for _, d := range []sqldialect.Dialect{sqldialect.SQLite, sqldialect.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			c := Config{Driver: string(d), DSN: filepath.Join(t.TempDir(), "botd.db")}
			if d == sqldialect.Postgres {
				c.DSN = pgtest.DSN(t)
			}
			test(t, c)
		})
	}
}

// open opens (migrating) the database c names, closed when t ends;
// opening it again is a restart.
func open(t *testing.T, c Config) *Store {
	t.Helper()
	s, err := Connect(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
