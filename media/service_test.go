package media_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

func TestFetchOnceThenCached(t *testing.T) {
	r := mediatest.New(t)
	img := mediatest.PNG(t, 40, 30)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "cat.png", MIME: "image/png", Size: int64(len(img))}, chantest.Media{Data: img})
	c := r.Client("family")
	if r.TG.Downloads() != 0 {
		t.Fatal("downloaded at registration")
	}
	var res tools.FetchMediaResult
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r.GroupsDir, "family", res.Path))
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("materialised file: %v, equal=%v", err, bytes.Equal(got, img))
	}
	if res.MIME != "image/png" || res.Size != int64(len(img)) || res.Cached || !strings.HasPrefix(res.Path, "media/"+id) {
		t.Errorf("result = %+v", res)
	}
	var again tools.FetchMediaResult
	if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: "ref:" + id}, &again); err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Path != res.Path || r.TG.Downloads() != 1 {
		t.Errorf("second fetch: cached=%v downloads=%d", again.Cached, r.TG.Downloads())
	}
	// Nothing secret reached the IPC or group folders.
	mediatest.AssertNoSecret(t, r, "file-cat.png")
}

func TestSlowDownloadDoesNotBlockOtherGroup(t *testing.T) {
	r := mediatest.New(t)
	gate := make(chan struct{})
	defer close(gate)
	slow := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "slow.png"}, chantest.Media{Data: []byte("x"), Gate: gate})
	fast := r.Register("telegram:-200", mediaregistry.MediaReference{FileName: "fast.png"}, chantest.Media{Data: mediatest.PNG(t, 2, 2)})
	go mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: slow}, nil)
	testwait.Until(t, "r.TG.Downloads() == 1", func() bool { return r.TG.Downloads() == 1 }) // the slow one holds the network
	// The slow download never ends while this runs: only blocking can
	// make this call fail (at its hang guard).
	if err := mediatest.Call(t, r.Client("work"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: fast}, nil); err != nil {
		t.Fatalf("a slow download in one group blocked another group: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	r := mediatest.New(t)
	c := r.Client("family")
	other := r.Register("telegram:-200", mediaregistry.MediaReference{FileName: "theirs.png"}, chantest.Media{Data: []byte("x")})
	old := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "old.png"}, chantest.Media{Data: []byte("x")})
	declaredHuge := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "huge.mp4", Size: 1 << 30},
		chantest.Media{Data: []byte("x")})
	var streamed int64
	var smu sync.Mutex
	endless := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "endless.mp4"},
		chantest.Media{Reader: func() io.ReadCloser {
			return io.NopCloser(&countingZero{n: 1 << 30, count: &streamed, mu: &smu})
		}})
	failing := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "gone.png"}, chantest.Media{Err: channels.ErrUnavailable})

	r.Clock.Advance(0)
	tests := []struct {
		name string
		ref  string
		code string
		prep func()
	}{
		{"unknown ref", "tg_AAAAAAAAAAAA", tools.CodeNotFound, nil},
		{"garbage ref", "../../etc/passwd", tools.CodeNotFound, nil},
		{"empty ref", "", tools.CodeBadRequest, nil},
		{"another group's ref", other, tools.CodeNotFound, nil},
		{"declared over the cap", declaredHuge, tools.CodeTooLarge, nil},
		{"stream over the cap", endless, tools.CodeTooLarge, nil},
		{"channel lost it", failing, tools.CodeDownloadFailed, nil},
		{"expired ref", old, tools.CodeExpired, func() { r.Clock.Advance(31 * time.Minute) }},
	}
	before := r.TG.Downloads()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prep != nil {
				tt.prep()
			}
			err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: tt.ref}, nil)
			mediatest.WantCode(t, err, tt.code)
		})
	}
	// Only the over-cap stream and the failing channel reached the network.
	if got := r.TG.Downloads() - before; got != 2 {
		t.Errorf("downloads = %d, want 2 (stream over cap, channel failure)", got)
	}
	smu.Lock()
	if streamed > mediatest.MaxDownload+64<<10 {
		t.Errorf("read %d bytes of an over-cap stream, cap %d", streamed, mediatest.MaxDownload)
	}
	smu.Unlock()
	entries, _ := os.ReadDir(filepath.Join(r.CacheDir, "tmp"))
	if len(entries) != 0 {
		t.Errorf("partial files left in the cache: %v", entries)
	}
	all, _ := os.ReadDir(r.CacheDir)
	for _, e := range all {
		if e.Name() != "tmp" {
			t.Errorf("cache holds %s after only refused fetches", e.Name())
		}
	}
}

