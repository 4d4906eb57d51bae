package mediaregistry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/sqlrows"
)

var (
	// ErrNotFound: no such ref (or it was swept).
	ErrNotFound = errors.New("media ref not found")
	// ErrExpired: the ref exists but its TTL has passed.
	ErrExpired = errors.New("media ref expired")
	// ErrForbidden: the ref belongs to a chat outside the asking group.
	// Get wraps it together with ErrNotFound, so callers answer exactly as
	// for an unknown ref.
	ErrForbidden = errors.New("media ref belongs to another chat")
)

// Scope is what a ref lookup is limited to: the chats of one group.
type Scope interface {
	ChatIDs() []string
}

// Chats is a Scope over a fixed list of chat ids.
type Chats []string

func (c Chats) ChatIDs() []string { return c }

// Registry persists refs in the store's media_refs table.
type Registry struct {
	db  *sql.DB
	ttl time.Duration
	now func() time.Time
}

// New returns a registry over db (migrated by package store) whose refs
// live for ttl, or, when ttl is zero, for their network's DefaultRefTTL.
func New(db *sql.DB, ttl time.Duration) *Registry {
	return &Registry{db: db, ttl: ttl, now: time.Now}
}

// DefaultRefTTL is how long a ref stays fetchable when media.ref_ttl does
// not say: as long as its network can still serve the bytes. Each network
// registers its own (RegisterNetwork); Link's is here.
var DefaultRefTTL = map[string]time.Duration{
	Link: 30 * 24 * time.Hour,
}

// fallbackRefTTL is for a network without a DefaultRefTTL entry.
const fallbackRefTTL = 24 * time.Hour

// TTL is how long a new ref of channel stays fetchable.
func (r *Registry) TTL(channel string) time.Duration {
	if r.ttl > 0 {
		return r.ttl
	}
	if d, ok := DefaultRefTTL[channel]; ok {
		return d
	}
	return fallbackRefTTL
}

// SetClock replaces the time source; tests use it to expire refs.
func (r *Registry) SetClock(now func() time.Time) { r.now = now }

// Now is the registry's time, the one expiry is judged by.
func (r *Registry) Now() time.Time { return r.now() }

// Register stores ref, giving it an id (if empty), a creation time and an
// expiry. The id is written back into ref.
func (r *Registry) Register(ctx context.Context, ref *MediaReference) error {
	return r.RegisterAll(ctx, ref)
}

