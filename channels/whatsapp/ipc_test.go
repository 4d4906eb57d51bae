package whatsapp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/media/mediahost"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/tools"
)

// TestFetchMediaThroughIPC: a WhatsApp image is received (metadata only),
// then the agent side asks for it over the file protocol; the host's
// media service calls this channel's DownloadTo, which runs whatsmeow's
// real download+decrypt straight into the cache against a loopback CDN.
// The CDN sees no request until fetch_media.
func TestFetchMediaThroughIPC(t *testing.T) {
	plain := make([]byte, 200_000)
	rand.Read(plain)
	copy(plain, "\xff\xd8\xff\xe0\x00\x10JFIF\x00") // sniffs as JPEG
	key := make([]byte, 32)
	rand.Read(key)
	enc, encSHA, plainSHA := encryptMedia(t, plain, key, "WhatsApp Image Keys")
	const directPath = "/v/t62.7118-24/55555_66666_n.enc?ccb=11-4&oh=01_Q5Aa&oe=68A1B2C3&_nc_sid=5e03e0"
	var hits atomic.Int32
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/v/t62.7118-24/55555_66666_n.enc" {
			http.NotFound(w, r)
			return
		}
		w.Write(enc)
	}))
	defer cdn.Close()

	env := newTestChannel(t, Config{})
	wm, _ := realClient(t, env, cdn)
	env.w.cli = wm

	// Receive.
	evt := groupMsg("3EB0IPC", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
		URL: proto.String(cdn.URL + "/o1/v/t62.7118-24/stale.enc"), DirectPath: proto.String(directPath),
		Mimetype: proto.String("image/jpeg"), Caption: proto.String("holiday"), FileLength: proto.Uint64(uint64(len(plain))),
		MediaKey: key, FileSHA256: plainSHA, FileEncSHA256: encSHA,
	}})
	env.w.handleEvent(evt)
	got := env.sink.Inbounds()
	if len(got) != 1 || len(got[0].Refs) != 1 {
		t.Fatalf("delivered %+v", got)
	}
	refID := got[0].Refs[0].ID
	if hits.Load() != 0 {
		t.Fatalf("CDN hit %d times at receive time; downloads must be lazy", hits.Load())
	}

	// A second ref whose server copy expired and whose phone never answers.
	env.w.retryTimeout = 100 * time.Millisecond
	expiredEvt := groupMsg("3EB0GONE", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
		DirectPath: proto.String("/gone"), Mimetype: proto.String("image/jpeg"), MediaKey: key,
	}})
	fake := &fakeClient{cdn: map[string][]byte{"/gone": nil}}
	env.w.handleEvent(expiredEvt)
	goneID := env.sink.Inbounds()[1].Refs[0].ID

	// Host side.
	dir := t.TempDir()
	ipcRoot, groupsDir := filepath.Join(dir, "ipc"), filepath.Join(dir, "groups")
	set, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: groupID, RequiresTrigger: true}})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := mediaregistry.OpenCache(filepath.Join(dir, "media"), env.st.DB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := ipc.NewHost(ipc.HostOptions{Types: tools.IPCTypes(), Root: ipcRoot, Groups: []string{"family"}, Rescan: 100 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: mediahost.New(mediahost.Options{Groups: set, Media: media.New(media.Options{Registry: env.reg, Cache: cache, Groups: set, GroupsDir: groupsDir,
			Channels: map[string]channels.Channel{channelName: env.w}, MaxDownloadBytes: 10 << 20})})})
	if err := host.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer host.Wait()
	defer cancel()
	cl := ipc.NewClient(ipc.GroupLayout(ipcRoot, "family"), tools.IPCTypes())
	defer cl.Close()
	call := func(args, res any) error {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		return cl.Call(cctx, tools.FetchMedia, args, res)
	}

	var res tools.FetchMediaResult
	if err := call(tools.FetchMediaArgs{MediaRef: refID}, &res); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(groupsDir, "family", res.Path))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved, plain) || res.MIME != "image/jpeg" || res.Size != int64(len(plain)) || res.Caption != "holiday" {
		t.Errorf("fetched %s (%d bytes, %s), want the decrypted fixture", res.Path, len(saved), res.MIME)
	}
	if hits.Load() != 1 {
		t.Errorf("CDN hits = %d, want 1", hits.Load())
	}
	// Keys never reach the agent side.
	filepath.WalkDir(ipcRoot, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, key) || strings.Contains(string(b), base64.StdEncoding.EncodeToString(key)) {
				t.Errorf("%s holds media key material", p)
			}
		}
		return nil
	})

	env.w.cli = fake
	start := time.Now()
	err = call(tools.FetchMediaArgs{MediaRef: goneID}, &res)
	var ie *tools.Error
	if !errors.As(err, &ie) || ie.Code != tools.CodeDownloadFailed || !strings.Contains(ie.Message, "did not re-upload") {
		t.Errorf("expired media: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("expired media took %v", time.Since(start))
	}
	if fake.retryReceipts != 1 {
		t.Errorf("retry receipts = %d", fake.retryReceipts)
	}
}
