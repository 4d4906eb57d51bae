package media_test

import (
	"bytes"
	"context"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/mediaregistry"
)

// disk is a pretend filesystem with room for a number of bytes; writes
// past it fail with ENOSPC the way a full disk does.
type disk struct {
	mu   sync.Mutex
	room int64
}

func (d *disk) setRoom(n int64) {
	d.mu.Lock()
	d.room = n
	d.mu.Unlock()
}

func (d *disk) wrap(w io.Writer) io.Writer { return &diskWriter{d: d, w: w} }

type diskWriter struct {
	d *disk
	w io.Writer
}

func (dw *diskWriter) Write(b []byte) (int, error) {
	dw.d.mu.Lock()
	room := dw.d.room
	if int64(len(b)) > room {
		dw.d.room = 0
	} else {
		dw.d.room -= int64(len(b))
	}
	dw.d.mu.Unlock()
	if int64(len(b)) <= room {
		return dw.w.Write(b)
	}
	n, _ := dw.w.Write(b[:room])
	return n, &os.PathError{Op: "write", Path: "dl-tmp", Err: syscall.ENOSPC}
}

func noise(n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(int64(n))).Read(b)
	return b
}

// assertNothingKept checks that a failed fetch of ref left no temp file,
// no blob, no index row and no copy in the group folder.
func assertNothingKept(t *testing.T, r *mediatest.Rig, ref string, ignore ...string) {
	t.Helper()
	if e, _ := os.ReadDir(filepath.Join(r.CacheDir, "tmp")); len(e) != 0 {
		t.Errorf("temp files left behind: %d", len(e))
	}
	entries, _ := os.ReadDir(r.CacheDir)
	for _, e := range entries {
		if e.Name() != "tmp" && e.Name() != "lost+found" && !strings.HasPrefix(e.Name(), "filler") {
			t.Errorf("blob %s left in the cache", e.Name())
		}
	}
	var rows int
	if err := r.Store.DB.QueryRow(`SELECT COUNT(*) FROM media_cache WHERE ref_id = ?`, ref).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("index rows for %s: %d (err %v)", ref, rows, err)
	}
	if _, ok, _ := r.Cache.Lookup(context.Background(), ref); ok {
		t.Errorf("cache lookup finds %s", ref)
	}
	if e, _ := os.ReadDir(filepath.Join(r.GroupsDir, "family", "media")); len(e) != 0 {
		t.Errorf("group folder holds %d media files", len(e))
	}
}

func wantDiskFull(t *testing.T, err error) {
	t.Helper()
	mediatest.WantCode(t, err, tools.CodeDownloadFailed)
	if msg := err.Error(); !strings.Contains(msg, "disk is full") {
		t.Errorf("error %q does not say the disk is full", msg)
	}
}

// A download that runs out of disk space fails with a clear error, keeps
// nothing, and the next fetch after space returns succeeds.
func TestFetchOnAFullDisk(t *testing.T) {
	r := mediatest.NewMax(t, 8<<20)
	d := &disk{room: 100 << 10}
	r.Cache.SetWriteFilter(d.wrap)
	data := noise(300 << 10)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: "scan.bin",
		MIME: "application/octet-stream", Size: int64(len(data))}, chantest.Media{Data: data})
	c := r.Client("family")

	var res tools.FetchMediaResult
	wantDiskFull(t, mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res))
	assertNothingKept(t, r, id)

	d.setRoom(1 << 30)
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
		t.Fatalf("fetch after space returned: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(r.GroupsDir, "family", res.Path)); !bytes.Equal(got, data) {
		t.Error("the file fetched after space returned differs from the source")
	}
	if n := r.TG.Downloads(); n != 2 {
		t.Errorf("downloads = %d, want 2", n)
	}
}

// The same on a real filesystem that fills up: a 2 MB tmpfs under the
// cache. Needs root (mount); skipped elsewhere.
func TestFetchOnAFullTmpfs(t *testing.T) {
	r := mediatest.NewMax(t, 8<<20)
	r.Stop()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", r.CacheDir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", r.CacheDir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v %s", err, out)
		}
	})
	r.Start() // the cache reopens on the small filesystem
	filler := filepath.Join(r.CacheDir, "filler")
	if err := os.WriteFile(filler, noise(1536<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	data := noise(1 << 20)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: "scan.bin",
		MIME: "application/octet-stream", Size: int64(len(data))}, chantest.Media{Data: data})
	c := r.Client("family")

	var res tools.FetchMediaResult
	wantDiskFull(t, mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res))
	assertNothingKept(t, r, id)

	os.Remove(filler)
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
		t.Fatalf("fetch after space returned: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(r.GroupsDir, "family", res.Path)); !bytes.Equal(got, data) {
		t.Error("the file fetched after space returned differs from the source")
	}
}
