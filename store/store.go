// Package store is botd's database: one *sql.DB per process on SQLite (one
// file, WAL; the default) or PostgreSQL (shared by instances), numbered
// migrations, chats, messages, router cursors and media refs. The SQL is
// written once for both; package sqldialect holds what differs.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/internal/sqlrows"
)

// Store wraps the shared database handle.
type Store struct {
	DB *sql.DB
	// Dialect is the database DB talks to, for the few queries that differ.
	Dialect sqldialect.Dialect

	// fence is the lease epoch this process's fenced writes carry (see
	// lease.go): 0 while no lease is in use (unfenced), fenceNone once one
	// is required but not held.
	fence atomic.Int64

	// keeping serialises keeping the tool calls of runs recorded before
	// they were kept (toolcalls.go).
	keeping sync.Mutex

	// stored tells the followers of the conversation in this process that
	// a message was stored (Stored), so they need not poll for it.
	stored news
}

// news is a broadcast without a payload: every channel handed out since
// the last signal is closed by the next. The zero value is ready.
type news struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *news) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *news) signal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// Stored is closed once a message is next stored (PutMessage, committed)
// through s: how a follower of new messages in this process (botd run's
// chat marks) sleeps until there is something to read. Take it before
// reading, so a message stored during the read wakes the next wait. A
// message another process stores (a second instance on the database) is
// not told here.
func (s *Store) Stored() <-chan struct{} { return s.stored.wait() }

// DSN builds a modernc.org/sqlite DSN with the pragmas botd relies on:
// WAL so readers never block the writer, a busy timeout instead of
// SQLITE_BUSY errors, and foreign keys (whatsmeow's store needs them).
func DSN(path string) string {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the SQLite database at path and migrates
// it.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenVia(ctx, "sqlite", path)
}

// OpenVia is Open through the database/sql driver registered as driver,
// one that wraps modernc.org/sqlite (storetest's counting driver, which
// measures the round trips a caller makes).
func OpenVia(ctx context.Context, driver, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db, err := sql.Open(driver, DSN(path))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// Many readers, one writer is SQLite's shape; a handful of conns keeps
	// concurrent IPC handlers from queueing on reads.
	db.SetMaxOpenConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{DB: db, Dialect: sqldialect.SQLite}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// OpenPostgres connects to the Postgres database dsn names and migrates it
// (under an advisory lock, so two instances starting at once migrate it
// once).
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	db, err := sqldialect.OpenPostgres(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// Two instances share the server's connection limit (100 by default).
	db.SetMaxOpenConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store: postgres: %w", err)
	}
	s := &Store{DB: db, Dialect: sqldialect.Postgres}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.DB.Close() }

