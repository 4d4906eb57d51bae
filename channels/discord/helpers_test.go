package discord

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// logBuf collects a test's logs so a test can prove the token is not in
// them.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// storeLike makes the sink store what it hears in a real store, like the
// router would.
func storeLike(st *store.Store) func(context.Context, channels.Inbound) error {
	return func(ctx context.Context, in channels.Inbound) error {
		if err := st.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: in.Time}); err != nil {
			return err
		}
		_, err := st.PutMessage(ctx, store.Message{ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID,
			SenderName: in.SenderName, Text: in.Text, Time: in.Time, FromMe: in.FromMe, IsBot: in.IsBot})
		return err
	}
}

type harness struct {
	delivered []channels.Inbound

	fake   *discordfake.Server
	sink   *chantest.Sink
	reg    *mediaregistry.Registry
	st     *store.Store
	dc     *Discord
	logs   *logBuf
	ctx    context.Context
	cancel context.CancelFunc
}

var (
	chatChannel = ChatID(discordfake.Channel)
	chatThread  = ChatID(discordfake.Thread)
	chatDM      = ChatID(discordfake.DM)
)

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := &harness{
		fake:   discordfake.New(t),
		st:     st,
		reg:    mediaregistry.New(st.DB, 30*time.Minute),
		sink:   chantest.NewSink(chatChannel, chatThread, chatDM),
		logs:   &logBuf{},
		ctx:    ctx,
		cancel: cancel,
	}
	h.sink.OnDeliver = storeLike(st)
	t.Cleanup(func() {
		for _, in := range append(h.delivered, h.sink.Inbounds()...) {
			chantest.CheckInbound(t, h.reg, in, h.sink.Registered(in.ChatID))
		}
		if strings.Contains(h.logs.String(), discordfake.Token) {
			t.Errorf("the bot token is in the logs:\n%s", h.logs.String())
		}
	})
	dc, err := New(Config{Enabled: true, Token: discordfake.Token, APIURL: h.fake.APIURL(), GatewayURL: h.fake.GatewayURL()},
		channels.Env{Registry: h.reg, Sink: h.sink, AssistantName: "Andy",
			Log: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	// Only a hang guard: a loaded machine can be slow to connect.
	dc.connectTimeout = chantest.HangGuard
	dc.reconnect.Initial = 10 * time.Millisecond
	h.dc = dc
	return h
}

// start starts the channel, failing the test on error.
func (h *harness) start(t *testing.T) {
	t.Helper()
	if err := h.dc.Start(h.ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// Stopped before the store closes (cleanups run last-first).
	t.Cleanup(func() {
		h.cancel()
		chantest.WaitReturns(t, h.dc)
	})
}

// next waits for the next delivered message.
func (h *harness) next(t *testing.T) channels.Inbound {
	t.Helper()
	in := h.sink.Next(t)
	h.delivered = append(h.delivered, in)
	return in
}

// post has a user post m and returns the delivery it caused.
func (h *harness) post(t *testing.T, m discordfake.Message) (channels.Inbound, []string) {
	t.Helper()
	_, atts := h.fake.Post(m)
	return h.next(t), atts
}

// nothingBefore proves that nothing was delivered since the last next:
// it posts a marker and requires it to be the next delivery (events are
// handled in order, so anything else would come first).
func (h *harness) nothingBefore(t *testing.T) {
	t.Helper()
	const marker = "marker: nothing before me"
	h.fake.Post(discordfake.Message{Content: marker})
	if in := h.next(t); in.Text != marker {
		t.Fatalf("unexpected delivery: %+v", in)
	}
}

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chantest.HangGuard)
	t.Cleanup(cancel)
	return ctx
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func outMessage(chat, text string) channels.OutMessage {
	return channels.OutMessage{Chat: chat, Text: text}
}

func newRegistry(t *testing.T) *mediaregistry.Registry {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return mediaregistry.New(st.DB, time.Hour)
}

func newFuzzRegistry(f *testing.F) *mediaregistry.Registry {
	f.Helper()
	st, err := store.Open(context.Background(), filepath.Join(f.TempDir(), "botd.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	return mediaregistry.New(st.DB, time.Hour)
}
