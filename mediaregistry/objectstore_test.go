package mediaregistry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/mediaregistry"
)

// memStore is an ObjectStore in memory that can be taken down, standing
// in for a bucket in tests that need no real S3 server.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	down    bool
	puts    int
}

func newMemStore() *memStore { return &memStore{objects: map[string][]byte{}} }

func (m *memStore) ID() string { return "mem://test" }

var errDown = errors.New("store unreachable")

func (m *memStore) setDown(d bool) { m.mu.Lock(); m.down = d; m.mu.Unlock() }

func (m *memStore) Put(_ context.Context, info mediaregistry.ObjectInfo, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	if int64(len(b)) != info.Size {
		return errors.New("short upload")
	}
	m.objects[info.SHA256] = b
	m.puts++
	return nil
}

func (m *memStore) Get(_ context.Context, sha string) (io.ReadCloser, mediaregistry.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, mediaregistry.ObjectInfo{}, errDown
	}
	b, ok := m.objects[sha]
	if !ok {
		return nil, mediaregistry.ObjectInfo{}, mediaregistry.ErrNoObject
	}
	return io.NopCloser(bytes.NewReader(b)), mediaregistry.ObjectInfo{SHA256: sha, Size: int64(len(b))}, nil
}

func (m *memStore) Stat(ctx context.Context, sha string) (mediaregistry.ObjectInfo, error) {
	r, info, err := m.Get(ctx, sha)
	if err == nil {
		r.Close()
	}
	return info, err
}

func (m *memStore) Delete(_ context.Context, sha string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	delete(m.objects, sha)
	return nil
}

