package slack

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// Files that lie about themselves, from a real file_share event through
// the media service's fetch: the sniffed type names the file, and a
// body larger than its declared size stops at the cap with nothing partial
// left behind.
func TestHostileDownloads(t *testing.T) {
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, image.NewRGBA(image.Rect(0, 0, 3, 3))); err != nil {
		t.Fatal(err)
	}
	const kb = 1 << 10
	cases := []struct {
		name, file, mime string
		declared         int
		body             []byte
		code             string
		wantMIME, ext    string
	}{
		{"png declared as pdf", "invoice.pdf", "application/pdf", pngBuf.Len(), pngBuf.Bytes(), "", "image/png", ".png"},
		{"body over the cap though 1KB declared", "small.pdf", "application/pdf", kb, bytes.Repeat([]byte("A"), 512*kb), tools.CodeTooLarge, "", ""},
		{"no declared size, body over the cap", "x.bin", "", 0, bytes.Repeat([]byte("A"), 512*kb), tools.CodeTooLarge, "", ""},
	}
	h := newHarness(t, nil)
	h.start(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := h.fake.HostFile(c.file, c.mime, c.body)
			h.send(t, message(testChannel, human, "", map[string]any{"subtype": "file_share", "files": []map[string]any{
				{"id": "F0LIE00" + string(rune('1'+i)), "name": c.file, "mimetype": c.mime, "size": c.declared, "url_private_download": u}}}))
			in := h.next(t)
			if len(in.Refs) != 1 {
				t.Fatalf("refs = %d", len(in.Refs))
			}

			set, err := groups.NewSet("Andy", []groups.Group{{Folder: "general", Name: "General", Chat: "slack:" + testChannel}})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := set.ByFolder("general")
			cacheDir := filepath.Join(t.TempDir(), "media")
			cache, err := mediaregistry.OpenCache(cacheDir, h.st.DB, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			groupsDir := t.TempDir()
			svc := media.New(media.Options{Registry: h.reg, Cache: cache, Groups: set, GroupsDir: groupsDir,
				Channels: map[string]channels.Channel{"slack": h.sl}, MaxDownloadBytes: 64 * kb})
			res, ierr := svc.Fetch(h.ctx, g, in.Refs[0].ID)

			var left []string
			for _, dir := range []string{groupsDir, cacheDir} {
				_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() {
						left = append(left, p)
					}
					return nil
				})
			}
			if c.code != "" {
				if ierr == nil || ierr.Code != c.code {
					t.Fatalf("fetch = %+v, %v; want %s", res, ierr, c.code)
				}
				if len(left) != 0 {
					t.Errorf("partial files left: %v", left)
				}
				if strings.Contains(ierr.Message, slackfake.BotToken) {
					t.Errorf("token in error: %s", ierr.Message)
				}
				return
			}
			if ierr != nil {
				t.Fatal(ierr)
			}
			if res.MIME != c.wantMIME || !strings.HasSuffix(res.Path, c.ext) || res.Declared != c.mime {
				t.Errorf("mime %s (declared %s) path %s, want %s *%s", res.MIME, res.Declared, res.Path, c.wantMIME, c.ext)
			}
		})
	}
}
