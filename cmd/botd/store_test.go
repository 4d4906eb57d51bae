package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store/s3test"
	"github.com/botd-dev/botd/store"
)

// storeConfig is a config whose media.store is the test server's bucket.
func storeConfig(t *testing.T, dir string, srv *s3test.Server, typ, bucket string) string {
	t.Helper()
	c := srv.Config(bucket)
	path := filepath.Join(dir, typ+"-"+bucket+".yaml")
	writeFile(t, path, fmt.Sprintf(`data_dir: ./data
groups_dir: ./groups
channels: {web: {enabled: false}}
media:
  store: {type: %s, endpoint: %q, bucket: %s, prefix: %s, access_key: %s, secret_key: %s, path_style: true}
`, typ, c.Endpoint, bucket, c.Prefix, c.AccessKey, c.SecretKey))
	return path
}

// `botd config check` proves the bucket reachable and writable, and names
// media.store when it is not.
func TestConfigCheckBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.NewStore(t, "checked")
	dir := t.TempDir()
	tests := []struct {
		name   string
		bucket string
		stop   bool
		code   int
		want   string
	}{
		{"writable bucket", "checked", false, 0, ": OK"},
		{"missing bucket", "absent", false, 1, `media.store: bucket "absent" does not exist`},
		{"server down", "checked", true, 1, `media.store: bucket "checked" cannot be reached`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.stop {
				srv.Stop()
				defer srv.Start()
			}
			out, code := runCLI(t, dir, "config", "check", "--config", storeConfig(t, dir, srv, "s3", tt.bucket))
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, out, tt.code, tt.want)
			}
		})
	}
}

// `botd media migrate` moves the bytes to the bucket and back, with the
// type still local (the way there) and already s3 (the way back).
func TestMediaMigrateCLI(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.NewStore(t, "moved")
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := mediaregistry.OpenCache(filepath.Join(dir, "data", "media"), st.DB, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("botd migrate "), 10000)
	e, err := cache.Store(ctx, "tg_migrate01", "text/plain", bytes.NewReader(data), 1<<20)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	out, code := runCLI(t, dir, "media", "migrate", "--to", "s3", "--config", storeConfig(t, dir, srv, "local", "moved"))
	if code != 0 || !strings.Contains(out, "1 blob(s) in s3, 1 copied now") || !strings.Contains(out, "media.store.type: s3") {
		t.Fatalf("migrate --to s3: exit %d\n%s", code, out)
	}
	if _, err := bucket.Stat(ctx, e.SHA256); err != nil {
		t.Fatalf("the blob is not in the bucket: %v", err)
	}
	os.Remove(filepath.Join(dir, "data", "media", e.SHA256))
	out, code = runCLI(t, dir, "media", "migrate", "--to", "local", "--config", storeConfig(t, dir, srv, "s3", "moved"))
	if code != 0 || !strings.Contains(out, "1 blob(s) in local, 1 copied now") {
		t.Fatalf("migrate --to local: exit %d\n%s", code, out)
	}
	back, err := os.ReadFile(filepath.Join(dir, "data", "media", e.SHA256))
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("the local copy after migrating back: %v", err)
	}
	out, code = runCLI(t, dir, "media", "migrate", "--to", "elsewhere", "--config", storeConfig(t, dir, srv, "s3", "moved"))
	if code != 2 || !strings.Contains(out, "--to must be s3 or local") {
		t.Fatalf("bad --to: exit %d\n%s", code, out)
	}
}
