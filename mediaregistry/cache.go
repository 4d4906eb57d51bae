package mediaregistry

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// ErrTooLarge: the stream passed the size cap; nothing was kept.
var ErrTooLarge = errors.New("media exceeds the download cap")

// Cache keeps downloaded bytes under data/media/<sha256>, content
// addressed, with an index of which ref they belong to.
type Cache struct {
	dir string
	db  *sql.DB
	ttl time.Duration
	now func() time.Time
	// wrap, when set, stands between Store and its temp file (tests: a
	// writer that fails like a full disk).
	wrap func(io.Writer) io.Writer

	// local is the cache folder as a store; store is where blobs are kept
	// for good: local itself unless UseStore named another (a bucket).
	local *LocalStore
	store ObjectStore
	// kick wakes the uploader when a blob is waiting for the store.
	kick chan struct{}
	// uploadWrap, when set, stands between a cached file and the store
	// (tests: a transfer cut in the middle).
	uploadWrap func(io.Reader) io.Reader
	// materialising shares one transfer from the store per blob.
	matMu         sync.Mutex
	materialising map[string]*matFlight
}

type matFlight struct {
	done chan struct{}
	err  error
}

// Entry is one cached ref.
type Entry struct {
	Ref     string
	SHA256  string
	Size    int64
	MIME    string // sniffed and reconciled with the declared type
	Fetched time.Time
}

// OpenCache prepares dir and removes partial files a crash left in its
// tmp/ folder: a download either completed (renamed into place) or never
// happened.
func OpenCache(dir string, db *sql.DB, ttl time.Duration) (*Cache, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o750); err != nil {
		return nil, fmt.Errorf("media cache: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		return nil, fmt.Errorf("media cache: %w", err)
	}
	for _, e := range entries {
		os.Remove(filepath.Join(dir, "tmp", e.Name()))
	}
	return NewCache(dir, db, ttl), nil
}

// NewCache is a cache over dir without touching it: for a second process
// (`botd media`) beside a running daemon, whose downloads in tmp/ must
// stay.
func NewCache(dir string, db *sql.DB, ttl time.Duration) *Cache {
	local := NewLocalStore(dir)
	return &Cache{dir: dir, db: db, ttl: ttl, now: time.Now, local: local, store: local,
		kick: make(chan struct{}, 1), materialising: map[string]*matFlight{}}
}

// UseStore keeps blobs in s (an S3 bucket) from now on: new downloads are
// uploaded to it in the background, and a blob whose local copy was
// evicted is fetched back from it instead of from the channel.
func (c *Cache) UseStore(s ObjectStore) {
	if s == nil {
		s = c.local
	}
	c.store = s
}

// ObjectStore is where blobs are kept for good (the local folder by
// default).
func (c *Cache) ObjectStore() ObjectStore { return c.store }

// Local is the cache folder as an ObjectStore.
func (c *Cache) Local() *LocalStore { return c.local }

// remote reports a store other than the cache folder.
func (c *Cache) remote() bool { return c.store != ObjectStore(c.local) }

// Remote reports whether blobs are kept in a store other than the cache
// folder (a bucket), so an evicted local copy can be brought back.
func (c *Cache) Remote() bool { return c.remote() }

// Drop forgets which bytes ref has, so its next fetch downloads it again
// (the store lost them, or cannot be reached).
func (c *Cache) Drop(ctx context.Context, ref string) error {
	if _, err := c.db.ExecContext(ctx, `DELETE FROM media_cache WHERE ref_id = ?`, ref); err != nil {
		return fmt.Errorf("media cache: drop %s: %w", ref, err)
	}
	return nil
}

// SetUploadFilter puts f's reader between a cached file and the store it
// is uploaded to (tests: cut a transfer in the middle).
func (c *Cache) SetUploadFilter(f func(io.Reader) io.Reader) { c.uploadWrap = f }

// SetClock replaces the time source (tests).
func (c *Cache) SetClock(now func() time.Time) { c.now = now }

// SetWriteFilter puts f's writer between Store and the temp file it
// writes (tests: simulate a full disk).
func (c *Cache) SetWriteFilter(f func(io.Writer) io.Writer) { c.wrap = f }

