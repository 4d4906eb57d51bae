package whatsapp

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"

	"go.mau.fi/whatsmeow/store/sqlstore"

	"github.com/botd-dev/botd/internal/sqlrows"
	"github.com/botd-dev/botd/store"
)

// SessionCopy makes the SQLite session store at path ready to be copied
// into the Postgres database dsn by store.CopyTo (`botd database
// migrate`): whatsmeow upgrades both to its current schema (the file as
// Start would; on Postgres it creates its whatsmeow_ tables), both must
// then be at the same version, and the tables to copy are the file's
// whatsmeow_ tables but the version's own. The caller closes the
// returned DB.
func SessionCopy(ctx context.Context, path, dsn string, log *slog.Logger) (store.Attached, error) {
	// Opening a missing file would create an empty store.
	if _, err := os.Stat(path); err != nil {
		return store.Attached{}, fmt.Errorf("whatsapp session store: %w", err)
	}
	db, err := sql.Open("sqlite", store.DSN(path))
	if err != nil {
		return store.Attached{}, fmt.Errorf("whatsapp session store %s: %w", path, err)
	}
	att, err := sessionCopy(ctx, db, path, dsn, log)
	if err != nil {
		db.Close()
		return store.Attached{}, err
	}
	return att, nil
}

func sessionCopy(ctx context.Context, db *sql.DB, path, dsn string, log *slog.Logger) (store.Attached, error) {
	// Not Close: that would close db, which the copy reads.
	if err := sqlstore.NewWithDB(db, "sqlite", newWALogger(log, "Store")).Upgrade(ctx); err != nil {
		return store.Attached{}, fmt.Errorf("whatsapp session store %s: upgrade: %w", path, err)
	}
	pg, err := openPostgresContainer(ctx, dsn, log)
	if err != nil {
		return store.Attached{}, err
	}
	pg.Close()
	pdb, err := OpenPostgresDB(ctx, dsn)
	if err != nil {
		return store.Attached{}, err
	}
	defer pdb.Close()
	var vf, vt int
	if err := db.QueryRowContext(ctx, `SELECT version FROM whatsmeow_version`).Scan(&vf); err != nil {
		return store.Attached{}, fmt.Errorf("whatsapp session store %s: version: %w", path, err)
	}
	if err := pdb.QueryRowContext(ctx, `SELECT version FROM whatsmeow_version`).Scan(&vt); err != nil {
		return store.Attached{}, fmt.Errorf("whatsapp session store in postgres: version: %w", err)
	}
	if vf != vt {
		return store.Attached{}, fmt.Errorf("whatsapp session store: schema version %d in %s, %d in postgres", vf, path, vt)
	}
	tables, err := sqlrows.Query(ctx, db, "whatsapp session store: tables", func(r sqlrows.Scanner) (string, error) {
		var n string
		return n, r.Scan(&n)
	}, `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'whatsmeow\_%' ESCAPE '\' AND name != 'whatsmeow_version' ORDER BY name`)
	if err != nil {
		return store.Attached{}, err
	}
	return store.Attached{Name: "whatsapp session", DB: db, Tables: tables}, nil
}
