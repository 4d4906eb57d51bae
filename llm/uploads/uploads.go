// Package uploads remembers which media files went up to which provider's
// files API, so the same bytes are uploaded once per provider, uploaded
// again when the provider's copy expires, and deleted there once botd has
// not referred to them for a while.
package uploads

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/botd-dev/botd/keylock"
	"github.com/botd-dev/botd/llm"
)

// Defaults for [Options].
const (
	DefaultUploadOver = 256 << 10
	// DefaultKeep outlasts a batch (up to 24 h), which may refer to an
	// upload made when it was submitted.
	DefaultKeep = 48 * time.Hour
	// expiryMargin is how long before the provider's expiry a file is
	// treated as gone: a run may last minutes, and a reference to a file
	// that expires mid-run fails the whole request.
	expiryMargin = time.Hour
)

// Options configure a Store.
type Options struct {
	// UploadOver is the size above which a media file is uploaded rather
	// than sent inline (default DefaultUploadOver).
	UploadOver int64
	// Keep is how long an upload botd no longer refers to stays at the
	// provider before Sweep deletes it (default DefaultKeep).
	Keep time.Duration
	Now  func() time.Time
	Log  *slog.Logger
}

// Store implements llm.Files over the llm_uploads table.
type Store struct {
	db *sql.DB
	o  Options

	locks keylock.Locks
	mu    sync.Mutex
	// sums remembers digests by file, so that the turns of a run, which
	// each send the same media again, hash each file once.
	sums map[fileID]string
	// none holds providers found to have no files API (an OpenAI-compatible
	// server without /files): asking again on every request only slows it.
	none map[string]bool
}

var _ llm.Files = (*Store)(nil)

// New returns a Store on db (migrated by the store package). It does no I/O.
func New(db *sql.DB, o Options) *Store {
	if o.UploadOver <= 0 {
		o.UploadOver = DefaultUploadOver
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Store{db: db, o: o, none: map[string]bool{}, sums: map[fileID]string{}}
}

// Remote returns the provider's copy of m, uploading it when there is
// none or it is about to expire. Small files, types the provider cannot
// refer to, and any failure give ok false: the adapter sends the bytes
// inline, as it would without a files API.
func (s *Store) Remote(ctx context.Context, api llm.FilesAPI, m *llm.Media) (rf llm.RemoteFile, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			s.o.Log.Error("provider file upload panicked; sending inline", "provider", api.Name(), "panic", p, "stack", string(debug.Stack()))
			rf, ok = llm.RemoteFile{}, false
		}
	}()
	if m == nil || m.Path == "" {
		return llm.RemoteFile{}, false
	}
	f, err := os.Open(m.Path)
	if err != nil {
		return llm.RemoteFile{}, false // the adapter's own read reports it
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= s.o.UploadOver {
		return llm.RemoteFile{}, false
	}
	s.mu.Lock()
	none := s.none[api.Name()]
	s.mu.Unlock()
	if none {
		return llm.RemoteFile{}, false
	}
	if usable, why := api.FileUsable(m.MIME, fi.Size()); !usable {
		s.o.Log.Debug("media sent inline", "provider", api.Name(), "mime", m.MIME, "bytes", fi.Size(), "reason", why)
		return llm.RemoteFile{}, false
	}
	sum, err := s.digest(f, m.Path, fi)
	if err != nil {
		return llm.RemoteFile{}, false
	}
	key := api.Name() + "\x00" + sum + "\x00" + m.MIME

	unlock := s.locks.Lock(key)
	defer unlock()
	now := s.o.Now()
	rf, found, err := s.lookup(ctx, api.Name(), sum, m.MIME, now)
	if err != nil {
		s.o.Log.Warn("provider uploads: lookup failed; sending inline", "provider", api.Name(), "err", err)
		return llm.RemoteFile{}, false
	}
	if found {
		return rf, true
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return llm.RemoteFile{}, false
	}
	start := time.Now()
	rf, err = api.UploadFile(ctx, llm.FileUpload{Name: filepath.Base(m.Path), MIME: m.MIME, Size: fi.Size(), Body: io.LimitReader(f, fi.Size())})
	if err != nil {
		level := slog.LevelWarn
		if ctx.Err() != nil {
			level = slog.LevelDebug
		}
		if noFilesAPI(err) {
			s.mu.Lock()
			s.none[api.Name()] = true
			s.mu.Unlock()
			s.o.Log.Warn("provider has no files API; media go inline until restart (set llm.files.upload: false to stop trying)", "provider", api.Name(), "err", err)
			return llm.RemoteFile{}, false
		}
		s.o.Log.Log(ctx, level, "provider file upload failed; sending inline", "provider", api.Name(), "mime", m.MIME, "bytes", fi.Size(), "err", err)
		return llm.RemoteFile{}, false
	}
	s.o.Log.Info("uploaded media to provider", "provider", api.Name(), "file", rf.ID, "sha256", sum[:12], "mime", m.MIME, "bytes", fi.Size(), "took", time.Since(start))
	if _, err := s.db.ExecContext(context.WithoutCancel(ctx), `INSERT INTO llm_uploads(provider, sha256, mime, file_id, uri, size, uploaded_at, expires_at, last_used)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(provider, sha256, mime) DO UPDATE SET file_id = excluded.file_id, uri = excluded.uri, size = excluded.size,
			uploaded_at = excluded.uploaded_at, expires_at = excluded.expires_at, last_used = excluded.last_used`,
		api.Name(), sum, m.MIME, rf.ID, rf.URI, fi.Size(), now.Unix(), unix(rf.ExpiresAt), now.Unix()); err != nil {
		// The file is usable now; it is only not remembered, so a later run
		// uploads it again and the sweep cannot delete this copy.
		s.o.Log.Warn("provider uploads: record failed", "provider", api.Name(), "file", rf.ID, "err", err)
	}
	return rf, true
}