// RegisterAll stores several refs in one transaction: the files of one
// message (an album, a Slack share) appear together or not at all.
func (r *Registry) RegisterAll(ctx context.Context, refs ...*MediaReference) error {
	for _, ref := range refs {
		if err := r.prepare(ref); err != nil {
			return err
		}
	}
	if len(refs) == 1 {
		// One row is atomic on its own; skip the transaction round trips.
		return insertRef(ctx, r.db, refs[0])
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("register media ref: %w", err)
	}
	defer tx.Rollback()
	for _, ref := range refs {
		if err := insertRef(ctx, tx, ref); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("register media ref: %w", err)
	}
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertRef(ctx context.Context, db execer, ref *MediaReference) error {
	_, err := db.ExecContext(ctx, `INSERT INTO media_refs(id, channel, chat_id, message_id, sender, kind, mime, file_name,
		size, duration_ms, width, height, caption, private, created, expires) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		ref.ID, ref.Channel, ref.Chat, ref.MessageID, ref.Sender, string(ref.Kind), ref.MIME, ref.FileName,
		ref.Size, ref.Duration.Milliseconds(), ref.Width, ref.Height, ref.Caption, ref.Private,
		ref.Created.UnixMilli(), ref.Expires.UnixMilli())
	if err != nil {
		return fmt.Errorf("register media ref %s: %w", ref.ID, err)
	}
	return nil
}

// ErrInvalid marks a ref that can never be registered (as opposed to a
// store that failed to take it): retrying does not help.
var ErrInvalid = errors.New("invalid media ref")

func (r *Registry) prepare(ref *MediaReference) error {
	if ref.Chat == "" || ref.Kind == "" {
		return fmt.Errorf("register media ref: chat and kind are required: %w", ErrInvalid)
	}
	if ref.Channel == "" {
		ref.Channel, _, _ = strings.Cut(ref.Chat, ":")
	}
	if ref.ID == "" {
		id, err := NewID(ref.Channel)
		if err != nil {
			return err
		}
		ref.ID = id
	}
	if ref.Created.IsZero() {
		ref.Created = r.now()
	}
	if ref.Expires.IsZero() {
		ref.Expires = ref.Created.Add(r.TTL(ref.Channel))
	}
	return nil
}

const refCols = `id, channel, chat_id, message_id, sender, kind, mime, file_name, size, duration_ms, width, height, caption, private, created, expires`

func scanRef(s sqlrows.Scanner) (MediaReference, error) {
	var ref MediaReference
	var kind string
	var durMS, created, expires int64
	err := s.Scan(&ref.ID, &ref.Channel, &ref.Chat, &ref.MessageID, &ref.Sender, &kind, &ref.MIME, &ref.FileName,
		&ref.Size, &durMS, &ref.Width, &ref.Height, &ref.Caption, &ref.Private, &created, &expires)
	ref.Kind = Kind(kind)
	ref.Duration = time.Duration(durMS) * time.Millisecond
	ref.Created = time.UnixMilli(created)
	ref.Expires = time.UnixMilli(expires)
	return ref, err
}

// lookup fetches a ref without scoping; only Get, which scopes, may use
// it. Expiry is still enforced.
func (r *Registry) lookup(ctx context.Context, id string) (MediaReference, error) {
	if !ValidRefID(id) {
		return MediaReference{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	ref, err := scanRef(r.db.QueryRowContext(ctx, `SELECT `+refCols+` FROM media_refs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return MediaReference{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return MediaReference{}, fmt.Errorf("look up media ref %s: %w", id, err)
	}
	if !r.now().Before(ref.Expires) {
		return ref, fmt.Errorf("%w: %s expired at %s", ErrExpired, id, ref.Expires.UTC().Format(time.RFC3339))
	}
	return ref, nil
}

// Get fetches a ref the scope may see: registered for one of its chats and
// not expired. An expired ref in scope comes back with ErrExpired, so the
// caller can still serve bytes it has cached and say how old the ref is.
func (r *Registry) Get(ctx context.Context, scope Scope, id string) (MediaReference, error) {
	ref, err := r.lookup(ctx, id)
	if err != nil && !errors.Is(err, ErrExpired) {
		return MediaReference{}, err
	}
	// Scope first, and out of scope reads as unknown: another group must
	// learn neither that the ref exists nor whether it expired. ErrForbidden
	// is wrapped too, for the operator's log.
	if !inScope(scope, ref.Chat) {
		return MediaReference{}, fmt.Errorf("%w: %s: %w", ErrNotFound, id, ErrForbidden)
	}
	if err != nil {
		return ref, err
	}
	return ref, nil
}

func inScope(scope Scope, chat string) bool {
	for _, c := range scope.ChatIDs() {
		if c == chat {
			return true
		}
	}
	return false
}

// Filter narrows List.
type Filter struct {
	Kind  Kind // empty: any
	Limit int  // <= 0: 50
}

// List returns the scope's live refs, newest first.
func (r *Registry) List(ctx context.Context, scope Scope, f Filter) ([]MediaReference, error) {
	chats := scope.ChatIDs()
	if len(chats) == 0 {
		return nil, nil
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	args := make([]any, 0, len(chats)+3)
	for _, c := range chats {
		args = append(args, c)
	}
	q := `SELECT ` + refCols + ` FROM media_refs WHERE chat_id IN (` + sqlParams(len(chats)) + `) AND expires > ?`
	args = append(args, r.now().UnixMilli())
	if f.Kind != "" {
		q += ` AND kind = ?`
		args = append(args, string(f.Kind))
	}
	q += ` ORDER BY created DESC, rowid DESC LIMIT ?`
	args = append(args, f.Limit)
	return sqlrows.Query(ctx, r.db, "list media refs", scanRef, q, args...)
}

// Sweep deletes refs that expired before now and reports how many.
func (r *Registry) Sweep(ctx context.Context) (int64, error) {
	res, err := r.db.ExecContext(ctx, `DELETE FROM media_refs WHERE expires <= ?`, r.now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("sweep media refs: %w", err)
	}
	return res.RowsAffected()
}

// RunSweeper sweeps every interval until ctx ends. Expiry happens only
// here, never as a side effect of Register.
func (r *Registry) RunSweeper(ctx context.Context, interval time.Duration, log *slog.Logger) {
	sweepEvery(ctx, interval, log, "expired media refs", r.Sweep)
}

// sweepEvery runs sweep on a ticker until ctx ends, logging failures and
// what was removed. It is the only place anything expires.
func sweepEvery(ctx context.Context, interval time.Duration, log *slog.Logger, what string, sweep func(context.Context) (int64, error)) {
	clock.Every(ctx, interval, func() {
		n, err := sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("sweep failed", "what", what, "err", err)
		case n > 0:
			log.Debug("swept", "what", what, "count", n)
		}
	})
}

// Stats is what the chats of a scope shared and how much of it was
// fetched: the saving that lazy media buys is Posted against Downloaded.
type Stats struct {
	Refs       int   // refs registered (live or expired, until swept)
	Fetched    int   // of those, how many were ever downloaded
	Posted     int64 // bytes the chats posted, as declared
	Downloaded int64 // bytes downloaded for them, every download counted
}

// Downloaded records one download of ref id, n bytes long.
func (r *Registry) Downloaded(ctx context.Context, id string, n int64) error {
	_, err := r.db.ExecContext(ctx, `UPDATE media_refs SET downloads = downloads + 1, downloaded_bytes = downloaded_bytes + ? WHERE id = ?`, n, id)
	if err != nil {
		return fmt.Errorf("record download of %s: %w", id, err)
	}
	return nil
}

// Stats counts the refs of scope and what of them was fetched.
func (r *Registry) Stats(ctx context.Context, scope Scope) (Stats, error) {
	chats := scope.ChatIDs()
	if len(chats) == 0 {
		return Stats{}, nil
	}
	args := make([]any, len(chats))
	for i, c := range chats {
		args[i] = c
	}
	var s Stats
	err := r.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0), COUNT(NULLIF(downloads, 0)), COALESCE(SUM(downloaded_bytes), 0)
		FROM media_refs WHERE chat_id IN (`+sqlParams(len(chats))+`)`, args...).Scan(&s.Refs, &s.Posted, &s.Fetched, &s.Downloaded)
	if err != nil {
		return Stats{}, fmt.Errorf("media stats: %w", err)
	}
	return s, nil
}

// sqlParams is "?,?,?" for n values of an IN list.
func sqlParams(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// SetKind changes what a ref is called once its bytes say (a link ref is
// registered as a Document and may turn out an image or a video).
func (r *Registry) SetKind(ctx context.Context, id string, k Kind) error {
	if _, err := r.db.ExecContext(ctx, `UPDATE media_refs SET kind = ? WHERE id = ?`, string(k), id); err != nil {
		return fmt.Errorf("set kind of %s: %w", id, err)
	}
	return nil
}

// Renew lets a ref live its channel's TTL again from now: a link asked for
// again is as new as a page shared again.
func (r *Registry) Renew(ctx context.Context, id, channel string) error {
	now := r.now()
	if _, err := r.db.ExecContext(ctx, `UPDATE media_refs SET expires = ? WHERE id = ?`, now.Add(r.TTL(channel)).UnixMilli(), id); err != nil {
		return fmt.Errorf("renew %s: %w", id, err)
	}
	return nil
}

// KindOf is the kind a sniffed MIME type shows.
func KindOf(mime string) Kind {
	switch {
	case strings.HasPrefix(mime, "image/") && mime != "image/svg+xml":
		return Image
	case strings.HasPrefix(mime, "video/"):
		return Video
	case strings.HasPrefix(mime, "audio/"):
		return Audio
	}
	return Document
}
