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
	"time"
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
	return &Cache{dir: dir, db: db, ttl: ttl, now: time.Now}, nil
}

// SetClock replaces the time source (tests).
func (c *Cache) SetClock(now func() time.Time) { c.now = now }

// SetWriteFilter puts f's writer between Store and the temp file it
// writes (tests: simulate a full disk).
func (c *Cache) SetWriteFilter(f func(io.Writer) io.Writer) { c.wrap = f }

// Path is where a blob lives.
func (c *Cache) Path(sha string) string { return filepath.Join(c.dir, sha) }

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
	if fi, err := os.Stat(c.Path(e.SHA256)); err != nil || fi.Size() != e.Size {
		return Entry{}, false, nil
	}
	return e, true, nil
}

// Store streams r into the cache for ref, at most max bytes, hashing and
// sniffing on the way; memory use does not depend on the size. Past the
// cap the partial file is removed and ErrTooLarge returned.
func (c *Cache) Store(ctx context.Context, ref, declaredMIME string, r io.Reader, max int64) (Entry, error) {
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
	h := sha256.New()
	head := &prefix{max: SniffLen}
	var dst io.Writer = tmp
	if c.wrap != nil {
		dst = c.wrap(tmp)
	}
	// A failed write is the local disk's fault (often a full one), not the
	// download's; say which.
	fw := &failWriter{w: dst}
	n, err := io.Copy(io.MultiWriter(fw, h, head), ctxReader{ctx, io.LimitReader(r, max+1)})
	if err != nil {
		if fw.err != nil {
			return Entry{}, fmt.Errorf("media cache: writing the download: %w", err)
		}
		return Entry{}, fmt.Errorf("media download: %w", err)
	}
	if n > max {
		return Entry{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	if err := tmp.Sync(); err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	e := Entry{Ref: ref, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n, MIME: DecideMIME(declaredMIME, Sniff(head.buf)), Fetched: c.now()}
	if err := os.Rename(tmp.Name(), c.Path(e.SHA256)); err != nil {
		return Entry{}, fmt.Errorf("media cache: %w", err)
	}
	done = true
	_, err = c.db.ExecContext(ctx, `INSERT INTO media_cache(ref_id, sha256, size, mime, fetched) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(ref_id) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, mime = excluded.mime, fetched = excluded.fetched`,
		e.Ref, e.SHA256, e.Size, e.MIME, e.Fetched.UnixMilli())
	if err != nil {
		return Entry{}, fmt.Errorf("media cache index: %w", err)
	}
	return e, nil
}

// Sweep forgets entries fetched more than the TTL ago and deletes blobs no
// entry points at any more.
func (c *Cache) Sweep(ctx context.Context) (int, error) {
	cutoff := c.now().Add(-c.ttl).UnixMilli()
	rows, err := c.db.QueryContext(ctx, `DELETE FROM media_cache WHERE fetched <= ? RETURNING sha256`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("sweep media cache: %w", err)
	}
	var shas []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err == nil {
			shas = append(shas, s)
		}
	}
	rows.Close()
	removed := 0
	for _, s := range shas {
		var n int
		if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM media_cache WHERE sha256 = ?`, s).Scan(&n); err != nil || n > 0 {
			continue
		}
		if err := os.Remove(c.Path(s)); err == nil {
			removed++
		}
	}
	return removed, nil
}

// RunSweeper sweeps every interval until ctx ends.
func (c *Cache) RunSweeper(ctx context.Context, interval time.Duration, log *slog.Logger) {
	sweepEvery(ctx, interval, log, "cached media files", func(ctx context.Context) (int64, error) {
		n, err := c.Sweep(ctx)
		return int64(n), err
	})
}

// failWriter remembers the first write error.
type failWriter struct {
	w   io.Writer
	err error
}

func (f *failWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}

// prefix keeps the first max bytes written to it.
type prefix struct {
	buf []byte
	max int
}

func (p *prefix) Write(b []byte) (int, error) {
	if room := p.max - len(p.buf); room > 0 {
		if len(b) < room {
			room = len(b)
		}
		p.buf = append(p.buf, b[:room]...)
	}
	return len(b), nil
}

// ctxReader stops a copy when ctx ends, so a cancelled fetch does not keep
// reading a slow stream.
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
