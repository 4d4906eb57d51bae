package pgtest_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/botd-dev/botd/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestEachDSNIsAnEmptyDatabaseOnAUnixSocket(t *testing.T) {
	a, b := pgtest.DSN(t), pgtest.DSN(t)
	if a == b {
		t.Fatalf("two DSN calls gave the same database: %s", a)
	}
	ctx := context.Background()
	dba, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Close()
	if _, err := dba.ExecContext(ctx, `CREATE TABLE x (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	dbb, _ := sql.Open("pgx", b)
	defer dbb.Close()
	var n int
	if err := dbb.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'x'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a table made in one test database is visible in another")
	}
	var tcp string
	if err := dba.QueryRowContext(ctx, `SHOW listen_addresses`).Scan(&tcp); err != nil {
		t.Fatal(err)
	}
	if tcp != "" {
		t.Fatalf("the server listens on TCP (%q); tests use only its socket", tcp)
	}
}
