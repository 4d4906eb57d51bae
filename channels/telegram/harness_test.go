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
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	groupID   int64 = -1001234567890
	dmUserID  int64 = 42
	strangers int64 = -1009999
)

// testSink stores what it is given the way the router would (chat +
// message rows) and remembers the Inbounds for assertions.
type testSink struct {
	st         *store.Store
	registered map[string]bool

	mu       sync.Mutex
	got      []channels.Inbound
	migrated [][2]string
}

func (s *testSink) Registered(chat string) bool { return s.registered[chat] }

func (s *testSink) Deliver(ctx context.Context, in channels.Inbound) error {
	if err := s.st.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: in.Time}); err != nil {
		return err
	}
	if s.registered[in.ChatID] {
		if _, err := s.st.PutMessage(ctx, store.Message{
			ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID, SenderName: in.SenderName,
			Text: in.Text, Time: in.Time, FromMe: in.FromMe, IsBot: in.IsBot, ReplyTo: in.ReplyTo, ThreadID: in.ThreadID,
		}); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.got = append(s.got, in)
	s.mu.Unlock()
	return nil
}

func (s *testSink) Migrated(_ context.Context, from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.migrated = append(s.migrated, [2]string{from, to})
}

func (s *testSink) inbounds() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Inbound(nil), s.got...)
}

func (s *testSink) migrations() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][2]string(nil), s.migrated...)
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
	sink *testSink
	reg  *mediaregistry.Registry
	st   *store.Store
	logs *syncBuffer
}

// newHarness builds a channel against a fresh fake, a real store and a
// real registry. mut may adjust the config before New.
func newHarness(t *testing.T, mut ...func(*config.Telegram)) *harness {
	t.Helper()
	ctx := context.Background()
	fake := telegramtest.New(t)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := mediaregistry.New(st.DB, 30*time.Minute)
	sink := &testSink{st: st, registered: map[string]bool{ChatID(groupID): true, ChatID(dmUserID): true}}
	logs := &syncBuffer{}
	cfg := config.Telegram{Enabled: true, Token: telegramtest.Token, APIURL: fake.URL(), MaxDownloadBytes: 20 << 20}
	for _, m := range mut {
		m(&cfg)
	}
	tg, err := New(cfg, channels.Env{
		Registry:      reg,
		Sink:          sink,
		Log:           slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		AssistantName: "Andy",
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
	return &harness{fake: fake, tg: tg, sink: sink, reg: reg, st: st, logs: logs}
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
		select {
		case <-h.tg.Done():
		case <-time.After(10 * time.Second):
			t.Error("channel did not stop within 10s of cancel")
		}
	})
}

// waitInbound waits until the sink has n messages.
func (h *harness) waitInbound(t *testing.T, n int) []channels.Inbound {
	t.Helper()
	waitFor(t, func() bool { return len(h.sink.inbounds()) >= n })
	return h.sink.inbounds()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
