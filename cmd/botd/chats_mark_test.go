package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/internal/testwait"
)

// TestKeptMarkWakesTheWatcher: botd chats' mark (data/chats.updated) wakes
// botd run's watcher of the groups approved live, rewritten in place as
// botd chats does, and also once something replaced the file by a rename
// (the watch follows the new file).
func TestKeptMarkWakesTheWatcher(t *testing.T) {
	dir := t.TempDir()
	d := &daemon{cfg: &config.Config{DataDir: dir}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), keptKick: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); d.wg.Wait() })
	if err := d.watchKeptMark(ctx); err != nil {
		t.Fatal(err)
	}
	kicked := func() bool {
		select {
		case <-d.keptKick:
			return true
		default:
			return false
		}
	}
	if kicked() {
		t.Fatal("kicked before any mark was written")
	}
	if err := writeKeptMark(dir); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the kick of botd chats' mark", kicked)

	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, filepath.Join(dir, keptMark)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the kick of the mark replaced", kicked)
	// The watcher rewrites the new file, then watches it: once rewritten,
	// every event of the old file was told (and is drained here), so a
	// kick from now on is the new file's.
	testwait.Until(t, "the replaced mark rewritten", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, keptMark))
		return err == nil && string(b) != "1\n"
	})
	kicked()
	testwait.Until(t, "the kick of a mark written after the replacement", func() bool {
		if err := writeKeptMark(dir); err != nil {
			t.Fatal(err)
		}
		return kicked()
	})
}
