// Package sqldialect is the one place where botd's two databases differ:
// SQLite (modernc.org/sqlite, one file, the default) and PostgreSQL (pgx,
// shared by two instances). Every package writes its SQL once, in the
// subset both accept, with ? placeholders; this package makes a Postgres
// *sql.DB accept that SQL (placeholders, booleans, text Postgres refuses)
// and turns the migrations' SQLite DDL into Postgres DDL.
package sqldialect

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names a database botd can keep its tables in; the values are
// the spellings of the config key database.driver.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// OpenPostgres returns a handle on the Postgres database dsn names (a
// libpq keyword/value string or a postgres:// URL) whose connections take
// botd's SQL as written: ? placeholders become $1…, a Go bool becomes 0/1
// (botd's flags are INTEGER columns on both databases), and text is made
// storable (Postgres refuses NUL and invalid UTF-8 in text, SQLite keeps
// them; both become U+FFFD). Nothing is dialled until first use.
func OpenPostgres(dsn string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres dsn: %w", err)
	}
	// A cancelled context cancels the statement on the server too (pgx's
	// default only drops the connection, and the server would finish the
	// statement on its own: a lease take given up as blocked would land
	// when the lock is released). The deadline only bounds a server that
	// does not answer the cancel.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
	}
	return sql.OpenDB(connector{stdlib.GetConnector(*cfg)}), nil
}

// OpenPostgresPlain returns a handle on dsn whose connections take SQL
// as written, for the libraries that keep their own tables in botd's
// Postgres database and write Postgres SQL themselves ($n placeholders,
// real booleans): whatsmeow's session store, mautrix's crypto store.
// botd's rewriting handle (OpenPostgres) would break their SQL. conns
// bounds the pool beside botd's own under the server's connection limit;
// the database is pinged, so a wrong DSN fails here.
func OpenPostgresPlain(ctx context.Context, dsn string, conns int) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres dsn: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(conns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

type connector struct{ driver.Connector }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pc, ok := dc.(*stdlib.Conn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("sqldialect: pgx returned a %T", dc)
	}
	return &conn{pc}, nil
}

// conn is pgx's connection with the query text and arguments rewritten on
// the way in; everything else (transactions, pings, resets) is pgx's own.
type conn struct{ *stdlib.Conn }

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, Rebind(query), fixArgs(args))
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, Rebind(query), fixArgs(args))
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.Conn.PrepareContext(ctx, Rebind(query))
	if err != nil {
		return nil, err
	}
	return stmt{s.(*stdlib.Stmt)}, nil
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

type stmt struct{ *stdlib.Stmt }

func (s stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.ExecContext(ctx, fixArgs(args))
}

func (s stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.QueryContext(ctx, fixArgs(args))
}

// fixArgs makes the values SQLite takes as they are acceptable to
// Postgres; it changes args in place (database/sql built them for this
// call alone).
func fixArgs(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		switch v := a.Value.(type) {
		case bool:
			if v {
				args[i].Value = int64(1)
			} else {
				args[i].Value = int64(0)
			}
		case string:
			args[i].Value = StorableText(v)
		}
	}
	return args
}

// StorableText is s as Postgres can keep it in a text column: NUL bytes
// and invalid UTF-8 become U+FFFD. Text that is already valid comes back
// unchanged, without a copy.
func StorableText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Rebind turns ? placeholders into Postgres's $1, $2, … Question marks in
// string literals, quoted identifiers and comments are left alone.
func Rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := skipQuoted(q, i, c)
			b.WriteString(q[i:j])
			i = j - 1
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end - 1
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// skipQuoted returns the index just past the literal opened by quote at
// i; a doubled quote inside is an escaped one.
func skipQuoted(q string, i int, quote byte) int {
	for j := i + 1; j < len(q); j++ {
		if q[j] == quote {
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

// IsForeignKey reports whether err is a foreign-key violation on either
// database.
func IsForeignKey(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return false
}

// IsUnique reports whether err is a unique or primary-key violation on
// either database.
func IsUnique(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// ParseDSN reports whether dsn is a connection string pgx accepts,
// without dialling; the error never repeats a password.
func ParseDSN(dsn string) error {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return fmt.Errorf("not a Postgres connection string: %w", err)
	}
	return nil
}

// ForShare is the clause that makes a SELECT inside a transaction hold
// the rows it read until the transaction ends, so a concurrent UPDATE of
// them waits for it: FOR SHARE on Postgres. SQLite needs none: botd's
// transactions there begin IMMEDIATE, holding the database's one write
// lock from the start.
func (d Dialect) ForShare() string {
	if d == Postgres {
		return " FOR SHARE"
	}
	return ""
}
