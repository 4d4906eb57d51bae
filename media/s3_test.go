package media_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store"
	"github.com/botd-dev/botd/mediaregistry/s3store/s3test"
	"github.com/botd-dev/botd/store"
)

// s3env is a media service over a real database and a fake Telegram, whose
// cache can be opened again (a restart) on the local store or a bucket.
type s3env struct {
	t         testing.TB
	dir       string
	cacheDir  string
	groupsDir string
	st        *store.Store
	reg       *mediaregistry.Registry
	tg        *chantest.Channel
	set       *groups.Set
	family    *groups.Group

	cache  *mediaregistry.Cache
	svc    *media.Service
	stopUp func()
}

func newS3Env(t testing.TB) *s3env {
	t.Helper()
	dir := t.TempDir()
	e := &s3env{t: t, dir: dir, cacheDir: filepath.Join(dir, "data", "media"), groupsDir: filepath.Join(dir, "groups"), tg: chantest.New("telegram")}
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	e.reg = mediaregistry.New(st.DB, 30*time.Minute)
	e.set, err = groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true}})
	if err != nil {
		t.Fatal(err)
	}
	e.family, _ = e.set.ByFolder("family")
	return e
}

// open starts the service (a daemon start) on objects (nil: the local
// store), with its uploader running; the previous one is stopped first.
func (e *s3env) open(objects mediaregistry.ObjectStore, clock func() time.Time) *mediaregistry.Cache {
	e.t.Helper()
	e.close()
	cache, err := mediaregistry.OpenCache(e.cacheDir, e.st.DB, 24*time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	if clock != nil {
		cache.SetClock(clock)
	}
	if objects != nil {
		cache.UseStore(objects)
	}
	e.cache = cache
	e.svc = media.New(media.Options{Registry: e.reg, Cache: cache, Channels: map[string]channels.Channel{"telegram": e.tg},
		Groups: e.set, GroupsDir: e.groupsDir, MaxDownloadBytes: 64 << 20, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); cache.RunUploader(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	e.stopUp = func() { cancel(); <-done }
	e.t.Cleanup(e.close)
	return cache
}

func (e *s3env) close() {
	if e.stopUp != nil {
		e.stopUp()
		e.stopUp = nil
	}
}

func (e *s3env) register(name, mime string, data []byte) string {
	e.t.Helper()
	ref := mediaregistry.MediaReference{Chat: "telegram:-100", Kind: mediaregistry.Document, FileName: name, MIME: mime,
		Size: int64(len(data)), Private: []byte("file-" + name)}
	if err := e.reg.Register(context.Background(), &ref); err != nil {
		e.t.Fatal(err)
	}
	e.tg.Serve(string(ref.Private), chantest.Media{Data: data})
	return ref.ID
}

// fetch fetches ref for the family group and checks the group's copy holds
// exactly want.
func (e *s3env) fetch(ref string, want []byte) *tools.FetchMediaResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, herr := e.svc.Fetch(ctx, e.family, ref)
	if herr != nil {
		e.t.Fatalf("fetch %s: %v", ref, herr)
	}
	got, err := os.ReadFile(filepath.Join(e.groupsDir, "family", res.Path))
	if err != nil || !bytes.Equal(got, want) {
		e.t.Fatalf("the group's copy of %s: %v (%d bytes, want %d)", ref, err, len(got), len(want))
	}
	return res
}

// freshDisk removes every local copy: the cache folder and the group's
// media, as on another machine sharing the database and the bucket.
func (e *s3env) freshDisk() {
	e.t.Helper()
	for _, d := range []string{e.cacheDir, filepath.Join(e.groupsDir, "family", "media")} {
		if err := os.RemoveAll(d); err != nil {
			e.t.Fatal(err)
		}
	}
	// The folder itself stays, as under a running daemon.
	if err := os.MkdirAll(filepath.Join(e.cacheDir, "tmp"), 0o750); err != nil {
		e.t.Fatal(err)
	}
}

// waitUploaded waits for the condition "nothing waits for the store";
// retry, when set, runs at each look (making every retry due).
func (e *s3env) waitUploaded(retry ...func()) {
	e.t.Helper()
	var pend []mediaregistry.Pending
	var err error
	if !testwait.Eventually(func() bool {
		if pend, err = e.cache.PendingUploads(context.Background()); err != nil || len(pend) == 0 {
			return true
		}
		for _, r := range retry {
			r()
		}
		return false
	}) {
		e.t.Fatalf("uploads still pending after %v: %+v", testwait.HangGuard, pend)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func inBucket(t testing.TB, st *s3store.Store, sha string, want []byte) {
	t.Helper()
	r, _, err := st.Get(context.Background(), sha)
	if err != nil {
		t.Fatalf("object %s: %v", sha, err)
	}
	defer r.Close()
	got, _ := io.ReadAll(r)
	if !bytes.Equal(got, want) {
		t.Fatalf("object %s holds other bytes", sha)
	}
}

// Fetched through the bucket, then a restart on an empty disk: the second
// fetch is served from the bucket, without a channel download. With the
// bucket down as well, the channel serves it again rather than failing.
func TestFetchThroughS3AfterRestart(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.NewStore(t, "restart")
	e := newS3Env(t)
	e.open(bucket, nil)
	pdf := append([]byte("%PDF-1.7\n"), randomBytes(t, 300<<10)...)
	ref := e.register("report.pdf", "application/pdf", pdf)

	res := e.fetch(ref, pdf)
	if res.Cached || e.tg.Downloads() != 1 {
		t.Fatalf("first fetch: cached=%v downloads=%d", res.Cached, e.tg.Downloads())
	}
	e.waitUploaded()
	inBucket(t, bucket, res.SHA256, pdf)
	info, err := bucket.Stat(context.Background(), res.SHA256)
	if err != nil || info.Name != "report.pdf" || info.MIME != "application/pdf" {
		t.Fatalf("object metadata: %+v %v", info, err)
	}

	e.close()
	e.freshDisk()
	e.open(srv.NewStore(t, "restart"), nil)
	res = e.fetch(ref, pdf)
	if !res.Cached || e.tg.Downloads() != 1 {
		t.Fatalf("after the restart: cached=%v downloads=%d, want the bucket to serve it", res.Cached, e.tg.Downloads())
	}

	srv.Stop()
	e.freshDisk()
	e.fetch(ref, pdf)
	if e.tg.Downloads() != 2 {
		t.Fatalf("with the bucket down and no local copy: downloads=%d, want the channel to serve it", e.tg.Downloads())
	}
}

// cutAfter passes n bytes, then tells the test and waits until it has
// stopped the server before going on: an upload cut in the middle.
type cutAfter struct {
	r       io.Reader
	n       int
	reached chan struct{}
	release chan struct{}
	once    *sync.Once
}

func (c *cutAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.once.Do(func() { close(c.reached) })
		<-c.release
		return c.r.Read(p)
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= k
	return k, err
}

// The server stops in the middle of an upload: the fetch has succeeded
// anyway, further fetches work while it is down, and once it is back the
// queued uploads are retried and land whole.
func TestS3StoppedMidUpload(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.NewStore(t, "midupload")
	e := newS3Env(t)
	fake := clock.NewFake(time.Now())
	cache := e.open(bucket, fake.Now)

	reached, release := make(chan struct{}), make(chan struct{})
	var once, first sync.Once
	cache.SetUploadFilter(func(r io.Reader) io.Reader {
		var out io.Reader = r
		first.Do(func() { out = &cutAfter{r: r, n: 1 << 20, reached: reached, release: release, once: &once} })
		return out
	})

	big := randomBytes(t, 3<<20)
	ref := e.register("video.bin", "application/octet-stream", big)
	res := e.fetch(ref, big)
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the upload never started")
	}
	srv.Stop()
	close(release)

	// Wait for the condition: the failed attempt is recorded.
	deadline := time.Now().Add(60 * time.Second)
	for {
		pend, _ := cache.PendingUploads(context.Background())
		if len(pend) == 1 && pend[0].Attempts >= 1 && pend[0].LastError != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed attempt recorded: %+v", pend)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The store is down: fetches still work, a new one from the channel.
	e.fetch(ref, big)
	small := randomBytes(t, 10<<10)
	ref2 := e.register("note.txt", "text/plain", small)
	res2 := e.fetch(ref2, small)
	if e.tg.Downloads() != 2 {
		t.Fatalf("downloads = %d", e.tg.Downloads())
	}

	srv.Start()
	e.waitUploaded(func() {
		fake.Advance(time.Hour) // every retry is due
		cache.Kick()
	})
	inBucket(t, bucket, res.SHA256, big)
	inBucket(t, bucket, res2.SHA256, small)
}

// Migration both ways while refs keep working: local bytes go to the
// bucket, a restart on the bucket with an empty disk serves them from it;
// back to local, a restart without the bucket serves them from the disk.
func TestMigrateBothWays(t *testing.T) {
	srv := s3test.Start(t)
	e := newS3Env(t)
	e.open(nil, nil)
	a, b := randomBytes(t, 200<<10), randomBytes(t, 5<<10)
	refA, refB := e.register("a.pdf", "application/pdf", a), e.register("b.txt", "text/plain", b)
	e.fetch(refA, a)
	e.fetch(refB, b)

	// To s3, beside the running service (still on the local store).
	side := mediaregistry.NewCache(e.cacheDir, e.st.DB, 24*time.Hour)
	side.UseStore(srv.NewStore(t, "migrate"))
	res, err := side.MigrateToStore(context.Background(), nil)
	if err != nil || res.Copied != 2 || res.Failed != 0 {
		t.Fatalf("migrate to s3: %+v %v", res, err)
	}
	e.fetch(refA, a) // the running service is unaffected

	e.close()
	e.freshDisk()
	e.open(srv.NewStore(t, "migrate"), nil)
	e.fetch(refA, a)
	e.fetch(refB, b)
	if e.tg.Downloads() != 2 {
		t.Fatalf("downloads = %d after migrating to s3, want the bucket to serve", e.tg.Downloads())
	}

	// Back to local, beside the service on the bucket.
	e.freshDisk()
	side = mediaregistry.NewCache(e.cacheDir, e.st.DB, 24*time.Hour)
	side.UseStore(srv.NewStore(t, "migrate"))
	res, err = side.MigrateToLocal(context.Background(), nil)
	if err != nil || res.Copied != 2 || res.Failed != 0 {
		t.Fatalf("migrate to local: %+v %v", res, err)
	}
	e.close()
	srv.Stop()
	os.RemoveAll(filepath.Join(e.groupsDir, "family", "media"))
	e.open(nil, nil)
	e.fetch(refA, a)
	e.fetch(refB, b)
	if e.tg.Downloads() != 2 {
		t.Fatalf("downloads = %d after migrating back, want the local disk to serve", e.tg.Downloads())
	}
}