// migrations are applied in order, each once; never edit a released one,
// append a new one.
var migrations = []string{
	// 1: chats, messages, cursors, media refs.
	`CREATE TABLE chats (
		id TEXT PRIMARY KEY,
		channel TEXT NOT NULL,
		name TEXT NOT NULL DEFAULT '',
		is_group INTEGER NOT NULL DEFAULT 0,
		last_message_at INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE messages (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
		id TEXT NOT NULL,
		sender_id TEXT NOT NULL DEFAULT '',
		sender_name TEXT NOT NULL DEFAULT '',
		text TEXT NOT NULL DEFAULT '',
		ts INTEGER NOT NULL,
		from_me INTEGER NOT NULL DEFAULT 0,
		is_bot INTEGER NOT NULL DEFAULT 0,
		reply_to TEXT NOT NULL DEFAULT '',
		thread_id TEXT NOT NULL DEFAULT '',
		UNIQUE (chat_id, id)
	);
	CREATE INDEX messages_chat_seq ON messages(chat_id, seq);
	CREATE TABLE cursors (
		name TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);
	CREATE TABLE media_refs (
		id TEXT PRIMARY KEY,
		channel TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		message_id TEXT NOT NULL DEFAULT '',
		sender TEXT NOT NULL DEFAULT '',
		kind TEXT NOT NULL,
		mime TEXT NOT NULL DEFAULT '',
		file_name TEXT NOT NULL DEFAULT '',
		size INTEGER NOT NULL DEFAULT 0,
		duration_ms INTEGER NOT NULL DEFAULT 0,
		width INTEGER NOT NULL DEFAULT 0,
		height INTEGER NOT NULL DEFAULT 0,
		caption TEXT NOT NULL DEFAULT '',
		private BLOB,
		created INTEGER NOT NULL,
		expires INTEGER NOT NULL
	);
	CREATE INDEX media_refs_chat_created ON media_refs(chat_id, created);
	CREATE INDEX media_refs_expires ON media_refs(expires);`,
	// 2: the media cache index: which content-addressed blob holds a ref's
	// bytes, so a second fetch is served without a download.
	`CREATE TABLE media_cache (
		ref_id TEXT PRIMARY KEY,
		sha256 TEXT NOT NULL,
		size INTEGER NOT NULL,
		mime TEXT NOT NULL,
		fetched INTEGER NOT NULL
	);
	CREATE INDEX media_cache_sha ON media_cache(sha256);
	CREATE INDEX media_cache_fetched ON media_cache(fetched);`,
	// 3: the agent loop: the latest trigger per group (so a restart knows
	// which groups still owe an answer), the outbox that makes delivery
	// survive a crash, and run transcripts (media as references only).
	`CREATE TABLE agent_triggers (
		folder TEXT PRIMARY KEY,
		seq INTEGER NOT NULL,
		chat_id TEXT NOT NULL,
		message_id TEXT NOT NULL DEFAULT '',
		thread_id TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE agent_outbox (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		folder TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		up_to_seq INTEGER NOT NULL,
		text TEXT NOT NULL DEFAULT '',
		media TEXT NOT NULL DEFAULT '[]',
		thread_id TEXT NOT NULL DEFAULT '',
		reply_to TEXT NOT NULL DEFAULT '',
		status TEXT NOT NULL DEFAULT 'pending',
		parts_done INTEGER NOT NULL DEFAULT 0,
		attempts INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		finished INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX agent_outbox_pending ON agent_outbox(status, folder, id);
	CREATE TABLE agent_runs (
		id TEXT PRIMARY KEY,
		folder TEXT NOT NULL,
		started INTEGER NOT NULL,
		finished INTEGER NOT NULL DEFAULT 0,
		outcome TEXT NOT NULL DEFAULT '',
		up_to_seq INTEGER NOT NULL DEFAULT 0,
		iterations INTEGER NOT NULL DEFAULT 0,
		input_tokens INTEGER NOT NULL DEFAULT 0,
		output_tokens INTEGER NOT NULL DEFAULT 0,
		cost_microcents INTEGER NOT NULL DEFAULT 0,
		cost_known INTEGER NOT NULL DEFAULT 0,
		error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX agent_runs_folder ON agent_runs(folder, started);
	CREATE TABLE agent_transcripts (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
		folder TEXT NOT NULL,
		idx INTEGER NOT NULL,
		role TEXT NOT NULL,
		parts TEXT NOT NULL,
		created INTEGER NOT NULL
	);
	CREATE INDEX agent_transcripts_run ON agent_transcripts(run_id, idx);
	CREATE INDEX agent_transcripts_folder ON agent_transcripts(folder, id);`,
	// 4: what lazy media cost: how often each ref was downloaded and how
	// many bytes that took (the cache forgets; these stay with the ref).
	`ALTER TABLE media_refs ADD COLUMN downloads INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE media_refs ADD COLUMN downloaded_bytes INTEGER NOT NULL DEFAULT 0;`,
	// 5: conversation continuity: summaries of compacted history (made once,
	// reused by every later run) and what the assistant learnt from each
	// ref it fetched (text only; bytes are never kept in history).
	`CREATE TABLE agent_summaries (
		folder TEXT NOT NULL,
		up_to_seq INTEGER NOT NULL,
		text TEXT NOT NULL,
		created INTEGER NOT NULL,
		PRIMARY KEY (folder, up_to_seq)
	);
	CREATE TABLE agent_media_notes (
		folder TEXT NOT NULL,
		ref_id TEXT NOT NULL,
		note TEXT NOT NULL,
		run_id TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		PRIMARY KEY (folder, ref_id)
	);`,
	// 6: transcripts of audio by content and model, so the same bytes are
	// never sent to a transcription provider twice, across restarts.
	`CREATE TABLE media_transcripts (
		sha256 TEXT NOT NULL,
		model TEXT NOT NULL,
		text TEXT NOT NULL,
		language TEXT NOT NULL DEFAULT '',
		duration_ms INTEGER NOT NULL DEFAULT 0,
		created INTEGER NOT NULL,
		PRIMARY KEY (sha256, model)
	);`,
	// 7: scheduled tasks (package scheduler) and the runs they delivered:
	// next_run is the due time of the run not yet delivered, and a run is
	// (task, due), so a restart can neither lose nor repeat one.
	`CREATE TABLE scheduled_tasks (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		folder TEXT NOT NULL,
		prompt TEXT NOT NULL,
		kind TEXT NOT NULL,
		spec TEXT NOT NULL,
		context TEXT NOT NULL DEFAULT 'group',
		state TEXT NOT NULL DEFAULT 'active',
		next_run INTEGER NOT NULL DEFAULT 0,
		last_run INTEGER NOT NULL DEFAULT 0,
		retry_at INTEGER NOT NULL DEFAULT 0,
		failures INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT '',
		runs INTEGER NOT NULL DEFAULT 0,
		skipped INTEGER NOT NULL DEFAULT 0,
		created_by TEXT NOT NULL,
		request_id TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		updated INTEGER NOT NULL
	);
	CREATE INDEX scheduled_tasks_due ON scheduled_tasks(state, next_run);
	CREATE INDEX scheduled_tasks_folder ON scheduled_tasks(folder, state);
	CREATE UNIQUE INDEX scheduled_tasks_request ON scheduled_tasks(created_by, request_id) WHERE request_id != '';
	CREATE TABLE scheduled_runs (
		task_id INTEGER NOT NULL,
		due INTEGER NOT NULL,
		folder TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		message_id TEXT NOT NULL,
		fired INTEGER NOT NULL,
		PRIMARY KEY (task_id, due)
	);
	CREATE INDEX scheduled_runs_folder ON scheduled_runs(folder, fired);`,
	// 8: the token bill: every model attempt of a run, failed or not, with
	// its usage and cost, and the model that answered each run.
	`CREATE TABLE llm_attempts (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		run_id TEXT NOT NULL,
		folder TEXT NOT NULL,
		at INTEGER NOT NULL,
		provider TEXT NOT NULL,
		model TEXT NOT NULL,
		outcome TEXT NOT NULL,
		input_tokens INTEGER NOT NULL DEFAULT 0,
		output_tokens INTEGER NOT NULL DEFAULT 0,
		cache_read_tokens INTEGER NOT NULL DEFAULT 0,
		cache_write_tokens INTEGER NOT NULL DEFAULT 0,
		reasoning_tokens INTEGER NOT NULL DEFAULT 0,
		cost_microcents INTEGER NOT NULL DEFAULT 0,
		cost_known INTEGER NOT NULL DEFAULT 0,
		duration_ms INTEGER NOT NULL DEFAULT 0,
		error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX llm_attempts_folder_at ON llm_attempts(folder, at);
	ALTER TABLE agent_runs ADD COLUMN model TEXT NOT NULL DEFAULT '';`,
	// 9: media uploaded to a provider's files API, keyed by content hash
	// so the same bytes go up once per provider; expires_at 0 means the
	// provider keeps it until deleted.
	`CREATE TABLE llm_uploads (
		provider TEXT NOT NULL,
		sha256 TEXT NOT NULL,
		mime TEXT NOT NULL,
		file_id TEXT NOT NULL,
		uri TEXT NOT NULL DEFAULT '',
		size INTEGER NOT NULL,
		uploaded_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL DEFAULT 0,
		last_used INTEGER NOT NULL,
		PRIMARY KEY (provider, sha256, mime)
	);
	CREATE INDEX llm_uploads_last_used ON llm_uploads(last_used);`,
	// 10: scheduled runs answered through a provider's batch API: the run
	// is handed off with its request, submitted, polled and resumed by the
	// group when the result is in, across restarts.
	`CREATE TABLE llm_batches (
		id TEXT PRIMARY KEY,
		folder TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		thread_id TEXT NOT NULL DEFAULT '',
		reply_to TEXT NOT NULL DEFAULT '',
		up_to_seq INTEGER NOT NULL,
		provider TEXT NOT NULL,
		model TEXT NOT NULL,
		request TEXT NOT NULL,
		state TEXT NOT NULL,
		batch_id TEXT NOT NULL DEFAULT '',
		result TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT '',
		polls INTEGER NOT NULL DEFAULT 0,
		next_poll INTEGER NOT NULL DEFAULT 0,
		created INTEGER NOT NULL,
		updated INTEGER NOT NULL
	);
	CREATE INDEX llm_batches_state ON llm_batches(state, next_poll);
	CREATE INDEX llm_batches_folder ON llm_batches(folder, state);
	ALTER TABLE scheduled_tasks ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;`,
	// 11: media blobs and where they are kept: their metadata (also put on
	// the objects of a bucket), the store that keeps them (kept_in, empty
	// while only the local cache has them: the pending uploads), and the
	// retry state of their upload. Blobs cached before are recorded as
	// kept locally only.
	`CREATE TABLE media_blobs (
		sha256 TEXT PRIMARY KEY,
		size INTEGER NOT NULL,
		mime TEXT NOT NULL DEFAULT '',
		name TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		kept_in TEXT NOT NULL DEFAULT '',
		attempts INTEGER NOT NULL DEFAULT 0,
		next_try INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX media_blobs_upload ON media_blobs(kept_in, next_try);
	INSERT OR IGNORE INTO media_blobs(sha256, size, mime, name, created)
		SELECT c.sha256, MAX(c.size), MAX(c.mime), COALESCE(MAX(r.file_name), ''), MIN(c.fetched)
		FROM media_cache c LEFT JOIN media_refs r ON r.id = c.ref_id GROUP BY c.sha256;`,
	// 12: media generation: what each made image, voice note and video cost
	// (units are images, or seconds of audio or video), the video jobs that
	// outlive a restart, and answers to be spoken as a voice note.
	`CREATE TABLE media_generations (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		folder TEXT NOT NULL,
		at INTEGER NOT NULL,
		kind TEXT NOT NULL,
		provider TEXT NOT NULL,
		model TEXT NOT NULL,
		outcome TEXT NOT NULL,
		units REAL NOT NULL DEFAULT 0,
		input_tokens INTEGER NOT NULL DEFAULT 0,
		output_tokens INTEGER NOT NULL DEFAULT 0,
		cost_microcents INTEGER NOT NULL DEFAULT 0,
		cost_known INTEGER NOT NULL DEFAULT 0,
		ref_id TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX media_generations_folder_at ON media_generations(folder, at);
	CREATE TABLE media_jobs (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		folder TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		provider TEXT NOT NULL,
		model TEXT NOT NULL,
		remote_id TEXT NOT NULL,
		prompt TEXT NOT NULL,
		seconds INTEGER NOT NULL DEFAULT 0,
		state TEXT NOT NULL,
		progress INTEGER NOT NULL DEFAULT 0,
		polls INTEGER NOT NULL DEFAULT 0,
		next_poll INTEGER NOT NULL,
		deadline INTEGER NOT NULL,
		ref_id TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		updated INTEGER NOT NULL
	);
	CREATE INDEX media_jobs_state ON media_jobs(state, next_poll);
	ALTER TABLE agent_outbox ADD COLUMN voice INTEGER NOT NULL DEFAULT 0;`,
	// 13: descriptions media.describe made, by image content and model, so
	// a photo is described (and billed) once for a text-only model.
	`CREATE TABLE media_descriptions (
		sha256 TEXT NOT NULL,
		model TEXT NOT NULL,
		text TEXT NOT NULL,
		created INTEGER NOT NULL,
		PRIMARY KEY (sha256, model)
	);`,
	// 14: what fetch_url learnt of each page it fetched, by its link ref:
	// the validators a revalidation sends and how long the bytes are
	// fresh, so a follow-up is answered without a second GET.
	`CREATE TABLE web_links (
		ref_id TEXT PRIMARY KEY,
		url TEXT NOT NULL,
		final_url TEXT NOT NULL,
		content_type TEXT NOT NULL,
		etag TEXT NOT NULL,
		last_modified TEXT NOT NULL,
		fetched INTEGER NOT NULL,
		fresh_until INTEGER NOT NULL
	);
	CREATE TABLE web_requests (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		folder TEXT NOT NULL,
		at INTEGER NOT NULL,
		tool TEXT NOT NULL,
		host TEXT NOT NULL,
		bytes INTEGER NOT NULL,
		outcome TEXT NOT NULL,
		error TEXT NOT NULL
	);
	CREATE INDEX web_requests_at ON web_requests(at);`,
	// 15: live answers. A row per answer being shown while the model
	// writes it, kept until it is finished or cancelled, so a start-up
	// after a crash marks what it showed as interrupted; the outbox item
	// that finishes a live answer names its messages.
	`CREATE TABLE live_messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		folder TEXT NOT NULL,
		chat_id TEXT NOT NULL,
		ids TEXT NOT NULL,
		text TEXT NOT NULL,
		opened INTEGER NOT NULL,
		updated INTEGER NOT NULL
	);
	ALTER TABLE agent_outbox ADD COLUMN live_ids TEXT NOT NULL DEFAULT '[]';`,
	// 16: leases with fencing (lease.go): who is the active instance, from
	// when, until when, and the epoch every fenced write carries; and the
	// epoch under which an outbox item was last claimed for sending.
	`CREATE TABLE leases (
		name TEXT PRIMARY KEY,
		holder TEXT NOT NULL,
		epoch INTEGER NOT NULL,
		acquired INTEGER NOT NULL,
		renewed INTEGER NOT NULL,
		expires INTEGER NOT NULL
	);
	ALTER TABLE agent_outbox ADD COLUMN claimed_epoch INTEGER NOT NULL DEFAULT 0;`,
	// 17: the web channel's room links and live sessions (websessions.go),
	// shared by the instances on one database so a login or a revoked link
	// holds on both. A link's token is kept to show its URL on the
	// dashboard; it is looked up by its SHA-256. Revoked links and ended
	// sessions stay (the latter a while) so an old file imported late
	// cannot bring them back.
	`CREATE TABLE web_room_links (
		id TEXT PRIMARY KEY,
		room TEXT NOT NULL,
		token TEXT NOT NULL,
		token_sha256 TEXT NOT NULL UNIQUE,
		created INTEGER NOT NULL,
		revoked INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE web_sessions (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		nonce TEXT NOT NULL UNIQUE,
		role TEXT NOT NULL,
		room TEXT NOT NULL DEFAULT '',
		link_id TEXT NOT NULL DEFAULT '',
		key_id TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		expires INTEGER NOT NULL,
		ended INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX web_sessions_ended ON web_sessions(ended, id);
	CREATE INDEX web_sessions_link ON web_sessions(link_id);
	CREATE INDEX web_sessions_expires ON web_sessions(expires);`,
	// 18: the web rooms' recent messages (webrooms.go), shared by the
	// instances on one database so a standby's room pages and the next
	// active instance show what the active one wrote. seq numbers a room's
	// messages (unique per room: two appending processes cannot take the
	// same one); id is unique per room so an import or a retried answer
	// adds a message once. files is the JSON the channel writes.
	`CREATE TABLE web_room_messages (
		room TEXT NOT NULL,
		seq INTEGER NOT NULL,
		id TEXT NOT NULL,
		at INTEGER NOT NULL,
		sender TEXT NOT NULL DEFAULT '',
		is_assistant INTEGER NOT NULL DEFAULT 0,
		is_system INTEGER NOT NULL DEFAULT 0,
		text TEXT NOT NULL DEFAULT '',
		files TEXT NOT NULL DEFAULT '',
		reply_to TEXT NOT NULL DEFAULT '',
		note TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (room, seq)
	);
	CREATE UNIQUE INDEX web_room_messages_id ON web_room_messages(room, id);`,
	// 19: pairing (package access): chats that addressed botd without a
	// group, each with its code until approved, denied or expired; when
	// each chat was last told its code (or that it was denied), so a
	// restart resets no limit; and the groups approved live.
	`CREATE TABLE pairing_requests (
		code TEXT PRIMARY KEY,
		chat_id TEXT NOT NULL UNIQUE,
		chat_name TEXT NOT NULL DEFAULT '',
		is_group INTEGER NOT NULL DEFAULT 0,
		sender_id TEXT NOT NULL DEFAULT '',
		sender_name TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		expires INTEGER NOT NULL
	);
	CREATE INDEX pairing_requests_created ON pairing_requests(created);
	CREATE TABLE pairing_replies (
		chat_id TEXT PRIMARY KEY,
		at INTEGER NOT NULL,
		denied INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX pairing_replies_at ON pairing_replies(at);
	CREATE TABLE approved_groups (
		folder TEXT PRIMARY KEY,
		name TEXT NOT NULL DEFAULT '',
		chat_id TEXT NOT NULL UNIQUE,
		approved INTEGER NOT NULL,
		approved_by TEXT NOT NULL DEFAULT ''
	);`,
	// 20: full-text search of the messages (package chatlog), kept in
	// step by the database itself, so every insert, edit and delete of a
	// message (whoever makes it) changes the index in the same statement.
	// SQLite: an FTS5 index over messages.text (external content: the
	// text is not stored twice), its triggers, and a rebuild for the rows
	// already stored. Postgres: a generated tsvector column (filled for
	// the rows already stored by the ALTER) with a GIN index. Both split
	// text into words the same way, language-neutral, without stemming
	// (the 'simple' configuration; unicode61); chatlog searches words as
	// prefixes instead. Postgres indexes the first 100,000 characters of
	// a message: a tsvector holds at most 1 MB. FTS5 merges its segments
	// once 8 of a level are written, not 4: every message is its own
	// transaction, and merging half as often halves what the index costs
	// an insert (BenchmarkChatlogInsert). And the index reading a chat in
	// time order (read_messages, search's from/to) needs.
	sqldialect.Only(sqldialect.SQLite, `CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='seq',
		tokenize='unicode61 remove_diacritics 2');
	CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
		INSERT INTO messages_fts(rowid, text) VALUES (new.seq, new.text);
	END;
	CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
		INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
	END;
	CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
		INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
		INSERT INTO messages_fts(rowid, text) VALUES (new.seq, new.text);
	END;
	INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', 8);
	INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');`) +
		sqldialect.Only(sqldialect.Postgres, `ALTER TABLE messages ADD COLUMN text_search tsvector
		GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, left(text, 100000))) STORED;
	CREATE INDEX messages_text_search ON messages USING GIN (text_search);`) +
		`CREATE INDEX messages_chat_ts ON messages(chat_id, ts);`,
	// 21: the name a web room guest chose, fixed for the session (websessions.go).
	`ALTER TABLE web_sessions ADD COLUMN name TEXT NOT NULL DEFAULT ''`,
	// 22: chat control (package chatctl): the settings an admin changed
	// from the chat, each with who and when; and the runs each person
	// started, for access.per_sender_per_hour.
	`CREATE TABLE group_settings (
		folder TEXT NOT NULL,
		name TEXT NOT NULL,
		value TEXT NOT NULL,
		set_by TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL,
		PRIMARY KEY (folder, name)
	);
	CREATE TABLE sender_runs (
		sender TEXT NOT NULL,
		at INTEGER NOT NULL
	);
	CREATE INDEX sender_runs_sender ON sender_runs(sender, at);`,
	// 23: where a run's input tokens went (AgentRun.Split): the fixed
	// prompt, the tools' schemas, the conversation and media. NULL for
	// the runs recorded before botd split the bill, which show "—".
	`ALTER TABLE agent_runs ADD COLUMN prompt_tokens INTEGER;
	ALTER TABLE agent_runs ADD COLUMN tool_tokens INTEGER;
	ALTER TABLE agent_runs ADD COLUMN conversation_tokens INTEGER;
	ALTER TABLE agent_runs ADD COLUMN media_tokens INTEGER;`,
	// 24: each run's tool calls as summaries show them (toolcalls.go):
	// the tool, the start of its arguments and result, its string
	// arguments clipped, so a web room's chips never read a transcript
	// (whose tool results can be megabytes). tool_calls_kept is 0 for the
	// runs recorded before: their calls are kept when first read.
	`CREATE TABLE agent_tool_calls (
		run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
		idx INTEGER NOT NULL,
		named INTEGER NOT NULL DEFAULT 0,
		name TEXT NOT NULL,
		args TEXT NOT NULL,
		fields TEXT NOT NULL,
		result TEXT NOT NULL,
		failed INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (run_id, idx)
	);
	ALTER TABLE agent_runs ADD COLUMN tool_calls_kept INTEGER NOT NULL DEFAULT 0;`,
}