// lookup returns a live upload and marks it used. An expired one is
// dropped from the table: the provider no longer has it.
func (s *Store) lookup(ctx context.Context, provider, sum, mime string, now time.Time) (llm.RemoteFile, bool, error) {
	var rf llm.RemoteFile
	var exp int64
	err := s.db.QueryRowContext(ctx, `SELECT file_id, uri, expires_at FROM llm_uploads WHERE provider = ? AND sha256 = ? AND mime = ?`,
		provider, sum, mime).Scan(&rf.ID, &rf.URI, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return rf, false, nil
	}
	if err != nil {
		return rf, false, err
	}
	if exp != 0 {
		rf.ExpiresAt = time.Unix(exp, 0)
		if !now.Add(expiryMargin).Before(rf.ExpiresAt) {
			s.o.Log.Info("provider file expired; uploading again", "provider", provider, "file", rf.ID, "expired", rf.ExpiresAt)
			_, err := s.db.ExecContext(ctx, `DELETE FROM llm_uploads WHERE provider = ? AND sha256 = ? AND mime = ?`, provider, sum, mime)
			return llm.RemoteFile{}, false, err
		}
	}
	_, err = s.db.ExecContext(ctx, `UPDATE llm_uploads SET last_used = ? WHERE provider = ? AND sha256 = ? AND mime = ?`, now.Unix(), provider, sum, mime)
	return rf, true, err
}

// fileID is a file as it was when hashed: a rewrite changes its size or
// time.
type fileID struct {
	path string
	size int64
	mod  time.Time
}

// maxSums bounds the digest memo; past it the memo starts over.
const maxSums = 4096

