package storetest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/store"
)

// Counts are the round trips made to a database: each statement executed
// or queried, and each transaction begun. They measure how chatty a
// caller is with the store (a benchmark reports them per operation); they
// are not for asserting exact call counts.
type Counts struct {
	statements atomic.Int64
	txs        atomic.Int64
}

// Statements is the statements run so far.
func (c *Counts) Statements() int64 { return c.statements.Load() }

// Transactions is the transactions begun so far.
func (c *Counts) Transactions() int64 { return c.txs.Load() }

var countingDrivers atomic.Int64

// OpenCounting opens a new SQLite store, as Open does, through a driver
// that counts every round trip its connections make.
func OpenCounting(t testing.TB) (*store.Store, *Counts) {
	t.Helper()
	c := &Counts{}
	name := fmt.Sprintf("sqlite-counting-%d", countingDrivers.Add(1))
	sql.Register(name, countingDriver{inner: sqliteDriver(t), n: c})
	s, err := store.OpenVia(context.Background(), name, filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c
}

// sqliteDriver is the driver store.Open uses, registered as "sqlite".
func sqliteDriver(t testing.TB) driver.Driver {
	t.Helper()
	db, err := sql.Open("sqlite", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.Driver()
}

type countingDriver struct {
	inner driver.Driver
	n     *Counts
}

func (d countingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{inner: c, n: d.n}, nil
}

// countingConn forwards to modernc's connection, which implements every
// context interface database/sql looks for.
type countingConn struct {
	inner driver.Conn
	n     *Counts
}

func (c *countingConn) Prepare(q string) (driver.Stmt, error) { return c.inner.Prepare(q) }
func (c *countingConn) Close() error                          { return c.inner.Close() }
func (c *countingConn) Begin() (driver.Tx, error) {
	c.n.txs.Add(1)
	return c.inner.Begin() //nolint:staticcheck // database/sql calls BeginTx; this is the interface's floor
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.n.txs.Add(1)
	return c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.n.statements.Add(1)
	return c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.n.statements.Add(1)
	return c.inner.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.statements.Add(1)
	return c.inner.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *countingConn) Ping(ctx context.Context) error {
	return c.inner.(driver.Pinger).Ping(ctx)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.inner.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.inner.(driver.Validator).IsValid() }