// SchemaVersion is the number of migrations this build knows.
var SchemaVersion = len(migrations)

// migrateLock is the Postgres advisory lock key migrations run under
// ("botd" in ASCII).
const migrateLock = 0x626f7464

func (s *Store) migrate(ctx context.Context) error {
	// One connection for the whole migration: on Postgres it holds the
	// advisory lock, so a second instance starting at the same moment
	// waits and then finds the schema current.
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if s.Dialect == sqldialect.Postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, migrateLock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, migrateLock)
	}
	if _, err := conn.ExecContext(ctx, s.Dialect.Schema(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL);`)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this botd (%d): upgrade botd", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate to %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, s.Dialect.Schema(migrations[v-1])); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied) VALUES (?, ?)`, v, time.Now().Unix()); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to %d: %w", v, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate to %d: %w", v, err)
		}
	}
	return nil
}

// Version returns the applied schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.DB.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// Chat is a conversation on one channel.
type Chat struct {
	ID            string // "<channel>:<native id>"
	Name          string
	IsGroup       bool
	LastMessageAt time.Time
}

// Channel returns the channel part of a chat id.
func Channel(chatID string) string {
	ch, _, _ := strings.Cut(chatID, ":")
	return ch
}

// UpsertChat records a chat; a later name replaces an earlier one and the
// last message time only moves forward.
func (s *Store) UpsertChat(ctx context.Context, c Chat) error {
	_, err := s.DB.ExecContext(ctx, `INSERT INTO chats(id, channel, name, is_group, last_message_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET
			name = CASE WHEN excluded.name != '' THEN excluded.name ELSE chats.name END,
			is_group = excluded.is_group,
			last_message_at = CASE WHEN excluded.last_message_at > chats.last_message_at
				THEN excluded.last_message_at ELSE chats.last_message_at END`,
		c.ID, Channel(c.ID), c.Name, c.IsGroup, c.LastMessageAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("upsert chat %s: %w", c.ID, err)
	}
	return nil
}

