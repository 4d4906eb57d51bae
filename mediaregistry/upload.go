package mediaregistry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/sqlrows"
	"github.com/botd-dev/botd/internal/textclip"
)

// Upload retry: the first retry soon (a store restarting), then backing
// off so an unreachable store costs little, never more than ten minutes
// apart.
const (
	uploadFirstRetry = 5 * time.Second
	uploadMaxRetry   = 10 * time.Minute
	// uploadBatch bounds the uploads one pass reads from the queue.
	uploadBatch = 32
)

// uploadBackoff is the wait after the n-th failed attempt (n ≥ 1).
func uploadBackoff(n int) time.Duration {
	return backoff.Schedule{Initial: uploadFirstRetry, Factor: 3, Max: uploadMaxRetry}.Wait(n - 1)
}

// Pending is a blob the store does not keep yet.
type Pending struct {
	SHA256    string
	Size      int64
	Attempts  int
	NextTry   time.Time
	LastError string
}

// Kick wakes the uploader: a blob is waiting, or the store is back.
func (c *Cache) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// PendingUploads lists the blobs waiting for the store, oldest first.
// With the local store nothing ever waits.
func (c *Cache) PendingUploads(ctx context.Context) ([]Pending, error) {
	if !c.remote() {
		return nil, nil
	}
	return sqlrows.Query(ctx, c.db, "pending uploads", func(r sqlrows.Scanner) (Pending, error) {
		var p Pending
		var next int64
		err := r.Scan(&p.SHA256, &p.Size, &p.Attempts, &next, &p.LastError)
		p.NextTry = time.UnixMilli(next)
		return p, err
	}, `SELECT sha256, size, attempts, next_try, last_error FROM media_blobs
		WHERE kept_in != ? ORDER BY created, sha256`, c.store.ID())
}

// RunUploader uploads waiting blobs until ctx ends: at start (the queue
// survives restarts), when Kick says one arrived, and when the next retry
// is due.
func (c *Cache) RunUploader(ctx context.Context, log *slog.Logger) {
	if !c.remote() {
		return
	}
	for {
		next, err := c.UploadPending(ctx, log)
		if err != nil && ctx.Err() == nil {
			log.Warn("media uploads: reading the queue failed", "err", err)
			next = c.now().Add(uploadFirstRetry)
		}
		wait := clock.Forever // nothing waits: only a Kick wakes it
		if !next.IsZero() {
			wait = next.Sub(c.now())
		}
		if !clock.Wait(ctx, clock.Real{}, wait, c.kick) {
			return
		}
	}
}

