package media_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
)

// Request files written by hand into a group's requests/ folder, the way a
// compromised or confused agent could: the group is the folder, whatever
// the file says, and nothing that is not a plain file is ever opened.
func TestHostileRequestFiles(t *testing.T) {
	r := mediatest.New(t)
	family := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "family.png"}, chantest.Media{Data: mediatest.PNG(t, 2, 2)})
	work := ipc.GroupLayout(r.IPCRoot, "work")
	req := func(id, typ string, args any) []byte {
		b, _ := json.Marshal(map[string]any{"version": ipc.Version, "id": id, "type": typ, "args": args})
		return b
	}
	tests := []struct {
		name, file string
		write      func(t *testing.T, path string)
		code       string // expected error code in the response; "" = OK
		quarantine string // reason expected in failed/, "" = not quarantined
	}{
		{"other group's ref in my folder", "h1.json", func(t *testing.T, p string) {
			os.WriteFile(p, req("h1", tools.FetchMedia, tools.FetchMediaArgs{MediaRef: family}), 0o600)
		}, tools.CodeNotFound, ""},
		{"claims the other group in the payload", "h2.json", func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"version":1,"id":"h2","type":"fetch_media","group":"family","args":{"mediaRef":"`+family+`"}}`), 0o600)
		}, tools.CodeBadRequest, "unknown field"},
		{"folder in the ref", "h3.json", func(t *testing.T, p string) {
			os.WriteFile(p, req("h3", tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "../family/" + family}), 0o600)
		}, tools.CodeNotFound, ""},
		{"id that climbs out", "h4.json", func(t *testing.T, p string) {
			os.WriteFile(p, req("../../family/responses/h4", tools.ListMedia, nil), 0o600)
		}, tools.CodeBadRequest, "does not match"},
		{"truncated mid-string", "h5.json", func(t *testing.T, p string) {
			os.WriteFile(p, []byte(`{"version":1,"id":"h5","type":"fetch_med`), 0o600)
			mustOld(t, p)
		}, tools.CodeBadRequest, "malformed JSON"},
		{"empty file", "h6.json", func(t *testing.T, p string) {
			os.WriteFile(p, nil, 0o600)
			mustOld(t, p)
		}, tools.CodeBadRequest, "malformed JSON"},
		{"two requests in one file", "h7.json", func(t *testing.T, p string) {
			b := req("h7", tools.ListMedia, nil)
			os.WriteFile(p, append(append(b, '\n'), req("h7", tools.SendMessage, tools.SendMessageArgs{Text: "spam"})...), 0o600)
			mustOld(t, p)
		}, tools.CodeBadRequest, "trailing data"},
		{"directory named like a request", "h8.json", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(p, "inner.json"), req("inner", tools.ListMedia, nil), 0o600)
		}, tools.CodeBadRequest, "not a regular file"},
		{"fifo named like a request", "h9.json", func(t *testing.T, p string) {
			// Opening a FIFO for reading blocks until a writer comes: the
			// host must refuse it without opening it.
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, tools.CodeBadRequest, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(work.Requests(), tt.file)
			tt.write(t, path)
			r.IPC.Rescan()
			resp := filepath.Join(work.Responses(), tt.file)
			testwait.Until(t, "the response file", func() bool { _, err := os.Stat(resp); return err == nil })
			var got ipc.Response
			b, _ := os.ReadFile(resp)
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("response %s: %v", b, err)
			}
			switch {
			case tt.code == "" && !got.OK:
				t.Errorf("response = %s, want OK", b)
			case tt.code != "" && (got.OK || got.Error == nil || got.Error.Code != tt.code):
				t.Errorf("response = %s, want %s", b, tt.code)
			}
			if tt.quarantine != "" {
				reason, err := os.ReadFile(filepath.Join(work.Failed(), tt.file+".reason"))
				if err != nil || !strings.Contains(string(reason), tt.quarantine) {
					t.Errorf("reason = %q (%v), want %q", reason, err, tt.quarantine)
				}
			}
			// The host answers first and then removes the request.
			testwait.Until(t, "the planted file to be removed", func() bool { _, err := os.Lstat(path); return os.IsNotExist(err) })
		})
	}
	// Nothing of family's reached either group folder, and the family
	// folder got no stray answers.
	for _, g := range []string{"work", "family"} {
		if es, _ := os.ReadDir(filepath.Join(r.GroupsDir, g, "media")); len(es) != 0 {
			t.Errorf("groups/%s/media holds %v", g, es)
		}
	}
	if es, _ := os.ReadDir(ipc.GroupLayout(r.IPCRoot, "family").Responses()); len(es) != 0 {
		t.Errorf("family responses/ holds %v", es)
	}
	if n := r.TG.Downloads(); n != 0 {
		t.Errorf("%d downloads for refused requests", n)
	}
	// The host still answers its own group after all that.
	var list tools.ListMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.ListMedia, tools.ListMediaArgs{}, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("list after hostile files: %+v, %v", list, err)
	}
}

