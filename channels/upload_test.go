package channels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOutMediaUpload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.pdf")
	if err := os.WriteFile(path, []byte("%PDF-1.4 hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(p string) *os.File {
		t.Helper()
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, tc := range []struct {
		name     string
		m        OutMedia
		wantName string
		wantErr  string
	}{
		{"the file's own name", OutMedia{File: open(path)}, "report.pdf", ""},
		{"the given name", OutMedia{File: open(path), FileName: "Q3 figures.pdf"}, "Q3 figures.pdf", ""},
		{"a path in the name is not kept", OutMedia{File: open(path), FileName: "../../etc/passwd"}, "passwd", ""},
		{"a folder", OutMedia{File: open(dir), FileName: "dir"}, "", "dir is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, size, err := tc.m.Upload()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || size != 14 || name != tc.wantName {
				t.Fatalf("Upload() = %q, %d, %v; want %q, 14", name, size, err, tc.wantName)
			}
			if strings.ContainsAny(name, `/\`) {
				t.Errorf("name %q keeps a path", name)
			}
		})
	}
}
