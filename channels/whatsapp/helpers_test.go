package whatsapp

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// fakeClient stands in for *whatsmeow.Client. Media lives in a map from
// direct path to bytes, like the CDN; an entry with a nil value has
// expired (403). The retry hook plays the phone.
type fakeClient struct {
	mu       sync.Mutex
	cdn      map[string][]byte
	onRetry  func(info *types.MessageInfo, mediaKey []byte)
	sent     []*waE2E.Message
	sentTo   []types.JID
	uploads  [][]byte
	presence []types.ChatPresence
	nextID   int

	downloads, retryReceipts int
}

var _ client = (*fakeClient)(nil)

func (f *fakeClient) DownloadToFile(ctx context.Context, msg whatsmeow.DownloadableMessage, file whatsmeow.File) error {
	f.mu.Lock()
	f.downloads++
	path := msg.GetDirectPath()
	data, ok := f.cdn[path]
	f.mu.Unlock()
	switch {
	case path == "":
		return whatsmeow.ErrNoURLPresent
	case !ok:
		return whatsmeow.ErrMediaDownloadFailedWith404
	case data == nil:
		return whatsmeow.ErrMediaDownloadFailedWith403
	}
	_, err := file.Write(data)
	return err
}

func (f *fakeClient) SendMediaRetryReceipt(ctx context.Context, info *types.MessageInfo, mediaKey []byte) error {
	f.mu.Lock()
	f.retryReceipts++
	hook := f.onRetry
	f.mu.Unlock()
	if hook == nil {
		return nil // the phone never answers
	}
	go hook(info, mediaKey)
	return nil
}

func (f *fakeClient) SendMessage(ctx context.Context, to types.JID, m *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.sent = append(f.sent, m)
	f.sentTo = append(f.sentTo, to)
	return whatsmeow.SendResponse{ID: types.MessageID("3EB0SENT" + string(rune('0'+f.nextID))), Timestamp: time.Now()}, nil
}

func (f *fakeClient) UploadReader(ctx context.Context, r io.Reader, tmp io.ReadWriteSeeker, mt whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return whatsmeow.UploadResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uploads = append(f.uploads, b)
	return whatsmeow.UploadResponse{URL: "https://mmg.example/x", DirectPath: "/v/t62/up", MediaKey: []byte("k"), FileLength: uint64(len(b))}, nil
}

func (f *fakeClient) SendChatPresence(ctx context.Context, jid types.JID, state types.ChatPresence, media types.ChatPresenceMedia) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.presence = append(f.presence, state)
	return nil
}

// mapLIDs is a LID store with a fixed map.
type mapLIDs map[types.JID]types.JID

func (m mapLIDs) GetPNForLID(_ context.Context, lid types.JID) (types.JID, error) {
	if pn, ok := m[lid]; ok {
		return pn, nil
	}
	return types.JID{}, errors.New("unknown lid")
}

type testEnv struct {
	w     *WhatsApp
	sink  *chantest.Sink
	st    *store.Store
	reg   *mediaregistry.Registry
	cli   *fakeClient
	dbDir string
}

var (
	groupJID = types.NewJID("120363000000000001", types.GroupServer)
	groupID  = "whatsapp:120363000000000001@g.us"
	aliceJID = types.NewJID("4917012345678", types.DefaultUserServer)
	botJID   = types.NewJID("4915550000000", types.DefaultUserServer)
	botLID   = types.NewJID("99887766554433", types.HiddenUserServer)
	msgTime  = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

// newTestChannel builds a channel over a real store and registry with a
// fake client installed, as if Start had connected.
func newTestChannel(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := mediaregistry.New(st.DB, 30*time.Minute)
	sink := chantest.NewSink(groupID, "whatsapp:4917012345678@s.whatsapp.net")
	w, err := New(cfg, SessionFor(cfg, store.DefaultConfig(), dir), channels.Env{
		Registry:      reg,
		Sink:          sink,
		Log:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		AssistantName: "Andy",
	})
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeClient{cdn: map[string][]byte{}}
	w.cli = fc
	w.own = []types.JID{botJID, botLID}
	env := &testEnv{w: w, sink: sink, st: st, reg: reg, cli: fc, dbDir: dir}
	// Whatever a test made the channel deliver keeps the invariants every
	// channel keeps. Runs before the store closes (cleanups run last-first).
	t.Cleanup(func() {
		for _, in := range sink.Inbounds() {
			chantest.CheckInbound(t, reg, in, sink.Registered(in.ChatID))
		}
	})
	return env
}

// receive runs evt through the receive path as whatsmeow's event handler
// would, without the sink, and checks what would be delivered.
func (e *testEnv) receive(t testing.TB, evt *events.Message) (channels.Inbound, bool, error) {
	t.Helper()
	in, ok, err := e.w.inbound(context.Background(), evt)
	if ok {
		chantest.CheckInbound(t, e.reg, in, e.sink.Registered(in.ChatID))
	}
	return in, ok, err
}

// groupMsg is a message from Alice in the test group.
func groupMsg(id string, m *waE2E.Message) *events.Message {
	return &events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: groupJID, Sender: aliceJID, IsGroup: true},
			ID:            id,
			PushName:      "Alice",
			Timestamp:     msgTime,
		},
		Message: m,
	}
}
