package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
)

// botd status on SQLite: no database, a lease never taken, a live one, a
// lapsed one. (Postgres and running daemons: TestTwoInstancesOneLease.)
func TestStatusOnSQLite(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "botd.yaml"), "data_dir: ./data\n")
	check := func(wantCode int, want string) {
		t.Helper()
		out, code := runCLI(t, dir, "status", "--config", "botd.yaml")
		if code != wantCode || !strings.Contains(out, want) {
			t.Fatalf("botd status: exit %d, want %d with %q:\n%s", code, wantCode, want, out)
		}
	}
	check(1, "botd has not run here")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check(3, "no instance has held the lease yet")
	if _, err := st.TakeLease(ctx, "solo", time.Now().Add(-time.Minute), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	check(3, "the lease of solo, epoch 1, lapsed")
	if _, err := st.TakeLease(ctx, "solo", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	check(0, "active: solo")
	check(0, "epoch: 2")
	check(0, "this data folder: no botd run holds it")
	lock, err := lockDataDir(filepath.Join(dir, "data"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	check(0, "this data folder: botd run (pid ")
}