// digest is the sha256 of f (at path, stat fi), hashed once per version.
func (s *Store) digest(f *os.File, path string, fi os.FileInfo) (string, error) {
	id := fileID{path, fi.Size(), fi.ModTime()}
	s.mu.Lock()
	sum, ok := s.sums[id]
	s.mu.Unlock()
	if ok {
		return sum, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum = hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	if len(s.sums) >= maxSums {
		s.sums = map[fileID]string{}
	}
	s.sums[id] = sum
	s.mu.Unlock()
	return sum, nil
}

// SweepResult says what a Sweep did.
type SweepResult struct {
	Deleted, Expired, Failed int
}

// Sweep deletes at the provider every upload unused for Keep and forgets
// the expired ones. apis are the configured adapters by provider name; the
// uploads of a provider no longer configured are forgotten (its key may be
// gone) and logged. A failed delete is kept to try again next time.
func (s *Store) Sweep(ctx context.Context, apis map[string]llm.FilesAPI) (SweepResult, error) {
	now := s.o.Now()
	rows, err := s.db.QueryContext(ctx, `SELECT provider, sha256, mime, file_id, uri, expires_at FROM llm_uploads
		WHERE last_used < ? OR (expires_at != 0 AND expires_at <= ?)`, now.Add(-s.o.Keep).Unix(), now.Unix())
	if err != nil {
		return SweepResult{}, fmt.Errorf("provider uploads: %w", err)
	}
	type row struct {
		provider, sum, mime string
		rf                  llm.RemoteFile
		exp                 int64
	}
	var due []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.provider, &r.sum, &r.mime, &r.rf.ID, &r.rf.URI, &r.exp); err != nil {
			rows.Close()
			return SweepResult{}, fmt.Errorf("provider uploads: %w", err)
		}
		due = append(due, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return SweepResult{}, fmt.Errorf("provider uploads: %w", err)
	}
	var res SweepResult
	for _, r := range due {
		// Hold the key so a run cannot pick the row up while it goes.
		unlock := s.locks.Lock(r.provider + "\x00" + r.sum + "\x00" + r.mime)
		err := s.sweepOne(ctx, apis, r.provider, r.sum, r.mime, r.rf, r.exp, now, &res)
		unlock()
		if err != nil {
			return res, err
		}
	}
	if res.Deleted+res.Expired+res.Failed > 0 {
		s.o.Log.Info("provider uploads swept", "deleted", res.Deleted, "expired", res.Expired, "failed", res.Failed)
	}
	return res, nil
}

func (s *Store) sweepOne(ctx context.Context, apis map[string]llm.FilesAPI, provider, sum, mime string, rf llm.RemoteFile, exp int64, now time.Time, res *SweepResult) error {
	// Re-read under the lock: a run may have used it since the query.
	var lastUsed int64
	err := s.db.QueryRowContext(ctx, `SELECT last_used FROM llm_uploads WHERE provider = ? AND sha256 = ? AND mime = ? AND file_id = ?`,
		provider, sum, mime, rf.ID).Scan(&lastUsed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("provider uploads: %w", err)
	}
	expired := exp != 0 && exp <= now.Unix()
	if !expired && lastUsed >= now.Add(-s.o.Keep).Unix() {
		return nil
	}
	switch api := apis[provider]; {
	case expired:
		res.Expired++
	case api == nil:
		s.o.Log.Warn("provider uploads: provider no longer configured; forgetting its file without deleting it", "provider", provider, "file", rf.ID)
		res.Expired++
	default:
		if err := api.DeleteFile(ctx, rf); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.o.Log.Warn("provider uploads: delete failed; will retry", "provider", provider, "file", rf.ID, "err", err)
			res.Failed++
			return nil
		}
		res.Deleted++
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM llm_uploads WHERE provider = ? AND sha256 = ? AND mime = ? AND file_id = ?`, provider, sum, mime, rf.ID); err != nil {
		return fmt.Errorf("provider uploads: %w", err)
	}
	return nil
}

// Count is the number of uploads remembered, for status output and tests.
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM llm_uploads`).Scan(&n)
	return n, err
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// Run sweeps every interval until ctx ends. apis is asked each time, so
// it sees the providers as they are then.
func (s *Store) Run(ctx context.Context, interval time.Duration, apis func() map[string]llm.FilesAPI) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx, apis()); err != nil && ctx.Err() == nil {
			s.o.Log.Warn("provider uploads: sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// noFilesAPI reports an answer that says the endpoint does not exist,
// rather than that this upload failed.
func noFilesAPI(err error) bool {
	var e *llm.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}
