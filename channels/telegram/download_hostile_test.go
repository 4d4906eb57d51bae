package telegram

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// ipcFetch is the media service's fetch over this harness's channel,
// registry and a fresh cache, as fetch_media runs it; it returns the group
// folder and cache dir so tests can look for leftovers.
func ipcFetch(t *testing.T, h *harness, max int64) (fetch func(ref string) (*tools.FetchMediaResult, *tools.Error), groupDir, cacheDir string) {
	t.Helper()
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Name: "Family", Chat: ChatID(groupID)}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := set.ByFolder("family")
	cacheDir = filepath.Join(t.TempDir(), "media")
	cache, err := mediaregistry.OpenCache(cacheDir, h.st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	groupsDir := t.TempDir()
	svc := media.New(media.Options{Registry: h.reg, Cache: cache, Groups: set, GroupsDir: groupsDir,
		Channels: map[string]channels.Channel{Name: h.tg}, MaxDownloadBytes: max})
	return func(ref string) (*tools.FetchMediaResult, *tools.Error) {
		return svc.Fetch(context.Background(), g, ref)
	}, filepath.Join(groupsDir, g.Folder), cacheDir
}

// files lists every regular file under dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// Media that lies about itself, fetched through the real channel download
// and the media service's fetch: the sniffed type wins and names the
// file, and a body larger than declared is cut at the cap with nothing
// partial left behind.
func TestHostileDownloads(t *testing.T) {
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, image.NewRGBA(image.Rect(0, 0, 3, 3))); err != nil {
		t.Fatal(err)
	}
	const kb = 1 << 10
	cases := []struct {
		name      string
		doc       models.Document
		served    telegramtest.File
		channelDL int64 // channels.telegram.max_download_bytes
		hostMax   int64 // media.max_download_bytes
		code      string
		mime, ext string
	}{
		{"png declared as pdf", models.Document{FileID: "BQ-lie", FileName: "invoice.pdf", MimeType: "application/pdf", FileSize: int64(pngBuf.Len())},
			telegramtest.File{ID: "BQ-lie", Data: pngBuf.Bytes()}, 0, 1 << 20, "", "image/png", ".png"},
		{"html declared as jpeg", models.Document{FileID: "BQ-html", FileName: "photo.jpg", MimeType: "image/jpeg"},
			telegramtest.File{ID: "BQ-html", Data: []byte("<!DOCTYPE html><script>alert(1)</script>")}, 0, 1 << 20, "", "text/html", ".txt"},
		{"body over the host cap though 1KB declared", models.Document{FileID: "BQ-big", FileName: "small.pdf", MimeType: "application/pdf", FileSize: kb},
			telegramtest.File{ID: "BQ-big", Data: bytes.Repeat([]byte("A"), 512*kb), Size: kb}, 0, 64 * kb, tools.CodeTooLarge, "", ""},
		{"body over the channel cap though 1KB declared", models.Document{FileID: "BQ-big2", FileName: "small.pdf", MimeType: "application/pdf", FileSize: kb},
			telegramtest.File{ID: "BQ-big2", Data: bytes.Repeat([]byte("A"), 512*kb), Size: kb}, 64 * kb, 1 << 20, tools.CodeTooLarge, "", ""},
		{"size unknown everywhere, body over the cap", models.Document{FileID: "BQ-big3", FileName: "x.bin"},
			telegramtest.File{ID: "BQ-big3", Data: bytes.Repeat([]byte("A"), 512*kb)}, 0, 64 * kb, tools.CodeTooLarge, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) {
				if c.channelDL > 0 {
					cfg.MaxDownloadBytes = c.channelDL
				}
			})
			h.fake.AddFile(c.served)
			doc := c.doc
			ref := receiveRef(t, h, mediaMsg(600, func(m *models.Message) { m.Document = &doc }))
			fetch, groupDir, cacheDir := ipcFetch(t, h, c.hostMax)
			res, ierr := fetch(ref.ID)
			if c.code != "" {
				if ierr == nil || ierr.Code != c.code {
					t.Fatalf("fetch = %+v, %v; want %s", res, ierr, c.code)
				}
				if fs := append(files(t, groupDir), files(t, cacheDir)...); len(fs) != 0 {
					t.Errorf("partial files left: %v", fs)
				}
				if strings.Contains(ierr.Message, telegramtest.Token) {
					t.Errorf("token in error: %s", ierr.Message)
				}
				return
			}
			if ierr != nil {
				t.Fatal(ierr)
			}
			if res.MIME != c.mime || !strings.HasSuffix(res.Path, c.ext) || res.Declared != c.doc.MimeType {
				t.Errorf("mime %s (declared %s) path %s, want %s *%s", res.MIME, res.Declared, res.Path, c.mime, c.ext)
			}
			got, err := os.ReadFile(filepath.Join(groupDir, filepath.FromSlash(res.Path)))
			if err != nil || !bytes.Equal(got, c.served.Data) {
				t.Errorf("materialised %d bytes (%v), served %d", len(got), err, len(c.served.Data))
			}
		})
	}
}
