// Package storetest runs a package's tests on every database botd keeps
// its tables in: each test gets a new, empty SQLite file or Postgres
// database (package pgtest's server). A package using it runs its tests
// through Main.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
)

// Drivers is every database the suites run on.
var Drivers = []sqldialect.Dialect{sqldialect.SQLite, sqldialect.Postgres}

// Main runs the package's tests and stops the Postgres server after:
// func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }.
func Main(m *testing.M) int { return pgtest.Main(m) }

// Config names a new, empty database of d for t; opening it twice is a
// restart.
func Config(t testing.TB, d sqldialect.Dialect) store.Config {
	t.Helper()
	if d == sqldialect.Postgres {
		return store.Config{Driver: string(d), DSN: pgtest.DSN(t)}
	}
	return store.Config{Driver: string(d), DSN: filepath.Join(t.TempDir(), "botd.db")}
}

// Open opens (migrating) the database c names, closed when t ends.
func Open(t testing.TB, c store.Config) *store.Store {
	t.Helper()
	s, err := store.Connect(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Each runs test once per driver, as subtests named after them.
func Each(t *testing.T, test func(t *testing.T, c store.Config)) {
	t.Helper()
	for _, d := range Drivers {
		t.Run(string(d), func(t *testing.T) { test(t, Config(t, d)) })
	}
}

// EachB is Each for a benchmark.
func EachB(b *testing.B, bench func(b *testing.B, c store.Config)) {
	b.Helper()
	for _, d := range Drivers {
		b.Run(string(d), func(b *testing.B) { bench(b, Config(b, d)) })
	}
}

// EachDialect runs test once per driver, for tests that make their
// databases themselves (Config, several per test).
func EachDialect(t *testing.T, test func(t *testing.T, d sqldialect.Dialect)) {
	t.Helper()
	for _, d := range Drivers {
		t.Run(string(d), func(t *testing.T) { test(t, d) })
	}
}