// UploadPending uploads every blob whose attempt is due and returns when
// the next one will be (zero: none waits). A failure is recorded on the
// blob with the time of its next attempt; the fetch that brought the bytes
// succeeded long before, from the local copy.
func (c *Cache) UploadPending(ctx context.Context, log *slog.Logger) (time.Time, error) {
	if !c.remote() {
		return time.Time{}, nil
	}
	id := c.store.ID()
	for {
		due, err := c.dueUploads(ctx, id)
		if err != nil || len(due) == 0 {
			if err != nil {
				return time.Time{}, err
			}
			break
		}
		for _, info := range due {
			if ctx.Err() != nil {
				return time.Time{}, ctx.Err()
			}
			c.uploadOne(ctx, info, log)
		}
	}
	var next sql.NullInt64
	if err := c.db.QueryRowContext(ctx, `SELECT MIN(next_try) FROM media_blobs WHERE kept_in != ?`, id).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("media uploads: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return time.UnixMilli(next.Int64), nil
}

func (c *Cache) dueUploads(ctx context.Context, id string) ([]ObjectInfo, error) {
	return sqlrows.Query(ctx, c.db, "media uploads", func(r sqlrows.Scanner) (i ObjectInfo, err error) {
		return i, r.Scan(&i.SHA256, &i.Size, &i.MIME, &i.Name)
	}, `SELECT sha256, size, mime, name FROM media_blobs
		WHERE kept_in != ? AND next_try <= ? ORDER BY next_try, created LIMIT ?`, id, c.now().UnixMilli(), uploadBatch)
}

// uploadOne copies one cached blob to the store and records the outcome.
func (c *Cache) uploadOne(ctx context.Context, info ObjectInfo, log *slog.Logger) {
	err := c.upload(ctx, info)
	if errors.Is(err, ErrNoObject) {
		// The local copy is gone (removed by hand: eviction keeps pending
		// blobs) and no store has it: its refs download again when asked.
		log.Warn("media upload: the local copy is gone; its refs will download again", "sha256", info.SHA256)
		c.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM media_cache WHERE sha256 = ?`, info.SHA256)
		c.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM media_blobs WHERE sha256 = ?`, info.SHA256)
		return
	}
	if err != nil {
		var attempts int
		c.db.QueryRowContext(ctx, `SELECT attempts FROM media_blobs WHERE sha256 = ?`, info.SHA256).Scan(&attempts)
		attempts++
		next := c.now().Add(uploadBackoff(attempts))
		log.Warn("media upload failed; the local copy is kept and the upload retried", "sha256", info.SHA256,
			"bytes", info.Size, "attempt", attempts, "retry_at", next, "err", err)
		c.db.ExecContext(context.WithoutCancel(ctx), `UPDATE media_blobs SET attempts = ?, next_try = ?, last_error = ? WHERE sha256 = ?`,
			attempts, next.UnixMilli(), textclip.OneLine(err.Error(), 500), info.SHA256)
		return
	}
	c.db.ExecContext(context.WithoutCancel(ctx), `UPDATE media_blobs SET kept_in = ?, attempts = 0, next_try = 0, last_error = '' WHERE sha256 = ?`,
		c.store.ID(), info.SHA256)
	log.Debug("media uploaded", "sha256", info.SHA256, "bytes", info.Size, "store", c.store.ID())
}

// upload streams the local copy of info to the store.
func (c *Cache) upload(ctx context.Context, info ObjectInfo) error {
	f, _, err := c.local.Get(ctx, info.SHA256)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if c.uploadWrap != nil {
		r = c.uploadWrap(f)
	}
	return c.store.Put(ctx, info, r)
}

