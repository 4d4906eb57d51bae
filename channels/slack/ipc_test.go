package slack

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// TestFetchThroughIPC follows one file from a file_share event to the
// group folder through the media service's fetch: nothing is
// downloaded on receipt, exactly one authenticated download happens on the
// first fetch, and the second fetch is served from the cache.
func TestFetchThroughIPC(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 4096)...)
	u := h.fake.HostFile("report.pdf", "application/pdf", pdf)
	h.send(t, message(testChannel, human, "", map[string]any{"subtype": "file_share", "files": []map[string]any{
		{"id": "F0PDF001", "name": "report.pdf", "mimetype": "application/pdf", "size": len(pdf), "url_private_download": u}}}))
	in := h.next(t)
	if len(in.Refs) != 1 || h.fake.Calls("files") != 0 {
		t.Fatalf("refs = %d, downloads = %d", len(in.Refs), h.fake.Calls("files"))
	}

	set, err := groups.NewSet("Andy", []groups.Group{
		{Folder: "general", Name: "General", Chat: "slack:" + testChannel},
		{Folder: "other", Name: "Other", Chat: "slack:C0OTHER"},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := set.ByFolder("general")
	other, _ := set.ByFolder("other")
	cache, err := mediaregistry.OpenCache(filepath.Join(t.TempDir(), "media"), h.st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	groupsDir := t.TempDir()
	svc := media.New(media.Options{Registry: h.reg, Cache: cache, Groups: set, GroupsDir: groupsDir,
		Channels: map[string]channels.Channel{"slack": h.sl}, MaxDownloadBytes: 1 << 20})
	fetch := func(t *testing.T, g *groups.Group, ref string) (*tools.FetchMediaResult, *tools.Error) {
		t.Helper()
		return svc.Fetch(h.ctx, g, ref)
	}

	for i, wantCached := range []bool{false, true} {
		res, ierr := fetch(t, g, in.Refs[0].ID)
		if ierr != nil {
			t.Fatalf("fetch %d: %v", i, ierr)
		}
		got, err := os.ReadFile(filepath.Join(groupsDir, g.Folder, res.Path))
		if err != nil || !bytes.Equal(got, pdf) || res.Cached != wantCached || res.MIME != "application/pdf" {
			t.Fatalf("fetch %d: %+v, read %d bytes, %v", i, res, len(got), err)
		}
	}
	reqs := h.fake.FileRequests()
	if len(reqs) != 1 || reqs[0].Authorization != "Bearer xoxb-fake-bot-token" {
		t.Errorf("file requests = %+v, want exactly one with the token", reqs)
	}

	// The token never reaches the group's side of the fence.
	if _, ierr := fetch(t, other, in.Refs[0].ID); ierr == nil || ierr.Code != tools.CodeNotFound {
		t.Errorf("fetch from another group: %v, want not_found (no oracle)", ierr)
	}
	_ = filepath.WalkDir(groupsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("xoxb-")) {
				t.Errorf("%s contains the bot token", p)
			}
		}
		return nil
	})
}