// ChatIsGroup reports what the chat's network last said it is; known is
// false for a chat never heard.
func (s *Store) ChatIsGroup(ctx context.Context, id string) (isGroup, known bool, err error) {
	err = s.DB.QueryRowContext(ctx, `SELECT is_group FROM chats WHERE id = ?`, id).Scan(&isGroup)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("chat %s: %w", id, err)
	}
	return isGroup, true, nil
}

// Chats lists known chats, most recently active first, so an operator can
// find the id of a chat to register.
func (s *Store) Chats(ctx context.Context) ([]Chat, error) {
	return sqlrows.Query(ctx, s.DB, "list chats", func(r sqlrows.Scanner) (Chat, error) {
		var c Chat
		var ms int64
		err := r.Scan(&c.ID, &c.Name, &c.IsGroup, &ms)
		c.LastMessageAt = time.UnixMilli(ms)
		return c, err
	}, `SELECT id, name, is_group, last_message_at FROM chats ORDER BY last_message_at DESC`)
}

// Message is one stored chat message; media appear in Text as placeholders.
type Message struct {
	Seq        int64 // store order; router cursors point at it
	ChatID     string
	ID         string
	SenderID   string
	SenderName string
	Text       string
	Time       time.Time
	FromMe     bool
	IsBot      bool
	ReplyTo    string
	ThreadID   string
}

