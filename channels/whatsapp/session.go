package whatsapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"go.mau.fi/whatsmeow/store/sqlstore"
	waLog "go.mau.fi/whatsmeow/util/log"

	"github.com/botd-dev/botd/store"
)

// SessionPath is where the whatsmeow device store lives: the configured
// session_db, else <dataDir>/whatsapp.db. The CLI's login command and the
// daemon must agree on it, so both call this.
func SessionPath(sessionDB, dataDir string) string {
	if sessionDB != "" {
		return sessionDB
	}
	return filepath.Join(dataDir, "whatsapp.db")
}

// openContainer opens (creating and migrating) the whatsmeow session store.
// It is a separate SQLite file from botd's own database because whatsmeow
// owns its schema and migrations.
func openContainer(ctx context.Context, path string, log *slog.Logger) (*sqlstore.Container, error) {
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
