package matrix

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
)

// Store is where the channel keeps what outlives a restart: the sync
// state (StatePath's contents) and the end-to-end encryption store
// (CryptoPath's). On SQLite both are files in DataDir; with botd's
// database on Postgres both live in that database, so that a standby
// taking the lease over resumes the sync where the other instance left
// it, with the same device and Olm sessions.
type Store struct {
	// DataDir holds the files when PostgresDSN is empty.
	DataDir string
	// PostgresDSN is botd's database.dsn. The channel's tables there are
	// its own: matrix_state (created by the channel), mautrix's crypto_*
	// and mx_* (its room state), each set with its own schema version
	// (crypto_version, mx_version); none collides with botd's tables or
	// whatsmeow's whatsmeow_*.
	PostgresDSN string
}

// StoreFor is where the channel's state lives under botd's config: in
// the Postgres database when botd's tables are there, else in dataDir.
func StoreFor(db store.Config, dataDir string) Store {
	if sqldialect.Dialect(db.Driver) == sqldialect.Postgres {
		return Store{DataDir: dataDir, PostgresDSN: db.DSN}
	}
	return Store{DataDir: dataDir}
}

// String names the store in messages; never the DSN, which may hold a
// password.
func (s Store) String() string {
	if s.PostgresDSN != "" {
		return "the postgres database (database.dsn)"
	}
	return s.DataDir
}

// stateStore keeps the channel's state: a file, or a row in Postgres.
type stateStore interface {
	load(ctx context.Context) (state, error)
	save(ctx context.Context, st state) error
	close() error
}

// fileState is the state file at StatePath.
type fileState struct{ path string }

func (f fileState) load(context.Context) (state, error)    { return loadState(f.path) }
func (f fileState) save(_ context.Context, st state) error { return saveState(f.path, st) }
func (f fileState) close() error                           { return nil }

// openStateStore opens where the state lives; on Postgres it creates the
// channel's table on first use.
func (s Store) openStateStore(ctx context.Context, userID string) (stateStore, error) {
	if s.PostgresDSN == "" {
		return fileState{path: StatePath(s.DataDir)}, nil
	}
	db, err := openPostgres(ctx, s.PostgresDSN, 2)
	if err != nil {
		return nil, err
	}
	// The channel's own table, as whatsmeow and mautrix make theirs:
	// botd's migrations do not know the channel's state. One row per bot
	// account; only the instance holding the lease runs the channel, so
	// one writer at a time.
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS matrix_state (
		user_id TEXT PRIMARY KEY,
		state TEXT NOT NULL DEFAULT '',
		pickle_key BYTEA
	)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("matrix state in postgres: %w", err)
	}
	return &pgState{db: db, userID: userID}, nil
}

// pgState is the account's row in matrix_state: the state as the same
// JSON the file holds, and the crypto store's pickle key.
type pgState struct {
	db     *sql.DB
	userID string
}

func (p *pgState) load(ctx context.Context) (state, error) {
	var st state
	var raw string
	err := p.db.QueryRowContext(ctx, `SELECT state FROM matrix_state WHERE user_id = $1`, p.userID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && raw == "") {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("matrix state in postgres: %w", err)
	}
	if len(raw) > maxStateBytes {
		return st, fmt.Errorf("matrix state in postgres: larger than %d bytes", maxStateBytes)
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return st, fmt.Errorf("matrix state in postgres: %w", err)
	}
	return st, nil
}

func (p *pgState) save(ctx context.Context, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("matrix state: %w", err)
	}
	if _, err := p.db.ExecContext(ctx, `INSERT INTO matrix_state (user_id, state) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET state = EXCLUDED.state`, p.userID, string(b)); err != nil {
		return fmt.Errorf("matrix state in postgres: %w", err)
	}
	return nil
}

func (p *pgState) close() error { return p.db.Close() }

// pgPickleKey is the crypto store's pickle key on Postgres: made once,
// kept in the account's matrix_state row, so that every instance opening
// the store in that database opens it with the same key. The insert keeps
// a key already there, so two first starts agree on one.
//
// The trade-off: the key then sits in the same database as the secrets
// it seals (the Olm account, the room keys), so whoever can read the
// database (a dump, a backup, a role with SELECT) can open them, as
// whatsmeow's Signal keys in whatsmeow_* are readable there. The
// alternatives were worse for a bot that must start unattended: a key in
// each instance's data dir must be copied by hand to the standby (and a
// standby without it has no encryption after a failover), and a key
// derived from the access token locks the store when the token changes.
// At-rest protection of the Postgres database (its disk, its backups,
// its roles) is the operator's, as it is of the data dir on SQLite.
func pgPickleKey(ctx context.Context, db *sql.DB, userID string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("crypto key: %w", err)
	}
	var key []byte
	err := db.QueryRowContext(ctx, `INSERT INTO matrix_state (user_id, pickle_key) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET pickle_key = COALESCE(matrix_state.pickle_key, EXCLUDED.pickle_key)
		RETURNING pickle_key`, userID, fresh).Scan(&key)
	if err != nil {
		return nil, fmt.Errorf("crypto key in postgres: %w", err)
	}
	if len(key) < 32 || len(key) > maxPickleKeyBytes {
		return nil, fmt.Errorf("crypto key in postgres: %d bytes, want 32 to %d", len(key), maxPickleKeyBytes)
	}
	return key, nil
}

// openPostgres is the handle mautrix's tables and the state row are
// reached by (sqldialect.OpenPostgresPlain: mautrix writes Postgres SQL
// itself).
func openPostgres(ctx context.Context, dsn string, conns int) (*sql.DB, error) {
	db, err := sqldialect.OpenPostgresPlain(ctx, dsn, conns)
	if err != nil {
		return nil, fmt.Errorf("matrix store in postgres: %w", err)
	}
	return db, nil
}
