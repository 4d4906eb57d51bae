package whatsapp

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"go.mau.fi/whatsmeow/store/sqlstore"
	waLog "go.mau.fi/whatsmeow/util/log"

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
)

// SessionPath is where the whatsmeow device store lives on SQLite: the
// configured session_db, else <dataDir>/whatsapp.db. The CLI's login and
// migrate commands and the daemon must agree on it, so all call this.
func SessionPath(sessionDB, dataDir string) string {
	if sessionDB != "" {
		return sessionDB
	}
	return filepath.Join(dataDir, "whatsapp.db")
}

// Session is where whatsmeow keeps the linked device (its keys, Signal
// sessions, app state): an SQLite file of its own, or the Postgres
// database botd's tables are in, so that a standby instance takes the
// number over with the lease.
type Session struct {
	// Path is the SQLite file; used when PostgresDSN is empty.
	Path string
	// PostgresDSN is the Postgres database (botd's database.dsn).
	// whatsmeow's tables there are its own, named whatsmeow_*, with their
	// own schema version (whatsmeow_version).
	PostgresDSN string
}

// SessionFor is where the session lives under botd's config: in the
// Postgres database when botd's tables are there, else the SQLite file
// SessionPath names (session_db then only says what `botd database
// migrate` copies from).
func SessionFor(cfg Config, db store.Config, dataDir string) Session {
	if sqldialect.Dialect(db.Driver) == sqldialect.Postgres {
		return Session{PostgresDSN: db.DSN}
	}
	return Session{Path: SessionPath(cfg.SessionDB, dataDir)}
}

// String names the store in messages; never the DSN, which may hold a
// password.
func (s Session) String() string {
	if s.PostgresDSN != "" {
		return "the postgres database (database.dsn)"
	}
	return s.Path
}

// openContainer opens (creating and migrating) the whatsmeow session
// store. On SQLite it is a file apart from botd's database because
// whatsmeow owns its schema and migrations; on Postgres its tables sit
// beside botd's under their whatsmeow_ prefix.
func openContainer(ctx context.Context, s Session, log *slog.Logger) (*sqlstore.Container, error) {
	if s.PostgresDSN != "" {
		return openPostgresContainer(ctx, s.PostgresDSN, log)
	}
	path := s.Path
	if path == "" {
		return nil, fmt.Errorf("whatsapp session store: no path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("whatsapp session store: %w", err)
	}
	c, err := sqlstore.New(ctx, "sqlite", store.DSN(path), newWALogger(log, "Store"))
	if err != nil {
		return nil, fmt.Errorf("whatsapp session store %s: %w", path, err)
	}
	// The session holds the account's keys.
	_ = os.Chmod(path, 0o600)
	return c, nil
}

// openPostgresContainer opens whatsmeow's store on pgx's plain
// database/sql driver: whatsmeow writes Postgres SQL itself ($n
// placeholders, real booleans), so the rewriting handle botd's own tables
// use (internal/sqldialect) would break it.
func openPostgresContainer(ctx context.Context, dsn string, log *slog.Logger) (*sqlstore.Container, error) {
	db, err := OpenPostgresDB(ctx, dsn)
	if err != nil {
		return nil, err
	}
	c := sqlstore.NewWithDB(db, "postgres", newWALogger(log, "Store"))
	if err := c.Upgrade(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("whatsapp session store in postgres: upgrade: %w", err)
	}
	return c, nil
}

// OpenPostgresDB is the handle whatsmeow's tables are reached by (the
// session store and `botd database migrate`'s copy of it).
func OpenPostgresDB(ctx context.Context, dsn string) (*sql.DB, error) {
	// 8: wide enough for whatsmeow's decryptions, each a transaction,
	// running beside its other queries.
	db, err := sqldialect.OpenPostgresPlain(ctx, dsn, 8)
	if err != nil {
		return nil, fmt.Errorf("whatsapp session store in postgres: %w", err)
	}
	return db, nil
}

// waLogger adapts whatsmeow's printf logger to slog. whatsmeow's debug
// output includes raw protocol nodes, so it stays at slog's debug level.
type waLogger struct {
	l *slog.Logger
}

func newWALogger(l *slog.Logger, module string) waLog.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return waLogger{l: l.With("wa", module)}
}

func (w waLogger) Warnf(msg string, args ...any)  { w.l.Warn(fmt.Sprintf(msg, args...)) }
func (w waLogger) Errorf(msg string, args ...any) { w.l.Error(fmt.Sprintf(msg, args...)) }
func (w waLogger) Infof(msg string, args ...any)  { w.l.Debug(fmt.Sprintf(msg, args...)) }
func (w waLogger) Debugf(msg string, args ...any) {
	if w.l.Enabled(context.Background(), slog.LevelDebug-4) {
		w.l.Log(context.Background(), slog.LevelDebug-4, fmt.Sprintf(msg, args...))
	}
}
func (w waLogger) Sub(module string) waLog.Logger {
	return waLogger{l: w.l.With("wa_sub", module)}
}
