package telegram

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	groupID   int64 = -1001234567890
	dmUserID  int64 = 42
	strangers int64 = -1009999
)

// storeLike makes sink store what it is given the way the router would
// (chat row always, message row for registered chats), so tests can read
// the store.
func storeLike(st *store.Store, sink *chantest.Sink) func(context.Context, channels.Inbound) error {
	return func(ctx context.Context, in channels.Inbound) error {
		if err := st.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: in.Time}); err != nil {
			return err
		}
		if !sink.Registered(in.ChatID) {
			return nil
		}
		_, err := st.PutMessage(ctx, store.Message{
			ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID, SenderName: in.SenderName,
			Text: in.Text, Time: in.Time, FromMe: in.FromMe, IsBot: in.IsBot, ReplyTo: in.ReplyTo, ThreadID: in.ThreadID,
		})
		return err
	}
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type harness struct {
	fake *telegramtest.Server
	tg   *Telegram
	sink *chantest.Sink
	reg  *mediaregistry.Registry
	st   *store.Store
	logs *syncBuffer
}

// newHarness builds a channel against a fresh fake, a real store and a
// real registry. mut may adjust the config before New.
func newHarness(t testing.TB, mut ...func(*Config)) *harness {
	t.Helper()
	return newFencedHarness(t, nil, mut...)
}

// newFencedHarness is newHarness with fence as the channel's Env.Fence.
func newFencedHarness(t testing.TB, fence channels.Fence, mut ...func(*Config)) *harness {
	t.Helper()
	ctx := context.Background()
	fake := telegramtest.New(t)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := mediaregistry.New(st.DB, 30*time.Minute)
	sink := chantest.NewSink(ChatID(groupID), ChatID(dmUserID))
	sink.OnDeliver = storeLike(st, sink)
	logs := &syncBuffer{}
	cfg := Config{Enabled: true, Token: telegramtest.Token, APIURL: fake.URL(), MaxDownloadBytes: DefaultMaxDownload}
	for _, m := range mut {
		m(&cfg)
	}
	tg, err := New(cfg, channels.Env{
		Registry:      reg,
		Sink:          sink,
		Log:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		AssistantName: "Andy",
		Fence:         fence,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Keep retries fast: a retry_after of 1 "second" is 1ms here.
	tg.retryAfterUnit = time.Millisecond
	tg.backoffBase = time.Millisecond
	t.Cleanup(func() {
		if s := logs.String(); bytes.Contains([]byte(s), []byte(telegramtest.Token)) {
			t.Errorf("the bot token appeared in the logs:\n%s", s)
		}
	})
	h := &harness{fake: fake, tg: tg, sink: sink, reg: reg, st: st, logs: logs}
	// Whatever a test made the channel deliver keeps the invariants every
	// channel keeps. Runs before the store closes (cleanups run last-first).
	t.Cleanup(func() { h.check(t, h.sink.Inbounds()...) })
	return h
}

// start runs the channel until the test ends and waits for it to stop.
func (h *harness) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.tg.Start(ctx); err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		chantest.WaitReturns(t, h.tg)
	})
}

// waitInbound waits until the sink has n messages and checks each
// against the invariants every channel keeps.
func (h *harness) waitInbound(t *testing.T, n int) []channels.Inbound {
	t.Helper()
	got := h.sink.Wait(t, n)
	h.check(t, got...)
	return got
}

// check asserts the cross-channel invariants on delivered messages.
func (h *harness) check(t testing.TB, ins ...channels.Inbound) {
	t.Helper()
	for _, in := range ins {
		chantest.CheckInbound(t, h.reg, in, h.sink.Registered(in.ChatID))
	}
}
