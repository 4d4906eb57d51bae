package media_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// rig is a running host over a real store, registry and cache, with a fake
// Telegram channel.
type rig struct {
	t         testing.TB
	dir       string
	ipcRoot   string
	groupsDir string
	cacheDir  string
	store     *store.Store
	reg       *mediaregistry.Registry
	cache     *mediaregistry.Cache
	tg        *chantest.Channel
	set       *groups.Set
	host      *ipc.Host
	cancel    context.CancelFunc
	clock     *clock.Fake
	max       int64
	tune      func(*media.Options)
	gen       func(*rig) *media.Generation // media generation over the rig's store and clock
	svc       *media.Service
}

const maxDownload = 1 << 20

func newRig(t testing.TB) *rig { return newRigMax(t, maxDownload) }

func newRigMax(t testing.TB, max int64) *rig { return newRigWith(t, max, nil) }

// newRigWith lets a test change the service's options before it starts.
func newRigWith(t testing.TB, max int64, tune func(*media.Options)) *rig {
	return newRigGen(t, max, tune, nil)
}

// newRigGen is newRigWith with media generation.
func newRigGen(t testing.TB, max int64, tune func(*media.Options), gen func(*rig) *media.Generation) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, dir: dir, ipcRoot: filepath.Join(dir, "data", "ipc"), groupsDir: filepath.Join(dir, "groups"),
		cacheDir: filepath.Join(dir, "data", "media"), tg: chantest.New("telegram"), clock: clock.NewFake(time.Now()), max: max, tune: tune, gen: gen}
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	r.reg = mediaregistry.New(st.DB, 30*time.Minute)
	r.reg.SetClock(r.clock.Now)
	r.set, err = groups.NewSet("Andy", []groups.Group{
		{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true},
		{Folder: "work", Chat: "telegram:-200", RequiresTrigger: true},
		{Folder: "main", Chat: "telegram:1", Main: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.start()
	return r
}

func (r *rig) start() {
	r.t.Helper()
	cache, err := mediaregistry.OpenCache(r.cacheDir, r.store.DB, 24*time.Hour)
	if err != nil {
		r.t.Fatal(err)
	}
	r.cache = cache
	o := media.Options{Registry: r.reg, Cache: cache, Channels: map[string]channels.Channel{"telegram": r.tg},
		Groups: r.set, GroupsDir: r.groupsDir, MaxDownloadBytes: r.max, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if r.tune != nil {
		r.tune(&o)
	}
	if r.gen != nil {
		o.Generation = r.gen(r)
	}
	svc := media.New(o)
	r.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.host = ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: r.ipcRoot, Groups: folders(r.set), Handler: svc, Rescan: 200 * time.Millisecond})
	if err := r.host.Start(ctx); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(r.stop)
}

func folders(set *groups.Set) []string {
	var out []string
	for _, g := range set.All() {
		out = append(out, g.Folder)
	}
	return out
}

func (r *rig) stop() {
	r.cancel()
	r.host.Wait()
}

func (r *rig) client(folder string) *ipc.Client {
	c := ipc.NewClient(ipc.GroupLayout(r.ipcRoot, folder), tools.IPCTypes())
	r.t.Cleanup(func() { c.Close() })
	return c
}

func (r *rig) register(chat string, ref mediaregistry.MediaReference, m chantest.Media) string {
	r.t.Helper()
	ref.Chat = chat
	if ref.Kind == "" {
		ref.Kind = mediaregistry.Image
	}
	if ref.Private == nil {
		ref.Private = []byte("file-" + ref.FileName + time.Now().String())
	}
	if err := r.reg.Register(context.Background(), &ref); err != nil {
		r.t.Fatal(err)
	}
	r.tg.Serve(string(ref.Private), m)
	return ref.ID
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func call(t *testing.T, c *ipc.Client, typ string, args, result any) error {
	t.Helper()
	// A hang guard, not a verdict: generous for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.Call(ctx, typ, args, result)
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	if e.Message == "" {
		t.Errorf("error %s has no message", code)
	}
}

func TestFetchOnceThenCached(t *testing.T) {
	r := newRig(t)
	img := pngBytes(t, 40, 30)
	id := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "cat.png", MIME: "image/png", Size: int64(len(img))}, chantest.Media{Data: img})
	c := r.client("family")
	if r.tg.Downloads() != 0 {
		t.Fatal("downloaded at registration")
	}
	var res ipc.FetchMediaResult
	if err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, &res); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r.groupsDir, "family", res.Path))
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("materialised file: %v, equal=%v", err, bytes.Equal(got, img))
	}
	if res.MIME != "image/png" || res.Size != int64(len(img)) || res.Cached || !strings.HasPrefix(res.Path, "media/"+id) {
		t.Errorf("result = %+v", res)
	}
	var again ipc.FetchMediaResult
	if err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: "ref:" + id}, &again); err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Path != res.Path || r.tg.Downloads() != 1 {
		t.Errorf("second fetch: cached=%v downloads=%d", again.Cached, r.tg.Downloads())
	}
	// Nothing secret reached the IPC or group folders.
	assertNoSecret(t, r, "file-cat.png")
}

