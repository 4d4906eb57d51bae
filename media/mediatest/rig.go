// Package mediatest is the test rig of the media services: a running IPC
// host answering the media tools (media/mediahost over media, links,
// generation and sending) over a real store, registry and cache, with a
// fake Telegram channel. The tests of each service build on it.
package mediatest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/generation"
	"github.com/botd-dev/botd/media/links"
	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/media/sending"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// MaxDownload is the rigs' download cap unless a test sets one.
const MaxDownload = 1 << 20

// Rig is a running host over a real store, registry and cache, with a
// fake Telegram channel and three groups: family (telegram:-100), work
// (telegram:-200) and main (telegram:1, the main group).
type Rig struct {
	T         testing.TB
	Dir       string
	IPCRoot   string
	GroupsDir string
	CacheDir  string
	Store     *store.Store
	Reg       *mediaregistry.Registry
	Cache     *mediaregistry.Cache
	TG        *chantest.Channel
	Set       *groups.Set
	IPC       *ipc.Host
	Clock     *clock.Fake
	Max       int64
	// Tune changes the media service's options before it starts; Web
	// the links service's (and its pages'); Gen gives the generation
	// service its clients and settings over the rig's store and clock
	// (nil: nothing is configured).
	Tune func(*media.Options)
	Web  func(*links.PagesOptions, *links.Options)
	Gen  func(*Rig) generation.Options
	// The services as started, and the host routing the tools to them.
	Media      *media.Service
	Links      *links.Service
	Generation *generation.Service
	Sending    *sending.Service
	Host       *mediahost.Host
	cancel     context.CancelFunc
}

// New is a started rig.
func New(t testing.TB) *Rig { return NewMax(t, MaxDownload) }

// NewMax is a started rig whose downloads are capped at max.
func NewMax(t testing.TB, max int64) *Rig { return NewWith(t, max, nil) }

// NewWith lets a test change the media service's options before it
// starts.
func NewWith(t testing.TB, max int64, tune func(*media.Options)) *Rig {
	return NewGen(t, max, tune, nil)
}

// NewGen is NewWith with media generation.
func NewGen(t testing.TB, max int64, tune func(*media.Options), gen func(*Rig) generation.Options) *Rig {
	t.Helper()
	RegisterNetworks()
	dir := t.TempDir()
	r := &Rig{T: t, Dir: dir, IPCRoot: filepath.Join(dir, "data", "ipc"), GroupsDir: filepath.Join(dir, "groups"),
		CacheDir: filepath.Join(dir, "data", "media"), TG: chantest.New("telegram"), Clock: clock.NewFake(time.Now()), Max: max, Tune: tune, Gen: gen}
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.Store = st
	r.Reg = mediaregistry.New(st.DB, 30*time.Minute)
	r.Reg.SetClock(r.Clock.Now)
	r.Set, err = groups.NewSet("Andy", []groups.Group{
		{Folder: "family", Chat: "telegram:-100", RequiresTrigger: true},
		{Folder: "work", Chat: "telegram:-200", RequiresTrigger: true},
		{Folder: "main", Chat: "telegram:1", Main: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	return r
}

// Start builds the services from the rig's settings and serves them.
func (r *Rig) Start() {
	r.T.Helper()
	cache, err := mediaregistry.OpenCache(r.CacheDir, r.Store.DB, 24*time.Hour)
	if err != nil {
		r.T.Fatal(err)
	}
	r.Cache = cache
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	chans := map[string]channels.Channel{"telegram": r.TG}
	o := media.Options{Registry: r.Reg, Cache: cache, Channels: chans,
		Groups: r.Set, GroupsDir: r.GroupsDir, MaxDownloadBytes: r.Max, Log: log}
	if r.Tune != nil {
		r.Tune(&o)
	}
	po := links.PagesOptions{Registry: r.Reg, Cache: cache, Budget: o.Budget, Meter: o.Meter, Log: log}
	lo := links.Options{Log: log}
	if r.Web != nil {
		r.Web(&po, &lo)
	}
	pages := links.NewPages(po)
	o.Pages = pages
	r.Media = media.New(o)
	lo.Media, lo.Pages = r.Media, pages
	r.Links = links.New(lo)
	r.Sending = sending.New(sending.Options{Channels: chans, Groups: r.Set, GroupsDir: r.GroupsDir, Log: log})
	var g generation.Options
	if r.Gen != nil {
		g = r.Gen(r)
	}
	g.Media, g.Sending, g.Groups, g.GroupsDir, g.Log = r.Media, r.Sending, r.Set, r.GroupsDir, log
	r.Generation = generation.New(g)
	r.Host = mediahost.New(mediahost.Options{Media: r.Media, Links: r.Links, Generation: r.Generation, Sending: r.Sending,
		Groups: r.Set, Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.IPC = ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: r.IPCRoot, Groups: Folders(r.Set), Handler: r.Host, Rescan: 200 * time.Millisecond})
	if err := r.IPC.Start(ctx); err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(r.Stop)
}

// Folders are the folders of set's groups.
func Folders(set *groups.Set) []string {
	var out []string
	for _, g := range set.All() {
		out = append(out, g.Folder)
	}
	return out
}

// Stop stops serving; Start serves again.
func (r *Rig) Stop() {
	r.cancel()
	r.IPC.Wait()
}

// Client is an IPC client of the group whose folder is folder.
func (r *Rig) Client(folder string) *ipc.Client {
	c := ipc.NewClient(ipc.GroupLayout(r.IPCRoot, folder), tools.IPCTypes())
	r.T.Cleanup(func() { c.Close() })
	return c
}

// Register registers ref in chat, served by the fake channel as m, and
// returns its id.
func (r *Rig) Register(chat string, ref mediaregistry.MediaReference, m chantest.Media) string {
	r.T.Helper()
	ref.Chat = chat
	if ref.Kind == "" {
		ref.Kind = mediaregistry.Image
	}
	if ref.Private == nil {
		ref.Private = []byte("file-" + ref.FileName + time.Now().String())
	}
	if err := r.Reg.Register(context.Background(), &ref); err != nil {
		r.T.Fatal(err)
	}
	r.TG.Serve(string(ref.Private), m)
	return ref.ID
}

// PNG is a w×h PNG image.
func PNG(t testing.TB, w, h int) []byte {
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

// Call makes one IPC call.
func Call(t testing.TB, c *ipc.Client, typ string, args, result any) error {
	t.Helper()
	// A hang guard, not a verdict: generous for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.Call(ctx, typ, args, result)
}

// WantCode fails t unless err is a tool error of code, with a message.
func WantCode(t testing.TB, err error, code string) {
	t.Helper()
	var e *tools.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	if e.Message == "" {
		t.Errorf("error %s has no message", code)
	}
}

// AssertNoSecret fails t when a file under the IPC or group folders
// holds secret.
func AssertNoSecret(t testing.TB, r *Rig, secret string) {
	t.Helper()
	for _, root := range []string{r.IPCRoot, r.GroupsDir} {
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