// countingZero yields n zero bytes and counts what was read.
type countingZero struct {
	n     int64
	count *int64
	mu    *sync.Mutex
}

func (z *countingZero) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	z.n -= int64(len(p))
	z.mu.Lock()
	*z.count += int64(len(p))
	z.mu.Unlock()
	return len(p), nil
}

func TestMIMELiesAreCorrected(t *testing.T) {
	r := mediatest.New(t)
	c := r.Client("family")
	img := mediatest.PNG(t, 3, 3)
	tests := []struct {
		name, file, declared string
		data                 []byte
		wantMIME, wantExt    string
	}{
		{"png named pdf", "invoice.pdf", "application/pdf", img, "image/png", ".png"},
		{"html named jpg", "photo.jpg", "image/jpeg", []byte("<!DOCTYPE html><html><script>alert(1)</script></html>"), "text/html", ".html.txt"},
		{"honest pdf", "doc.pdf", "application/pdf", []byte("%PDF-1.4\n%âãÏÓ\n1 0 obj"), "application/pdf", ".pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: tt.file, MIME: tt.declared},
				chantest.Media{Data: tt.data})
			var res tools.FetchMediaResult
			if err := mediatest.Call(t, c, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
				t.Fatal(err)
			}
			if res.MIME != tt.wantMIME || !strings.HasSuffix(res.Path, tt.wantExt) {
				t.Errorf("mime %s path %s, want %s *%s", res.MIME, res.Path, tt.wantMIME, tt.wantExt)
			}
			if tt.wantMIME != tt.declared && res.Declared != tt.declared {
				t.Errorf("declared = %q", res.Declared)
			}
		})
	}
}

func TestListMedia(t *testing.T) {
	r := mediatest.New(t)
	r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "a.jpg", MIME: "image/jpeg", Sender: "Ann", Caption: "first"}, chantest.Media{})
	r.Clock.Advance(time.Second)
	r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Voice, MIME: "audio/ogg", Duration: 12 * time.Second}, chantest.Media{})
	r.Register("telegram:-200", mediaregistry.MediaReference{FileName: "theirs.jpg"}, chantest.Media{})
	c := r.Client("family")
	var res tools.ListMediaResult
	if err := mediatest.Call(t, c, tools.ListMedia, tools.ListMediaArgs{}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.Items[0].Kind != "Voice" || res.Items[0].Duration != "12s" || res.Items[1].Caption != "first" || res.Items[1].Sender != "Ann" {
		t.Fatalf("items = %+v", res.Items)
	}
	if err := mediatest.Call(t, c, tools.ListMedia, tools.ListMediaArgs{Kind: "image"}, &res); err != nil || len(res.Items) != 1 {
		t.Fatalf("kind filter: %v %+v", err, res.Items)
	}
	mediatest.WantCode(t, mediatest.Call(t, c, tools.ListMedia, tools.ListMediaArgs{Kind: "hologram"}, nil), tools.CodeBadRequest)
	mediatest.AssertNoSecret(t, r, "file-a.jpg")
}