func assertNoSecret(t *testing.T, r *rig, secret string) {
	t.Helper()
	for _, root := range []string{r.ipcRoot, r.groupsDir} {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("%s contains channel-private data", p)
				}
			}
			return nil
		})
	}
}

func TestSlowDownloadDoesNotBlockOtherGroup(t *testing.T) {
	r := newRig(t)
	gate := make(chan struct{})
	defer close(gate)
	slow := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "slow.png"}, chantest.Media{Data: []byte("x"), Gate: gate})
	fast := r.register("telegram:-200", mediaregistry.MediaReference{FileName: "fast.png"}, chantest.Media{Data: pngBytes(t, 2, 2)})
	go call(t, r.client("family"), ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: slow}, nil)
	testwait.Until(t, "r.tg.Downloads() == 1", func() bool { return r.tg.Downloads() == 1 }) // the slow one holds the network
	// The slow download never ends while this runs: only blocking can
	// make this call fail (at its hang guard).
	if err := call(t, r.client("work"), ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: fast}, nil); err != nil {
		t.Fatalf("a slow download in one group blocked another group: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	r := newRig(t)
	c := r.client("family")
	other := r.register("telegram:-200", mediaregistry.MediaReference{FileName: "theirs.png"}, chantest.Media{Data: []byte("x")})
	old := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "old.png"}, chantest.Media{Data: []byte("x")})
	declaredHuge := r.register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "huge.mp4", Size: 1 << 30},
		chantest.Media{Data: []byte("x")})
	var streamed int64
	var smu sync.Mutex
	endless := r.register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "endless.mp4"},
		chantest.Media{Reader: func() io.ReadCloser {
			return io.NopCloser(&countingZero{n: 1 << 30, count: &streamed, mu: &smu})
		}})
	failing := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "gone.png"}, chantest.Media{Err: channels.ErrUnavailable})

	r.clock.Advance(0)
	tests := []struct {
		name string
		ref  string
		code string
		prep func()
	}{
		{"unknown ref", "tg_AAAAAAAAAAAA", ipc.CodeNotFound, nil},
		{"garbage ref", "../../etc/passwd", ipc.CodeNotFound, nil},
		{"empty ref", "", ipc.CodeBadRequest, nil},
		{"another group's ref", other, ipc.CodeNotFound, nil},
		{"declared over the cap", declaredHuge, ipc.CodeTooLarge, nil},
		{"stream over the cap", endless, ipc.CodeTooLarge, nil},
		{"channel lost it", failing, ipc.CodeDownloadFailed, nil},
		{"expired ref", old, ipc.CodeExpired, func() { r.clock.Advance(31 * time.Minute) }},
	}
	before := r.tg.Downloads()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prep != nil {
				tt.prep()
			}
			err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: tt.ref}, nil)
			wantCode(t, err, tt.code)
		})
	}
	// Only the over-cap stream and the failing channel reached the network.
	if got := r.tg.Downloads() - before; got != 2 {
		t.Errorf("downloads = %d, want 2 (stream over cap, channel failure)", got)
	}
	smu.Lock()
	if streamed > maxDownload+64<<10 {
		t.Errorf("read %d bytes of an over-cap stream, cap %d", streamed, maxDownload)
	}
	smu.Unlock()
	entries, _ := os.ReadDir(filepath.Join(r.cacheDir, "tmp"))
	if len(entries) != 0 {
		t.Errorf("partial files left in the cache: %v", entries)
	}
	all, _ := os.ReadDir(r.cacheDir)
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
	r := newRig(t)
	c := r.client("family")
	img := pngBytes(t, 3, 3)
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
			id := r.register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Document, FileName: tt.file, MIME: tt.declared},
				chantest.Media{Data: tt.data})
			var res ipc.FetchMediaResult
			if err := call(t, c, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, &res); err != nil {
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
	r := newRig(t)
	r.register("telegram:-100", mediaregistry.MediaReference{FileName: "a.jpg", MIME: "image/jpeg", Sender: "Ann", Caption: "first"}, chantest.Media{})
	r.clock.Advance(time.Second)
	r.register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Voice, MIME: "audio/ogg", Duration: 12 * time.Second}, chantest.Media{})
	r.register("telegram:-200", mediaregistry.MediaReference{FileName: "theirs.jpg"}, chantest.Media{})
	c := r.client("family")
	var res ipc.ListMediaResult
	if err := call(t, c, ipc.TypeListMedia, ipc.ListMediaArgs{}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.Items[0].Kind != "Voice" || res.Items[0].Duration != "12s" || res.Items[1].Caption != "first" || res.Items[1].Sender != "Ann" {
		t.Fatalf("items = %+v", res.Items)
	}
	if err := call(t, c, ipc.TypeListMedia, ipc.ListMediaArgs{Kind: "image"}, &res); err != nil || len(res.Items) != 1 {
		t.Fatalf("kind filter: %v %+v", err, res.Items)
	}
	wantCode(t, call(t, c, ipc.TypeListMedia, ipc.ListMediaArgs{Kind: "hologram"}, nil), ipc.CodeBadRequest)
	assertNoSecret(t, r, "file-a.jpg")
}