// Materialise brings blob e back from the store into the cache folder,
// once even when several fetches ask at the same time. The bytes are
// streamed into a temp file, checked against their size and digest, and
// renamed into place. With the local store there is nowhere to bring them
// from: ErrNoObject.
func (c *Cache) Materialise(ctx context.Context, e Entry) error {
	if !c.remote() {
		return fmt.Errorf("media cache: %s: %w", e.SHA256, ErrNoObject)
	}
	c.matMu.Lock()
	f, joined := c.materialising[e.SHA256]
	if !joined {
		f = &matFlight{done: make(chan struct{})}
		c.materialising[e.SHA256] = f
	}
	c.matMu.Unlock()
	if !joined {
		f.err = c.copyFrom(ctx, c.store, ObjectInfo{SHA256: e.SHA256, Size: e.Size, MIME: e.MIME})
		c.matMu.Lock()
		delete(c.materialising, e.SHA256)
		c.matMu.Unlock()
		close(f.done)
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// copyFrom streams one object of src into the cache folder.
func (c *Cache) copyFrom(ctx context.Context, src ObjectStore, info ObjectInfo) error {
	r, _, err := src.Get(ctx, info.SHA256)
	if err != nil {
		return err
	}
	defer r.Close()
	return c.local.Put(ctx, info, r)
}

// MigrateResult counts what a migration moved.
type MigrateResult struct {
	Blobs   int   // blobs now in the target
	Copied  int   // of those, copied by this run
	Bytes   int64 // bytes copied
	Missing int   // blobs neither copy had; their refs download again
	Failed  int   // blobs that could not be copied; run it again
	Err     error // the first failure
}

// MigrateToStore copies every cached blob the store does not keep yet into
// it (an upload of the whole queue, now, without waiting for retries) and
// records it as kept there. A running daemon keeps serving meanwhile: its
// local copies stay, and a blob it fetches during the run is uploaded by
// it or by the next run. progress, when set, hears of each blob.
func (c *Cache) MigrateToStore(ctx context.Context, progress func(ObjectInfo, error)) (MigrateResult, error) {
	if !c.remote() {
		return MigrateResult{}, errors.New("media migrate: no object store configured (media.store)")
	}
	id := c.store.ID()
	return c.migrate(ctx, progress, func(b blobRow) bool { return b.kept == id },
		func(info ObjectInfo) error { return c.upload(ctx, info) },
		func(info ObjectInfo) error {
			_, err := c.db.ExecContext(ctx, `UPDATE media_blobs SET kept_in = ?, attempts = 0, next_try = 0, last_error = '' WHERE sha256 = ?`,
				id, info.SHA256)
			if err != nil {
				return fmt.Errorf("media migrate: %w", err)
			}
			return nil
		})
}

// count adds one blob's copy to r and returns what its progress report
// says: nil for a copy made, or for an object the source no longer has
// (counted as missing), else the error.
func (r *MigrateResult) count(info ObjectInfo, err error) error {
	switch {
	case errors.Is(err, ErrNoObject):
		r.Missing++
		return nil
	case err != nil:
		r.Failed++
		if r.Err == nil {
			r.Err = err
		}
		return err
	}
	r.Blobs++
	r.Copied++
	r.Bytes += info.Size
	return nil
}

// MigrateToLocal copies every blob the store keeps and the cache folder
// lacks into the folder, so that the local store can take over. The
// records stay as they are until the daemon restarts with the local store.
func (c *Cache) MigrateToLocal(ctx context.Context, progress func(ObjectInfo, error)) (MigrateResult, error) {
	if !c.remote() {
		return MigrateResult{}, errors.New("media migrate: no object store configured (media.store) to copy from")
	}
	return c.migrate(ctx, progress, func(b blobRow) bool {
		_, err := c.local.Stat(ctx, b.info.SHA256)
		return err == nil
	}, func(info ObjectInfo) error { return c.copyFrom(ctx, c.store, info) }, nil)
}

// migrate is both migrations' walk over every blob some ref points at: a
// blob that has says is there already is counted, any other is copied with
// copyOne and, once copied, recorded with record (nil: nothing to record).
// A failed copy is counted and the walk goes on; a failed record stops it,
// since the database is then what is failing.
func (c *Cache) migrate(ctx context.Context, progress func(ObjectInfo, error), has func(blobRow) bool,
	copyOne, record func(ObjectInfo) error) (MigrateResult, error) {
	var res MigrateResult
	infos, err := c.blobs(ctx)
	if err != nil {
		return res, err
	}
	for _, b := range infos {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if has(b) {
			res.Blobs++
			continue
		}
		err := copyOne(b.info)
		if err == nil && record != nil {
			if err := record(b.info); err != nil {
				return res, err
			}
		}
		err = res.count(b.info, err)
		if progress != nil {
			progress(b.info, err)
		}
	}
	return res, nil
}

type blobRow struct {
	info ObjectInfo
	kept string
}

// blobs lists every blob some ref still points at.
func (c *Cache) blobs(ctx context.Context) ([]blobRow, error) {
	return sqlrows.Query(ctx, c.db, "media blobs", func(r sqlrows.Scanner) (b blobRow, err error) {
		return b, r.Scan(&b.info.SHA256, &b.info.Size, &b.info.MIME, &b.info.Name, &b.kept)
	}, `SELECT sha256, size, mime, name, kept_in FROM media_blobs b
		WHERE EXISTS (SELECT 1 FROM media_cache c WHERE c.sha256 = b.sha256) ORDER BY created, sha256`)
}

// LocalBytes sums the blobs some ref points at: what MigrateToLocal would
// need on disk.
func (c *Cache) LocalBytes(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	err := c.db.QueryRowContext(ctx, `SELECT SUM(size) FROM media_blobs b
		WHERE EXISTS (SELECT 1 FROM media_cache c WHERE c.sha256 = b.sha256)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("media blobs: %w", err)
	}
	return n.Int64, nil
}
