package groups

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a local process that can write in a group folder plants there, and
// what Open, Memory and EnsureWorkspace make of it.
func TestPlantedLinksAreRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "botd.db")
	if err := os.WriteFile(secret, []byte("SQLite format 3\x00 token=s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	groupsDir := filepath.Join(dir, "groups")
	ws, err := EnsureWorkspace(groupsDir, &Group{Folder: "fam"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(ws.Root, "hard.png")); err != nil {
		t.Skipf("hard link: %v", err)
	}
	if err := os.Symlink(secret, filepath.Join(ws.Root, "soft.png")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"hard.png", "soft.png"} {
		if f, _, err := ws.Open(p); err == nil {
			f.Close()
			t.Errorf("Open(%s) opened a file outside the group folder", p)
		}
	}
	if _, _, err := ws.Open("hard.png"); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("hard link refusal does not say why: %v", err)
	}

	// The memory file is in every system prompt: a link to the database
	// must not put its bytes there.
	for _, plant := range []func(string) error{
		func(mem string) error { return os.Link(secret, mem) },
		func(mem string) error { return os.Symlink(secret, mem) },
	} {
		mem := filepath.Join(ws.Root, MemoryFile)
		os.Remove(mem)
		if err := plant(mem); err != nil {
			t.Fatal(err)
		}
		got, err := ws.Memory()
		if strings.Contains(got, "s3cret") || err == nil {
			t.Errorf("Memory() = %q, %v: read through a planted link", got, err)
		}
	}
}

func TestFoldersBotdDidNotCreate(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, groupsDir, elsewhere string)
	}{
		{"group folder is a link to another group", func(t *testing.T, groupsDir, _ string) {
			mustLink(t, filepath.Join(groupsDir, "work"), filepath.Join(groupsDir, "fam"))
		}},
		{"media is a link outside", func(t *testing.T, groupsDir, elsewhere string) {
			os.MkdirAll(filepath.Join(groupsDir, "fam"), 0o750)
			mustLink(t, elsewhere, filepath.Join(groupsDir, "fam", "media"))
		}},
		{"media is a file", func(t *testing.T, groupsDir, _ string) {
			os.MkdirAll(filepath.Join(groupsDir, "fam"), 0o750)
			os.WriteFile(filepath.Join(groupsDir, "fam", "media"), nil, 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			groupsDir, elsewhere := filepath.Join(dir, "groups"), filepath.Join(dir, "elsewhere")
			os.MkdirAll(elsewhere, 0o750)
			if _, err := EnsureWorkspace(groupsDir, &Group{Folder: "work"}); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, groupsDir, elsewhere)
			_, err := EnsureWorkspace(groupsDir, &Group{Folder: "fam"})
			if !errors.Is(err, ErrNotOurs) {
				t.Fatalf("EnsureWorkspace = %v, want a refusal", err)
			}
			ws := Workspace{Root: filepath.Join(groupsDir, "fam")}
			if root, err := ws.OpenRoot(); !errors.Is(err, ErrNotOurs) {
				if root != nil {
					root.Close()
				}
				t.Errorf("OpenRoot = %v, want a refusal", err)
			}
			if err := ws.CleanTemp(); err == nil {
				t.Error("CleanTemp worked through a folder botd did not create")
			}
		})
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// A FIFO in place of the memory file is refused at once: the memory is
// read before every run, and opening a FIFO for reading waits for a writer.
func TestMemoryFIFORefused(t *testing.T) {
	ws, err := EnsureWorkspace(t.TempDir(), &Group{Folder: "fam"})
	if err != nil {
		t.Fatal(err)
	}
	mem := filepath.Join(ws.Root, MemoryFile)
	os.Remove(mem)
	if err := syscall.Mkfifo(mem, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ws.Memory()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Memory() on a FIFO = %v, want a refusal", err)
		}
	case <-time.After(20 * time.Second):
		// Unblock the opener so the test can end.
		if f, err := os.OpenFile(mem, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Memory() hung on a FIFO")
	}
}