func TestSend(t *testing.T) {
	r := newRig(t)
	var res ipc.SendResult
	if err := call(t, r.client("family"), ipc.TypeSendMessage, ipc.SendMessageArgs{Text: "hello"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Chat != "telegram:-100" || len(res.MessageIDs) != 1 {
		t.Errorf("send result = %+v", res)
	}
	wantCode(t, call(t, r.client("family"), ipc.TypeSendMessage, ipc.SendMessageArgs{Text: "psst", Chat: "telegram:-200"}, nil), ipc.CodeForbidden)
	if err := call(t, r.client("main"), ipc.TypeSendMessage, ipc.SendMessageArgs{Text: "from main", Chat: "telegram:-200"}, &res); err != nil || res.Chat != "telegram:-200" {
		t.Fatalf("main group send to another chat: %v %+v", err, res)
	}
	wantCode(t, call(t, r.client("main"), ipc.TypeSendMessage, ipc.SendMessageArgs{Text: "x", Chat: "telegram:999"}, nil), ipc.CodeForbidden)
	wantCode(t, call(t, r.client("family"), ipc.TypeSendMessage, ipc.SendMessageArgs{Text: " "}, nil), ipc.CodeBadRequest)
	r.tg.FailSends(chantest.ErrBoom)
	wantCode(t, call(t, r.client("family"), ipc.TypeSendMessage, ipc.SendMessageArgs{Text: "lost?"}, nil), ipc.CodeSendFailed)
	r.tg.FailSends(nil)

	sent := r.tg.Sent()
	if len(sent) != 2 || sent[0].Chat != "telegram:-100" || sent[1].Text != "from main" {
		t.Errorf("sent = %+v", sent)
	}

	ws, _ := groups.EnsureWorkspace(r.groupsDir, &groups.Group{Folder: "family"})
	img := pngBytes(t, 4, 4)
	os.WriteFile(filepath.Join(ws.Root, "chart.png"), img, 0o600)
	if err := call(t, r.client("family"), ipc.TypeSendMedia, ipc.SendMediaArgs{Path: "chart.png", Caption: "here"}, &res); err != nil {
		t.Fatal(err)
	}
	files := r.tg.Files()
	if len(files) != 1 || !bytes.Equal(files[0].Data, img) || files[0].MIME != "image/png" || files[0].Caption != "here" {
		t.Errorf("files = %+v", files)
	}
	for _, p := range []string{"../main/MEMORY.md", "/etc/passwd", "~/.ssh/id_rsa", "missing.png"} {
		wantCode(t, call(t, r.client("family"), ipc.TypeSendMedia, ipc.SendMediaArgs{Path: p}, nil), ipc.CodeBadRequest)
	}
}

func TestMalformedRequestsAreQuarantined(t *testing.T) {
	r := newRig(t)
	l := ipc.GroupLayout(r.ipcRoot, "family")
	outside := filepath.Join(r.dir, "outside.json")
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
			r.host.Rescan()
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
				if json.Unmarshal(b, &got) != nil || got.OK || got.Error.Code != ipc.CodeBadRequest {
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
	err := c.Call(ctx, ipc.TypeListMedia, ipc.ListMediaArgs{}, nil)
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
	r := newRig(t)
	gate := make(chan struct{})
	id := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "p.png"}, chantest.Media{Data: pngBytes(t, 5, 5), Gate: gate})
	c := r.client("family")
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res ipc.FetchMediaResult
	go func() { errc <- c.Call(ctx, ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, &res) }()
	testwait.Until(t, "r.tg.Downloads() == 1", func() bool { return r.tg.Downloads() == 1 })
	// Host goes down mid-download; a crash would also leave a partial file.
	r.stop()
	os.WriteFile(filepath.Join(r.cacheDir, "tmp", "dl-crashed"), []byte("half"), 0o600)
	close(gate)
	r.start()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.cacheDir, "tmp", "dl-crashed")); !os.IsNotExist(err) {
		t.Error("partial cache file survived the restart")
	}
	got, _ := os.ReadFile(filepath.Join(r.groupsDir, "family", res.Path))
	if len(got) == 0 {
		t.Error("fetch after restart returned no file")
	}
}

func TestCacheSweep(t *testing.T) {
	r := newRig(t)
	id := r.register("telegram:-100", mediaregistry.MediaReference{FileName: "s.png"}, chantest.Media{Data: pngBytes(t, 6, 6)})
	var res ipc.FetchMediaResult
	if err := call(t, r.client("family"), ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, &res); err != nil {
		t.Fatal(err)
	}
	r.cache.SetClock(func() time.Time { return time.Now().Add(25 * time.Hour) })
	n, err := r.cache.Sweep(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	if _, err := os.Stat(r.cache.Path(res.SHA256)); !os.IsNotExist(err) {
		t.Error("blob survived the sweep")
	}
	// Fetching again downloads again.
	if err := call(t, r.client("family"), ipc.TypeFetchMedia, ipc.FetchMediaArgs{MediaRef: id}, &res); err != nil || res.Cached {
		t.Fatalf("refetch: %v cached=%v", err, res.Cached)
	}
}
