package discord

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// TestFetchAfterExpiryRefreshesThenDownloadsOnce follows a photo from the
// gateway to the group folder through the media service: nothing is
// downloaded on receipt; a day later its CDN link has expired, and the
// first fetch refreshes it and downloads once; the second is served from
// the cache; the token reaches neither the CDN nor the group's files.
func TestFetchAfterExpiryRefreshesThenDownloadsOnce(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	jpeg := append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), bytes.Repeat([]byte("p"), 8192)...)
	in, atts := h.post(t, discordfake.Message{Content: "<@" + discordfake.BotUserID + "> what is in it?",
		Attachments: []discordfake.Attachment{{Name: "photo.jpg", ContentType: "image/jpeg", Body: jpeg}}})
	if len(in.Refs) != 1 || h.fake.CDNHits(atts[0]) != 0 {
		t.Fatalf("refs %d, downloads on receipt %d", len(in.Refs), h.fake.CDNHits(atts[0]))
	}
	h.fake.ExpireLinks()

	set, err := groups.NewSet("Andy", []groups.Group{
		{Folder: "study", Name: "Study", Chat: chatChannel},
		{Folder: "other", Name: "Other", Chat: chatDM},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := set.ByFolder("study")
	other, _ := set.ByFolder("other")
	cache, err := mediaregistry.OpenCache(filepath.Join(t.TempDir(), "media"), h.st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	groupsDir := t.TempDir()
	svc := media.New(media.Options{Registry: h.reg, Cache: cache, Groups: set, GroupsDir: groupsDir,
		Channels: map[string]channels.Channel{Name: h.dc}, MaxDownloadBytes: 1 << 20, Log: quiet})
	for i, wantCached := range []bool{false, true} {
		res, ierr := svc.Fetch(h.ctx, g, in.Refs[0].ID)
		if ierr != nil {
			t.Fatalf("fetch %d: %v", i, ierr)
		}
		got, err := os.ReadFile(filepath.Join(groupsDir, g.Folder, res.Path))
		if err != nil || !bytes.Equal(got, jpeg) || res.Cached != wantCached || res.MIME != "image/jpeg" {
			t.Fatalf("fetch %d: %+v, read %d bytes, %v", i, res, len(got), err)
		}
	}
	if n := h.fake.CDNHits(atts[0]); n != 1 {
		t.Errorf("downloads = %d, want exactly 1", n)
	}
	if n := h.fake.Refreshes(); n != 1 {
		t.Errorf("refreshes = %d, want 1 (the link had expired)", n)
	}
	if _, ierr := svc.Fetch(h.ctx, other, in.Refs[0].ID); ierr == nil || ierr.Code != tools.CodeNotFound {
		t.Errorf("fetch from another group: %v, want not_found", ierr)
	}
	_ = filepath.WalkDir(groupsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(discordfake.Token)) {
				t.Errorf("%s contains the bot token", p)
			}
		}
		return nil
	})
}

// TestDownloadPaths covers how a fresh link is found and what each
// failure means to the media service.
func TestDownloadPaths(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	body := []byte("%PDF-1.4 the notes")
	in, atts := h.post(t, discordfake.Message{Attachments: []discordfake.Attachment{{Name: "notes.pdf", ContentType: "application/pdf", Body: body}}})
	ref := in.Refs[0]
	read := func(t *testing.T) ([]byte, error) {
		t.Helper()
		rc, size, err := h.dc.Download(h.ctx, &ref)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err == nil && size != int64(len(b)) {
			t.Errorf("size %d for %d bytes", size, len(b))
		}
		return b, err
	}

	t.Run("refresh endpoint down: the message is read again", func(t *testing.T) {
		h.fake.ExpireLinks()
		h.fake.DisableRefresh(true)
		defer h.fake.DisableRefresh(false)
		got, err := read(t)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("neither refresh nor history: forbidden", func(t *testing.T) {
		h.fake.DisableRefresh(true)
		h.fake.ForbidMessageReads(true)
		defer h.fake.DisableRefresh(false)
		defer h.fake.ForbidMessageReads(false)
		if _, err := read(t); !errors.Is(err, channels.ErrForbidden) {
			t.Fatalf("err = %v, want ErrForbidden", err)
		}
	})
	t.Run("a ref without attachment ids", func(t *testing.T) {
		bad := ref
		bad.Private = []byte(`{"c":"1"}`)
		if _, _, err := h.dc.Download(h.ctx, &bad); !errors.Is(err, channels.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("deleted message: unavailable", func(t *testing.T) {
		gone := ref
		hd := decodeHandle(gone.Private)
		hd.Message, hd.URL = "123", ""
		gone.Private = encodeHandle(hd)
		if _, _, err := h.dc.Download(h.ctx, &gone); !errors.Is(err, channels.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	if n := h.fake.CDNHits(atts[0]); n != 1 {
		t.Errorf("CDN downloads = %d, want 1", n)
	}
	for _, r := range h.fake.Requests() {
		if strings.Contains(r.Path, "cdn") {
			t.Errorf("a CDN request went through the API client: %s", r.Path)
		}
	}
}

// TestFetchSizeCap: the media service stops a download over its cap.
func TestFetchSizeCap(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	big := bytes.Repeat([]byte("z"), 64<<10)
	in, _ := h.post(t, discordfake.Message{Attachments: []discordfake.Attachment{{Name: "big.bin", ContentType: "application/octet-stream", Body: big}}})
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "study", Name: "Study", Chat: chatChannel}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := set.ByFolder("study")
	cache, err := mediaregistry.OpenCache(filepath.Join(t.TempDir(), "media"), h.st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	svc := media.New(media.Options{Registry: h.reg, Cache: cache, Groups: set, GroupsDir: t.TempDir(),
		Channels: map[string]channels.Channel{Name: h.dc}, MaxDownloadBytes: 16 << 10, Log: quiet})
	if _, ierr := svc.Fetch(h.ctx, g, in.Refs[0].ID); ierr == nil || ierr.Code != tools.CodeTooLarge {
		t.Fatalf("fetch of 64 KB with a 16 KB cap: %v", ierr)
	}
}

// A ref keeps the bare address: no signature, no empty query (a link
// ending in "?" once kept it, found by FuzzReceiveMessage), no fragment.
func TestStripQuery(t *testing.T) {
	for in, want := range map[string]string{
		"https://cdn.discordapp.com/attachments/1/2/a.png?ex=1&is=2&hm=3": "https://cdn.discordapp.com/attachments/1/2/a.png",
		"https://cdn.discordapp.com/attachments/1/2/a.png?":               "https://cdn.discordapp.com/attachments/1/2/a.png",
		"http://&?":                      "http://&",
		"https://cdn.example/a.png#frag": "https://cdn.example/a.png",
		"ftp://cdn.example/a.png":        "",
		"/relative/a.png":                "",
	} {
		if got := stripQuery(in); got != want {
			t.Errorf("stripQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
