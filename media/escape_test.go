package media_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
)

// A local process (or the agent) that can write in the group folder tries
// to get a file from outside it sent to the chat.
func TestSendMediaCannotLeaveTheGroupFolder(t *testing.T) {
	r := newRig(t)
	ws, err := groups.EnsureWorkspace(r.groupsDir, &groups.Group{Folder: "family"})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(r.dir, "data", "botd.db")
	if err := os.Link(db, filepath.Join(ws.Root, "db.png")); err != nil {
		t.Skipf("hard link: %v", err)
	}
	err = call(t, r.client("family"), ipc.TypeSendMedia, ipc.SendMediaArgs{Path: "db.png"}, nil)
	wantCode(t, err, ipc.CodeBadRequest)
	if !strings.Contains(err.Error(), "hard links") {
		t.Errorf("refusal does not say why: %v", err)
	}
	if files := r.tg.Files(); len(files) != 0 {
		t.Fatalf("a hard link to the database was sent: %d files", len(files))
	}
}

// The file is swapped for a link to a secret after botd checked it and
// before the channel reads it: the channel must send what was checked.
func TestSendMediaSwapAfterCheckSendsWhatWasChecked(t *testing.T) {
	r := newRig(t)
	ws, err := groups.EnsureWorkspace(r.groupsDir, &groups.Group{Folder: "family"})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(r.dir, "secret.txt")
	os.WriteFile(secret, []byte("TOKEN=outside-the-group"), 0o600)
	chart := filepath.Join(ws.Root, "chart.png")
	img := pngBytes(t, 4, 4)
	os.WriteFile(chart, img, 0o600)
	r.tg.BeforeUpload = func(channels.OutMedia) {
		os.Remove(chart)
		if err := os.Symlink(secret, chart); err != nil {
			t.Error(err)
		}
	}
	if err := call(t, r.client("family"), ipc.TypeSendMedia, ipc.SendMediaArgs{Path: "chart.png"}, nil); err != nil {
		t.Fatal(err)
	}
	files := r.tg.Files()
	if len(files) != 1 || !bytes.Equal(files[0].Data, img) {
		t.Fatalf("sent %q, want the checked image", files[0].Data)
	}
}

// A link planted in place of a group's media folder (or the group folder
// itself) must not make the host write fetched bytes elsewhere: not into
// another group, not outside groups/.
func TestLinkedGroupFoldersAreRefused(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, r *rig) (target string)
	}{
		{"media linked to another group's media", func(t *testing.T, r *rig) string {
			target := filepath.Join(r.groupsDir, "work", "media")
			mustMkdir(t, target)
			replaceWithLink(t, filepath.Join(r.groupsDir, "family", "media"), target)
			return target
		}},
		{"media linked outside groups", func(t *testing.T, r *rig) string {
			target := filepath.Join(r.dir, "elsewhere")
			mustMkdir(t, target)
			replaceWithLink(t, filepath.Join(r.groupsDir, "family", "media"), target)
			return target
		}},
		{"group folder linked to another group", func(t *testing.T, r *rig) string {
			target := filepath.Join(r.groupsDir, "work")
			mustMkdir(t, filepath.Join(target, "media"))
			replaceWithLink(t, filepath.Join(r.groupsDir, "family"), target)
			return target
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if _, err := groups.EnsureWorkspace(r.groupsDir, &groups.Group{Folder: "family"}); err != nil {
				t.Fatal(err)
			}
			target := tt.plant(t, r)
			id := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "a.png"}, chantest.Media{Data: pngBytes(t, 2, 2)})
			err := call(t, r.client("family"), ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, nil)
			var herr *ipc.Error
			if !errors.As(err, &herr) || !strings.Contains(herr.Message, "symlink") {
				t.Fatalf("fetch through a linked folder: %v, want a refusal that names the link", err)
			}
			if n := countFiles(t, target); n != 0 {
				t.Errorf("%d files were written into %s", n, target)
			}
			// At start-up the same folder is refused loudly.
			if _, err := groups.EnsureWorkspace(r.groupsDir, &groups.Group{Folder: "family"}); err == nil || !strings.Contains(err.Error(), "symlink") {
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
	r := newRig(t)
	c := r.client("family")
	theirs := r.register("telegram:-200", mediaregistry.MediaReference{FileName: "theirs.png"}, chantest.Media{Data: pngBytes(t, 2, 2)})
	const unknown = "tg_AAAAAAAAAAAAAAAA"
	answer := func(id string) string {
		t.Helper()
		var herr *ipc.Error
		if err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, nil); !errors.As(err, &herr) {
			t.Fatalf("fetch %s: %v, want a typed error", id, err)
		}
		return herr.Code + ": " + strings.ReplaceAll(herr.Message, id, "<ref>")
	}
	want := answer(unknown)
	if got := answer(theirs); got != want {
		t.Errorf("another group's ref answers %q, an unknown one %q", got, want)
	}
	r.clock.Advance(31 * time.Minute)
	if got := answer(theirs); got != want {
		t.Errorf("another group's expired ref answers %q, an unknown one %q", got, want)
	}
	if r.tg.Downloads() != 0 {
		t.Error("a refused ref was downloaded")
	}
}
