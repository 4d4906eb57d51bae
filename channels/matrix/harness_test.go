package matrix

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/matrix/matrixfake"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	family    = "!family:fake.local"
	strangers = "!strangers:fake.local"
	ann       = "@ann:fake.local"
)

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
	fake    *matrixfake.Server
	mx      *Matrix
	sink    *chantest.Sink
	reg     *mediaregistry.Registry
	st      *store.Store
	logs    *syncBuffer
	dataDir string
	// pgDSN puts the channel's state and crypto store in Postgres.
	pgDSN string
	cfg   Config
}

// newHarness builds a channel against a fresh fake homeserver (the bot
// in "Family" with Ann, and in a room no group registered), a real store
// and a real registry. mut may adjust the config before New.
func newHarness(t testing.TB, mut ...func(*Config)) *harness {
	t.Helper()
	fake := matrixfake.New(t)
	fake.Join(family, "Family", map[string]string{ann: "Ann"})
	fake.Join(strangers, "Strangers", map[string]string{"@eve:fake.local": "Eve"})
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{fake: fake, reg: mediaregistry.New(st.DB, 30*time.Minute), st: st, logs: &syncBuffer{},
		sink: chantest.NewSink(ChatID(family)), dataDir: t.TempDir()}
	h.cfg = Config{Enabled: true, Homeserver: fake.URL(), UserID: matrixfake.UserID, AccessToken: matrixfake.Token}
	for _, m := range mut {
		m(&h.cfg)
	}
	h.mx = h.build(t)
	t.Cleanup(func() {
		if s := h.logs.String(); strings.Contains(s, matrixfake.Token) || strings.Contains(s, matrixfake.Password) {
			t.Errorf("a secret appeared in the logs:\n%s", s)
		}
	})
	t.Cleanup(func() {
		for _, in := range h.sink.Inbounds() {
			chantest.CheckInbound(t, h.reg, in, h.sink.Registered(in.ChatID))
		}
	})
	return h
}

// build makes a channel over the harness's fake, data dir and sink.
func (h *harness) build(t testing.TB) *Matrix {
	t.Helper()
	m, err := New(h.cfg, h.storeAt(), channels.Env{
		Registry:      h.reg,
		Sink:          h.sink,
		Log:           slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		AssistantName: "Andy",
	})
	if err != nil {
		t.Fatal(err)
	}
	m.pollTimeout = 10 * time.Second
	m.syncBackoff.Initial = time.Millisecond
	m.setHTTP(time.Millisecond)
	return m
}

// storeAt is where a channel built now keeps its state.
func (h *harness) storeAt() Store { return Store{DataDir: h.dataDir, PostgresDSN: h.pgDSN} }

// start runs m until the test ends (or stop is called) and returns once
// its first sync (the rooms' history) was handled: the fake then sees a
// /sync from the position it had.
func (h *harness) start(t *testing.T, m *Matrix) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	// After Start: uploading the device's keys moves the stream on.
	pos := h.fake.Position()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			chantest.WaitReturns(t, m)
		})
	}
	t.Cleanup(stop)
	h.fake.Wait(t, "the first sync handled", func() bool { return h.fake.SyncedFrom(pos) })
	return stop
}