// Path is where a blob lives.
func (c *Cache) Path(sha string) string { return filepath.Join(c.dir, sha) }

// DB is the database the cache indexes its blobs in.
func (c *Cache) DB() *sql.DB { return c.db }

// Dir is the cache folder; a blob's name in it is its sha256.
func (c *Cache) Dir() string { return c.dir }

// OpenRoot opens the cache folder, for reading and evicting blobs by name.
func (c *Cache) OpenRoot() (*os.Root, error) { return os.OpenRoot(c.dir) }

// InProgress reports a cache file (by its name in Dir) still being
// written: a download in tmp/.
func (c *Cache) InProgress(rel string) bool { return strings.HasPrefix(rel, "tmp/") }

// ErrPendingUpload: the blob's only copy is the local one, and it is still
// waiting to be uploaded to the store; evicting it would lose it.
var ErrPendingUpload = errors.New("media blob not yet uploaded to the store")

// Forget runs before the local copy of blob sha is evicted. When the store
// keeps the blob elsewhere (a bucket), the index stays: the next fetch
// brings the bytes back from there. Otherwise every index row pointing at
// it is dropped, so later lookups miss instead of finding nothing — except
// for a blob still waiting for its upload, which is kept (ErrPendingUpload).
func (c *Cache) Forget(ctx context.Context, sha string) error {
	if c.remote() {
		var kept string
		err := c.db.QueryRowContext(ctx, `SELECT kept_in FROM media_blobs WHERE sha256 = ?`, sha).Scan(&kept)
		switch {
		case err == nil && kept == c.store.ID():
			return nil
		case err == nil:
			return fmt.Errorf("media cache: forget %s: %w", sha, ErrPendingUpload)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("media cache: forget %s: %w", sha, err)
		}
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("media cache: forget %s: %w", sha, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM media_cache WHERE sha256 = ?`, sha); err != nil {
		return fmt.Errorf("media cache: forget %s: %w", sha, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM media_blobs WHERE sha256 = ?`, sha); err != nil {
		return fmt.Errorf("media cache: forget %s: %w", sha, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("media cache: forget %s: %w", sha, err)
	}
	return nil
}

// Lookup finds a ref's cached bytes; ok is false when they were never
// fetched, swept, or the file went missing.
func (c *Cache) Lookup(ctx context.Context, ref string) (Entry, bool, error) {
	var e Entry
	var fetched int64
	err := c.db.QueryRowContext(ctx, `SELECT ref_id, sha256, size, mime, fetched FROM media_cache WHERE ref_id = ?`, ref).
		Scan(&e.Ref, &e.SHA256, &e.Size, &e.MIME, &fetched)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("media cache lookup: %w", err)
	}
	e.Fetched = time.UnixMilli(fetched)
	if fi, err := os.Stat(c.Path(e.SHA256)); err == nil && fi.Size() == e.Size {
		return e, true, nil
	}
	// Not on this disk: still a hit when the store keeps it (a restart on
	// a fresh disk, an evicted copy); Materialise brings it back.
	if c.remote() {
		var kept string
		err := c.db.QueryRowContext(ctx, `SELECT kept_in FROM media_blobs WHERE sha256 = ?`, e.SHA256).Scan(&kept)
		if err == nil && kept == c.store.ID() {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// OnDisk reports whether the blob's local copy is in the cache folder.
func (c *Cache) OnDisk(e Entry) bool {
	fi, err := os.Stat(c.Path(e.SHA256))
	return err == nil && fi.Size() == e.Size
}

// Store streams r into the cache for ref, at most max bytes, hashing and
// sniffing on the way; memory use does not depend on the size. Past the
// cap the partial file is removed and ErrTooLarge returned.
func (c *Cache) Store(ctx context.Context, ref, declaredMIME string, r io.Reader, max int64) (Entry, error) {
	return c.commit(ctx, ref, declaredMIME, max, func(f *capFile) (string, error) {
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, r}); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	})
}

// StoreFile lets fill write ref's bytes straight into the cache's temp file
// (a channel that must seek, like WhatsApp decrypting in place), then
// hashes and sniffs what it left there. The cap holds for every write.
func (c *Cache) StoreFile(ctx context.Context, ref, declaredMIME string, max int64, fill func(File) error) (Entry, error) {
	return c.commit(ctx, ref, declaredMIME, max, func(f *capFile) (string, error) {
		if err := fill(f); err != nil {
			return "", err
		}
		if _, err := f.f.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		h := sha256.New()
		if _, err := io.Copy(h, f.f); err != nil {
			return "", fmt.Errorf("reading back the download: %w", err)
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	})
}

// commit runs fill over a capped temp file and, when it succeeds, moves
// the file to its content address and indexes it. Whatever fails, the temp
// file is gone afterwards: a download is kept whole or not at all.
func (c *Cache) commit(ctx context.Context, ref, declaredMIME string, max int64, fill func(*capFile) (sha string, err error)) (Entry, error) {
	tmp, err := os.CreateTemp(filepath.Join(c.dir, "tmp"), "dl-*")
	if err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	f := &capFile{f: tmp, w: tmp, max: max}
	if c.wrap != nil {
		f.w = c.wrap(tmp)
	}
	sha, err := fill(f)
	switch {
	// Checked before err: a channel library may wrap the write error
	// without %w, and the cap must still be reported as the cap.
	case f.over:
		return Entry{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	case f.err != nil:
		// A failed write is the local disk's fault (often a full one),
		// not the download's; say which.
		return Entry{}, fmt.Errorf("media cache: writing the download: %w", f.err)
	case err != nil:
		return Entry{}, fmt.Errorf("media download: %w", err)
	}
	fi, err := tmp.Stat()
	if err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	// Sniffed from the file rather than the stream's head: a zip is told
	// apart from the documents that are zips by its directory at the end.
	sniffed, err := SniffAt(tmp, fi.Size())
	if err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	e := Entry{Ref: ref, SHA256: sha, Size: fi.Size(), MIME: DecideMIME(declaredMIME, sniffed), Fetched: c.now()}
	if err := os.Rename(tmp.Name(), c.Path(e.SHA256)); err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	done = true
	if err := c.index(ctx, e); err != nil {
		return Entry{}, err
	}
	if c.remote() {
		c.Kick()
	}
	return e, nil
}

// index records that ref's bytes are blob e.SHA256, and the blob itself
// (with its metadata, and as not yet kept by any store but this folder),
// in one transaction: a sweep never sees a blob without its ref.
func (c *Cache) index(ctx context.Context, e Entry) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("media cache index: %w", err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO media_cache(ref_id, sha256, size, mime, fetched) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(ref_id) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, mime = excluded.mime, fetched = excluded.fetched`,
		e.Ref, e.SHA256, e.Size, e.MIME, e.Fetched.UnixMilli())
	if err != nil {
		return fmt.Errorf("media cache index: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO media_blobs(sha256, size, mime, name, created)
		VALUES (?, ?, ?, COALESCE((SELECT file_name FROM media_refs WHERE id = ?), ''), ?)
		ON CONFLICT(sha256) DO NOTHING`, e.SHA256, e.Size, e.MIME, e.Ref, e.Fetched.UnixMilli())
	if err != nil {
		return fmt.Errorf("media cache index: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("media cache index: %w", err)
	}
	return nil
}

// Sweep forgets entries fetched more than the TTL ago, then deletes the
// blobs no entry points at any more: the local copy and, when a bucket
// keeps it, the object. A blob whose object could not be deleted keeps its
// row and is tried again by the next sweep.
func (c *Cache) Sweep(ctx context.Context) (int, error) {
	cutoff := c.now().Add(-c.ttl).UnixMilli()
	if _, err := c.db.ExecContext(ctx, `DELETE FROM media_cache WHERE fetched <= ?`, cutoff); err != nil {
		return 0, fmt.Errorf("sweep media cache: %w", err)
	}
	rows, err := c.db.QueryContext(ctx, `SELECT sha256, kept_in FROM media_blobs b
		WHERE NOT EXISTS (SELECT 1 FROM media_cache c WHERE c.sha256 = b.sha256) LIMIT 1000`)
	if err != nil {
		return 0, fmt.Errorf("sweep media cache: %w", err)
	}
	type orphan struct{ sha, kept string }
	var orphans []orphan
	for rows.Next() {
		var o orphan
		if err := rows.Scan(&o.sha, &o.kept); err == nil {
			orphans = append(orphans, o)
		}
	}
	rows.Close()
	removed := 0
	var firstErr error
	for _, o := range orphans {
		var n int
		if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM media_cache WHERE sha256 = ?`, o.sha).Scan(&n); err != nil || n > 0 {
			continue
		}
		if o.kept != "" && c.remote() && o.kept == c.store.ID() {
			if err := c.store.Delete(ctx, o.sha); err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("sweep media cache: deleting %s from the store: %w", o.sha, err)
				}
				continue
			}
		}
		if err := os.Remove(c.Path(o.sha)); err == nil {
			removed++
		}
		c.db.ExecContext(ctx, `DELETE FROM media_blobs WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM media_cache WHERE sha256 = ?)`, o.sha, o.sha)
	}
	return removed, firstErr
}

// RunSweeper sweeps every interval until ctx ends.
func (c *Cache) RunSweeper(ctx context.Context, interval time.Duration, log *slog.Logger) {
	sweepEvery(ctx, interval, log, "cached media files", func(ctx context.Context) (int64, error) {
		n, err := c.Sweep(ctx)
		return int64(n), err
	})
}

// capFile is the one place the download cap is enforced: every write,
// positioned or not, fails once it would take the file past max, so
// neither a lying network nor a channel that writes in place can fill the
// disk. It also remembers the first error of the local file, to tell a
// full disk from a failed download.
type capFile struct {
	f    *os.File
	w    io.Writer // f, or a test filter over it
	max  int64
	pos  int64 // offset of Write, tracked to avoid a seek per write
	over bool  // a write hit the cap
	err  error // first write error of the local file
}

var _ File = (*capFile)(nil)

func (c *capFile) tooLarge() error {
	c.over = true
	return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, c.max)
}

func (c *capFile) fail(err error) error {
	if err != nil && c.err == nil {
		c.err = err
	}
	return err
}

func (c *capFile) Write(p []byte) (int, error) {
	if c.pos+int64(len(p)) > c.max {
		return 0, c.tooLarge()
	}
	n, err := c.w.Write(p)
	c.pos += int64(n)
	return n, c.fail(err)
}

func (c *capFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > c.max {
		return 0, c.tooLarge()
	}
	n, err := c.f.WriteAt(p, off)
	return n, c.fail(err)
}

func (c *capFile) Truncate(size int64) error {
	if size > c.max {
		return c.tooLarge()
	}
	return c.fail(c.f.Truncate(size))
}

func (c *capFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.pos += int64(n)
	return n, err
}

func (c *capFile) Seek(off int64, whence int) (int64, error) {
	n, err := c.f.Seek(off, whence)
	if err == nil {
		c.pos = n
	}
	return n, err
}

func (c *capFile) ReadAt(p []byte, off int64) (int, error) { return c.f.ReadAt(p, off) }
func (c *capFile) Stat() (os.FileInfo, error)              { return c.f.Stat() }

// ContextReader fails reads once ctx ends: a cancelled fetch stops
// reading a slow stream, a cancelled decode stops decoding.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// OnlyUsedBy lists the blobs that hold bytes of the scope's refs and of no
// other chat's: what pruning a group may remove from the cache.
func (c *Cache) OnlyUsedBy(ctx context.Context, scope Scope) ([]string, error) {
	chats := scope.ChatIDs()
	if len(chats) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2*len(chats))
	for range 2 {
		for _, ch := range chats {
			args = append(args, ch)
		}
	}
	in := sqlParams(len(chats))
	return sqlrows.Query(ctx, c.db, "media cache: blobs of a group", func(r sqlrows.Scanner) (sha string, err error) {
		return sha, r.Scan(&sha)
	}, `SELECT DISTINCT c.sha256 FROM media_cache c JOIN media_refs r ON r.id = c.ref_id
		WHERE r.chat_id IN (`+in+`) AND NOT EXISTS (
			SELECT 1 FROM media_cache c2 LEFT JOIN media_refs r2 ON r2.id = c2.ref_id
			WHERE c2.sha256 = c.sha256 AND (r2.chat_id IS NULL OR r2.chat_id NOT IN (`+in+`)))`, args...)
}
