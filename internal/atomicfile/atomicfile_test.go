package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/internal/atomicfile"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, p string)
	}{
		{"new file", func(*testing.T, string, string) {}},
		{"replaces old content", func(t *testing.T, _, p string) {
			if err := os.WriteFile(p, []byte("old and longer"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"crash leftover at the temp name", func(t *testing.T, _, p string) {
			if err := os.WriteFile(p+".tmp", []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link planted at the temp name is removed, not followed", func(t *testing.T, dir, p string) {
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, p+".tmp"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if got := read(t, victim); got != "victim" {
					t.Errorf("link target = %q, want it untouched", got)
				}
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "state.json")
			tt.setup(t, dir, p)
			if err := atomicfile.WriteFile(p, []byte("new"), 0o640); err != nil {
				t.Fatal(err)
			}
			if got := read(t, p); got != "new" {
				t.Errorf("content = %q, want %q", got, "new")
			}
			if got := names(t, dir); len(got) != 1 || got[0] != "state.json" {
				t.Errorf("folder holds %v, want only state.json", got)
			}
		})
	}
}

func TestWriteRoot(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		durable bool
		plant   bool // a link at the temp name
		fill    func(*os.File) error
		want    string // content of sub/x after the write
		wantErr bool
	}{
		{"durable", true, false, atomicfile.Bytes([]byte("new")), "new", false},
		{"not durable", false, false, atomicfile.Bytes([]byte("new")), "new", false},
		{"fill fails: old content stays", true, false, func(f *os.File) error {
			f.Write([]byte("partial"))
			return boom
		}, "old", true},
		{"link at the temp name is refused", true, true, atomicfile.Bytes([]byte("new")), "old", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "sub", "x"), []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "victim")
			if tt.plant {
				if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(victim, filepath.Join(dir, ".tmp-x")); err != nil {
					t.Fatal(err)
				}
			}
			r, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = atomicfile.WriteRoot(r, "sub/x", ".tmp-x", 0o600, tt.durable, tt.fill)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if tt.wantErr && !tt.plant && !errors.Is(err, boom) {
				t.Errorf("err = %v, want the fill's error", err)
			}
			if got := read(t, filepath.Join(dir, "sub", "x")); got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if tt.plant {
				if got := read(t, victim); got != "victim" {
					t.Errorf("link target = %q, want it untouched", got)
				}
				return
			}
			if got := names(t, dir); len(got) != 1 || got[0] != "sub" {
				t.Errorf("root holds %v, want the temp file gone", got)
			}
		})
	}
}

func TestWriteRootKeepsInsideRoot(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := atomicfile.WriteRoot(r, "out/x", ".tmp-x", 0o600, true, atomicfile.Bytes([]byte("new"))); err == nil {
		t.Fatal("a rename through a link out of the root succeeded")
	}
	if got := names(t, outside); len(got) != 0 {
		t.Errorf("outside folder holds %v, want nothing", got)
	}
	if got := names(t, dir); len(got) != 1 || got[0] != "out" {
		t.Errorf("root holds %v, want the temp file gone", got)
	}
}

// A fill may read back what it wrote (the web channel sniffs an upload's
// type from the file before it is committed).
func TestWriteRootFillReadsBack(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var head [5]byte
	err = atomicfile.WriteRoot(r, "x", ".part-x", 0o600, false, func(f *os.File) error {
		if _, err := f.Write([]byte("%PDF-1.7")); err != nil {
			return err
		}
		_, err := f.ReadAt(head[:], 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(head[:]) != "%PDF-" {
		t.Errorf("read back %q, want %q", head[:], "%PDF-")
	}
}