func TestMalformedRequestsAreQuarantined(t *testing.T) {
	r := mediatest.New(t)
	l := ipc.GroupLayout(r.IPCRoot, "family")
	outside := filepath.Join(r.Dir, "outside.json")
	os.WriteFile(outside, []byte(`{"version":1,"id":"link","type":"list_media"}`), 0o600)
	tests := []struct {
		name, file string
		write      func(path string)
		answered   bool
		reason     string
	}{
		{"malformed json", "m1.json", func(p string) { os.WriteFile(p, []byte(`{"version":1,"id":"m1",`), 0o600) }, true, "malformed JSON"},
		{"unknown type", "m2.json", func(p string) { os.WriteFile(p, []byte(`{"version":1,"id":"m2","type":"rm_rf"}`), 0o600) }, true, "unknown request type"},
		{"wrong version", "m3.json", func(p string) { os.WriteFile(p, []byte(`{"version":9,"id":"m3","type":"list_media"}`), 0o600) }, true, "protocol version"},
		{"id mismatch", "m4.json", func(p string) { os.WriteFile(p, []byte(`{"version":1,"id":"other","type":"list_media"}`), 0o600) }, true, "does not match"},
		{"oversize", "m5.json", func(p string) { os.WriteFile(p, bytes.Repeat([]byte(" "), ipc.MaxRequestBytes+1), 0o600) }, true, "over the"},
		{"symlink out", "m6.json", func(p string) { os.Symlink(outside, p) }, true, "not a regular file"},
		{"bad name", "no id here.txt", func(p string) { os.WriteFile(p, []byte(`{}`), 0o600) }, false, "file name"},
		{"unknown field", "m7.json", func(p string) {
			os.WriteFile(p, []byte(`{"version":1,"id":"m7","type":"list_media","group":"work"}`), 0o600)
		}, true, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.write(filepath.Join(l.Requests(), tt.file))
			r.IPC.Rescan()
			reasonPath := filepath.Join(l.Failed(), tt.file+".reason")
			testwait.Until(t, "the failure reason file", func() bool { _, err := os.Stat(reasonPath); return err == nil })
			reason, _ := os.ReadFile(reasonPath)
			if !strings.Contains(string(reason), tt.reason) {
				t.Errorf("reason = %q, want %q", reason, tt.reason)
			}
			if _, err := os.Lstat(filepath.Join(l.Requests(), tt.file)); !os.IsNotExist(err) {
				t.Errorf("request still in requests/: %v", err)
			}
			resp := filepath.Join(l.Responses(), tt.file)
			if tt.answered {
				testwait.Until(t, "the response file", func() bool { _, err := os.Stat(resp); return err == nil })
				var got ipc.Response
				b, _ := os.ReadFile(resp)
				if json.Unmarshal(b, &got) != nil || got.OK || got.Error.Code != tools.CodeBadRequest {
					t.Errorf("response = %s", b)
				}
			}
		})
	}
	if b, _ := os.ReadFile(outside); !bytes.Contains(b, []byte("link")) {
		t.Error("the symlink target was touched")
	}
}

func TestNoHostTimesOut(t *testing.T) {
	dir := t.TempDir()
	c := ipc.NewClient(ipc.GroupLayout(dir, "family"), tools.IPCTypes())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := c.Call(ctx, tools.ListMedia, tools.ListMediaArgs{}, nil)
	if !errors.Is(err, ipc.ErrNoHost) {
		t.Fatalf("err = %v, want ErrNoHost", err)
	}
	left, _ := os.ReadDir(filepath.Join(dir, "family", "requests"))
	if len(left) != 0 {
		t.Errorf("withdrawn request left behind: %v", left)
	}
}

// A request waiting when the host was down (or cut off mid-download) is
// answered after the host starts again, and a crash's partial cache file
// is gone.
func TestRestartAnswersPendingRequest(t *testing.T) {
	r := mediatest.New(t)
	gate := make(chan struct{})
	id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "p.png"}, chantest.Media{Data: mediatest.PNG(t, 5, 5), Gate: gate})
	c := r.Client("family")
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res tools.FetchMediaResult
	go func() { errc <- c.Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res) }()
	testwait.Until(t, "r.TG.Downloads() == 1", func() bool { return r.TG.Downloads() == 1 })
	// Host goes down mid-download; a crash would also leave a partial file.
	r.Stop()
	os.WriteFile(filepath.Join(r.CacheDir, "tmp", "dl-crashed"), []byte("half"), 0o600)
	close(gate)
	r.Start()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.CacheDir, "tmp", "dl-crashed")); !os.IsNotExist(err) {
		t.Error("partial cache file survived the restart")
	}
	got, _ := os.ReadFile(filepath.Join(r.GroupsDir, "family", res.Path))
	if len(got) == 0 {
		t.Error("fetch after restart returned no file")
	}
}

func TestCacheSweep(t *testing.T) {
	r := mediatest.New(t)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "s.png"}, chantest.Media{Data: mediatest.PNG(t, 6, 6)})
	var res tools.FetchMediaResult
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
		t.Fatal(err)
	}
	r.Cache.SetClock(func() time.Time { return time.Now().Add(25 * time.Hour) })
	n, err := r.Cache.Sweep(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	if _, err := os.Stat(r.Cache.Path(res.SHA256)); !os.IsNotExist(err) {
		t.Error("blob survived the sweep")
	}
	// Fetching again downloads again.
	if err := mediatest.Call(t, r.Client("family"), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil || res.Cached {
		t.Fatalf("refetch: %v cached=%v", err, res.Cached)
	}
}