func (m *memStore) has(sha string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.objects[sha]
	return ok
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The local store is the cache folder: content addressed, verified on the
// way in, and closed to names that could leave the folder.
func TestLocalStore(t *testing.T) {
	ctx := context.Background()
	data := []byte("hello, local store")
	sha := digest(data)
	tests := []struct {
		name    string
		info    mediaregistry.ObjectInfo
		body    []byte
		wantErr bool
	}{
		{"exact bytes", mediaregistry.ObjectInfo{SHA256: sha, Size: int64(len(data))}, data, false},
		{"short body", mediaregistry.ObjectInfo{SHA256: sha, Size: int64(len(data))}, data[:5], true},
		{"long body", mediaregistry.ObjectInfo{SHA256: sha, Size: int64(len(data))}, append(bytes.Clone(data), 'x'), true},
		{"other bytes", mediaregistry.ObjectInfo{SHA256: sha, Size: int64(len(data))}, bytes.ToUpper(data), true},
		{"name that climbs out", mediaregistry.ObjectInfo{SHA256: "../" + sha[3:], Size: int64(len(data))}, data, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mediaregistry.NewLocalStore(dir)
			err := s.Put(ctx, tt.info, bytes.NewReader(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Put: %v, want error %v", err, tt.wantErr)
			}
			left, _ := os.ReadDir(filepath.Join(dir, "tmp"))
			if len(left) != 0 {
				t.Fatalf("temp files left: %v", left)
			}
			r, info, err := s.Get(ctx, sha)
			if tt.wantErr {
				if !errors.Is(err, mediaregistry.ErrNoObject) {
					t.Fatalf("Get after a refused Put: %v, want ErrNoObject", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data) || info.Size != int64(len(data)) {
				t.Fatalf("Get = %q (%d)", got, info.Size)
			}
			if err := s.Delete(ctx, sha); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stat(ctx, sha); !errors.Is(err, mediaregistry.ErrNoObject) {
				t.Fatalf("Stat after Delete: %v", err)
			}
		})
	}
}

// A link planted in the cache folder is not an object.
func TestLocalStoreRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o600)
	sha := digest([]byte("secret"))
	if err := os.Symlink(outside, filepath.Join(dir, sha)); err != nil {
		t.Skip("no symlinks here:", err)
	}
	s := mediaregistry.NewLocalStore(dir)
	if r, _, err := s.Get(context.Background(), sha); err == nil {
		r.Close()
		t.Fatal("Get followed a link out of the cache folder")
	}
}

// With a remote store, a download is uploaded in the background; while the
// store is down the blob waits (and eviction must keep it), and once it is
// back the retry uploads it. An evicted copy then comes back from the store.
func TestCacheUploadsRetriesAndMaterialises(t *testing.T) {
	storetest.Each(t, testCacheUploadsRetriesAndMaterialises)
}

func testCacheUploadsRetriesAndMaterialises(t *testing.T, db store.Config) {
	ctx := context.Background()
	c, dir := openCache(t, db)
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	c.SetClock(fake.Now)
	remote := newMemStore()
	c.UseStore(remote)
	remote.setDown(true)

	data := []byte(strings.Repeat("voice note ", 1000))
	e, err := c.Store(ctx, "tg_upload1", "audio/ogg", bytes.NewReader(data), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.UploadPending(ctx, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	pend, _ := c.PendingUploads(ctx)
	if len(pend) != 1 || pend[0].Attempts != 1 || !strings.Contains(pend[0].LastError, "unreachable") || !next.After(fake.Now()) {
		t.Fatalf("after a failed upload: pending %+v, next %v", pend, next)
	}
	if err := c.Forget(ctx, e.SHA256); !errors.Is(err, mediaregistry.ErrPendingUpload) {
		t.Fatalf("Forget of a blob waiting for its upload = %v, want ErrPendingUpload", err)
	}
	// Not due yet: nothing is tried.
	remote.setDown(false)
	c.UploadPending(ctx, quietLog())
	if remote.puts != 0 {
		t.Fatal("an upload was retried before its time")
	}
	fake.Set(next)
	if _, err := c.UploadPending(ctx, quietLog()); err != nil {
		t.Fatal(err)
	}
	if pend, _ := c.PendingUploads(ctx); len(pend) != 0 || !remote.has(e.SHA256) {
		t.Fatalf("after the retry: pending %+v, in store %v", pend, remote.has(e.SHA256))
	}

	// Evicted locally: the index stays, the lookup still hits, and the
	// bytes come back from the store.
	if err := c.Forget(ctx, e.SHA256); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, e.SHA256))
	got, ok, err := c.Lookup(ctx, "tg_upload1")
	if err != nil || !ok || c.OnDisk(got) {
		t.Fatalf("Lookup after eviction: ok=%v err=%v on disk=%v", ok, err, c.OnDisk(got))
	}
	if err := c.Materialise(ctx, got); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(filepath.Join(dir, e.SHA256))
	if !bytes.Equal(back, data) {
		t.Fatal("materialised bytes differ")
	}

	// Swept after the TTL: the object goes with the last ref.
	fake.Advance(2 * time.Hour)
	if _, err := c.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if remote.has(e.SHA256) {
		t.Fatal("the sweep left the object of an expired blob in the store")
	}
}

// A store that returns other bytes than the digest names is refused: the
// local copy is not replaced by them.
func TestMaterialiseVerifiesDigest(t *testing.T) { storetest.Each(t, testMaterialiseVerifiesDigest) }

func testMaterialiseVerifiesDigest(t *testing.T, db store.Config) {
	ctx := context.Background()
	c, dir := openCache(t, db)
	remote := newMemStore()
	c.UseStore(remote)
	data := []byte("the real bytes")
	e, err := c.Store(ctx, "tg_verify1", "text/plain", bytes.NewReader(data), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPending(ctx, quietLog()); err != nil {
		t.Fatal(err)
	}
	remote.mu.Lock()
	remote.objects[e.SHA256] = []byte("tampered bytes")
	remote.mu.Unlock()
	os.Remove(filepath.Join(dir, e.SHA256))
	if err := c.Materialise(ctx, e); err == nil {
		t.Fatal("tampered object accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, e.SHA256)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("tampered bytes were put in the cache")
	}
}