// mustOld backdates a file past the host's write grace, so a truncated
// file is judged now instead of waited on as a write in progress.
func mustOld(t *testing.T, p string) {
	t.Helper()
	old := mustStat(t, p).ModTime().Add(-time.Minute)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// A stranger's file name full of path tricks is materialised inside the
// group's media folder, never next to it or in another group's.
func TestHostileFileNamesStayInTheGroupFolder(t *testing.T) {
	r := mediatest.New(t)
	c := r.Client("family")
	for _, name := range []string{
		"../../work/media/owned.png",
		"..\\..\\main\\MEMORY.md",
		"/etc/passwd",
		"~/.ssh/authorized_keys",
		"....//....//x.png",
		"\u202egnp.exe",
		"con:.png",
		".hidden",
		"",
	} {
		t.Run(name, func(t *testing.T) {
			id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: name},
				chantest.Media{Data: []byte("%PDF-1.4\n")})
			var res tools.FetchMediaResult
			if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
				t.Fatal(err)
			}
			dir, file := filepath.Split(filepath.FromSlash(res.Path))
			if filepath.Clean(dir) != "media" || strings.HasPrefix(file, ".") || strings.ContainsAny(file, "/\\\u202e") {
				t.Fatalf("path %q", res.Path)
			}
			if _, err := os.Stat(filepath.Join(r.GroupsDir, "family", filepath.FromSlash(res.Path))); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, g := range []string{"work", "main"} {
		if es, _ := os.ReadDir(filepath.Join(r.GroupsDir, g, "media")); len(es) != 0 {
			t.Errorf("groups/%s/media holds %v", g, es)
		}
	}
}

// A group's copy of fetched media is its own: writing into one group's
// file changes neither the cache nor what another group is served, even
// when both groups were sent the same bytes.
func TestGroupCopiesShareNoBytes(t *testing.T) {
	r := mediatest.New(t)
	img := mediatest.PNG(t, 8, 8)
	a := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "same.png"}, chantest.Media{Data: img})
	b := r.Register("telegram:-200", mediaregistry.MediaReference{FileName: "same.png"}, chantest.Media{Data: img})
	var ra, rb tools.FetchMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: a}, &ra); err != nil {
		t.Fatal(err)
	}
	if err := mediatest.Call(t, r.Client("work"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: b}, &rb); err != nil {
		t.Fatal(err)
	}
	famPath := filepath.Join(r.GroupsDir, "family", filepath.FromSlash(ra.Path))
	if err := os.WriteFile(famPath, []byte("tampered by family"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := mediatest.Call(t, r.Client("work"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: b}, &rb); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(r.GroupsDir, "work", filepath.FromSlash(rb.Path)), r.Cache.Path(rb.SHA256)} {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, img) {
			t.Errorf("%s changed after a write into family's copy (%d bytes, %v)", p, len(got), err)
		}
	}
}