// ErrNoChat is returned when a message names a chat that was never stored.
var ErrNoChat = errors.New("chat not stored")

// PutMessage inserts or updates (on chat + id) a message and returns its
// seq. An edit keeps the original seq so cursors stay valid.
func (s *Store) PutMessage(ctx context.Context, m Message) (int64, error) {
	var seq int64
	err := s.DB.QueryRowContext(ctx, `INSERT INTO messages(chat_id, id, sender_id, sender_name, text, ts, from_me, is_bot, reply_to, thread_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(chat_id, id) DO UPDATE SET
			sender_id = excluded.sender_id, sender_name = excluded.sender_name, text = excluded.text,
			from_me = excluded.from_me, is_bot = excluded.is_bot, reply_to = excluded.reply_to, thread_id = excluded.thread_id
		RETURNING seq`,
		m.ChatID, m.ID, m.SenderID, m.SenderName, m.Text, m.Time.UnixMilli(), m.FromMe, m.IsBot, m.ReplyTo, m.ThreadID).Scan(&seq)
	if err != nil {
		if sqldialect.IsForeignKey(err) {
			return 0, fmt.Errorf("put message %s/%s: %w", m.ChatID, m.ID, ErrNoChat)
		}
		return 0, fmt.Errorf("put message %s/%s: %w", m.ChatID, m.ID, err)
	}
	s.stored.signal()
	return seq, nil
}

