package media_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// A link planted in place of a group's media folder (or the group folder
// itself) must not make the host write fetched bytes elsewhere: not into
// another group, not outside groups/.
func TestLinkedGroupFoldersAreRefused(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, r *mediatest.Rig) (target string)
	}{
		{"media linked to another group's media", func(t *testing.T, r *mediatest.Rig) string {
			target := filepath.Join(r.GroupsDir, "work", "media")
			mustMkdir(t, target)
			replaceWithLink(t, filepath.Join(r.GroupsDir, "family", "media"), target)
			return target
		}},
		{"media linked outside groups", func(t *testing.T, r *mediatest.Rig) string {
			target := filepath.Join(r.Dir, "elsewhere")
			mustMkdir(t, target)
			replaceWithLink(t, filepath.Join(r.GroupsDir, "family", "media"), target)
			return target
		}},
		{"group folder linked to another group", func(t *testing.T, r *mediatest.Rig) string {
			target := filepath.Join(r.GroupsDir, "work")
			mustMkdir(t, filepath.Join(target, "media"))
			replaceWithLink(t, filepath.Join(r.GroupsDir, "family"), target)
			return target
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mediatest.New(t)
			if _, err := groups.EnsureWorkspace(r.GroupsDir, &groups.Group{Folder: "family"}); err != nil {
				t.Fatal(err)
			}
			target := tt.plant(t, r)
			id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "a.png"}, chantest.Media{Data: mediatest.PNG(t, 2, 2)})
			err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, nil)
			var herr *tools.Error
			if !errors.As(err, &herr) || !strings.Contains(herr.Message, "symlink") {
				t.Fatalf("fetch through a linked folder: %v, want a refusal that names the link", err)
			}
			if n := countFiles(t, target); n != 0 {
				t.Errorf("%d files were written into %s", n, target)
			}
			// At start-up the same folder is refused loudly.
			if _, err := groups.EnsureWorkspace(r.GroupsDir, &groups.Group{Folder: "family"}); err == nil || !strings.Contains(err.Error(), "symlink") {
				t.Errorf("EnsureWorkspace accepted the linked folder: %v", err)
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
}

func replaceWithLink(t *testing.T, path, target string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != groups.MemoryFile {
			n++
		}
		return nil
	})
	return n
}

// Another group's ref must read exactly like a ref that does not exist,
// live or expired: the answer is no oracle for which refs exist.
func TestOtherGroupsRefReadsAsUnknown(t *testing.T) {
	r := mediatest.New(t)
	c := r.Client("family")
	theirs := r.Register("telegram:-200", mediaregistry.MediaReference{FileName: "theirs.png"}, chantest.Media{Data: mediatest.PNG(t, 2, 2)})
	const unknown = "tg_AAAAAAAAAAAAAAAA"
	answer := func(id string) string {
		t.Helper()
		var herr *tools.Error
		if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, nil); !errors.As(err, &herr) {
			t.Fatalf("fetch %s: %v, want a typed error", id, err)
		}
		return herr.Code + ": " + strings.ReplaceAll(herr.Message, id, "<ref>")
	}
	want := answer(unknown)
	if got := answer(theirs); got != want {
		t.Errorf("another group's ref answers %q, an unknown one %q", got, want)
	}
	r.Clock.Advance(31 * time.Minute)
	if got := answer(theirs); got != want {
		t.Errorf("another group's expired ref answers %q, an unknown one %q", got, want)
	}
	if r.TG.Downloads() != 0 {
		t.Error("a refused ref was downloaded")
	}
}