// UpdateText replaces a stored message's text (an edit on the channel).
func (s *Store) UpdateText(ctx context.Context, chatID, id, text string) (bool, error) {
	res, err := s.DB.ExecContext(ctx, `UPDATE messages SET text = ? WHERE chat_id = ? AND id = ?`, text, chatID, id)
	if err != nil {
		return false, fmt.Errorf("update message %s/%s: %w", chatID, id, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Message fetches one message by chat and id.
func (s *Store) Message(ctx context.Context, chatID, id string) (Message, error) {
	row := s.DB.QueryRowContext(ctx, `SELECT `+msgCols+` FROM messages WHERE chat_id = ? AND id = ?`, chatID, id)
	m, err := scanMessage(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("message %s/%s: %w", chatID, id, err)
	}
	return m, err
}

const msgCols = `seq, chat_id, id, sender_id, sender_name, text, ts, from_me, is_bot, reply_to, thread_id`

func scanMessage(r sqlrows.Scanner) (Message, error) {
	var m Message
	var ms int64
	err := r.Scan(&m.Seq, &m.ChatID, &m.ID, &m.SenderID, &m.SenderName, &m.Text, &ms, &m.FromMe, &m.IsBot, &m.ReplyTo, &m.ThreadID)
	m.Time = time.UnixMilli(ms)
	return m, err
}

// MessagesAfter returns up to limit messages of the chats with seq > after,
// the newest ones when there are more (oldest dropped first), in order.
func (s *Store) MessagesAfter(ctx context.Context, chats []string, after int64, limit int) ([]Message, error) {
	if len(chats) == 0 {
		return nil, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(chats)), ",")
	args := make([]any, 0, len(chats)+2)
	for _, c := range chats {
		args = append(args, c)
	}
	args = append(args, after, limit)
	return sqlrows.Query(ctx, s.DB, fmt.Sprintf("messages after %d", after), scanMessage,
		`SELECT * FROM (SELECT `+msgCols+` FROM messages WHERE chat_id IN (`+ph+`) AND seq > ?
		ORDER BY seq DESC LIMIT ?) AS newest ORDER BY seq`, args...)
}

// Cursor reads a named router cursor; a missing cursor is "".
func (s *Store) Cursor(ctx context.Context, name string) (string, error) {
	var v string
	err := s.DB.QueryRowContext(ctx, `SELECT value FROM cursors WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cursor %s: %w", name, err)
	}
	return v, nil
}

// SetCursor writes a named router cursor (fenced: ErrFenced when this
// instance no longer holds the lease).
func (s *Store) SetCursor(ctx context.Context, name, value string) error {
	err := s.Fenced(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO cursors(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`, name, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("set cursor %s: %w", name, err)
	}
	return nil
}
