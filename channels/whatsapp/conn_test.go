package whatsapp

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/store"
)

// fakeConn scripts ConnectContext results and reports each connect.
type fakeConn struct {
	mu          sync.Mutex
	errs        []error // consumed per attempt; nil or exhausted means success
	connects    int
	connected   bool
	disconnects int
	onConnect   chan int
}

func (c *fakeConn) ConnectContext(ctx context.Context) error {
	c.mu.Lock()
	c.connects++
	n := c.connects
	var err error
	if len(c.errs) > 0 {
		err, c.errs = c.errs[0], c.errs[1:]
	}
	c.connected = err == nil
	c.mu.Unlock()
	c.onConnect <- n
	return err
}

func (c *fakeConn) Disconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = false
	c.disconnects++
}

func (c *fakeConn) IsConnected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

func (c *fakeConn) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = false
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestRunReconnectsAndStopsOnLogout drives the connection loop through
// failed dials, a login, a drop, a temporary ban and a logout, recording
// the backoff it sleeps.
func TestRunReconnectsAndStopsOnLogout(t *testing.T) {
	env := newTestChannel(t, Config{})
	w := env.w
	w.backoffBase, w.backoffMax = time.Second, 8*time.Second
	w.jitter = func() float64 { return 1 } // the upper bound of each step
	var slept []time.Duration
	var smu sync.Mutex
	w.sleep = func(ctx context.Context, d time.Duration) bool {
		smu.Lock()
		slept = append(slept, d)
		smu.Unlock()
		return ctx.Err() == nil
	}
	netErr := errors.New("dial tcp: connection refused")
	c := &fakeConn{errs: []error{netErr, netErr, nil}, onConnect: make(chan int, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	done := make(chan struct{})
	go func() { w.run(ctx, c, first); close(done) }()

	recv(t, c.onConnect, "attempt 1")
	recv(t, c.onConnect, "attempt 2")
	recv(t, c.onConnect, "attempt 3 (succeeds)")
	w.handleEvent(&events.Connected{})
	if err := recv(t, first, "first login"); err != nil {
		t.Fatalf("first login: %v", err)
	}

	c.drop()
	w.handleEvent(&events.Disconnected{})
	recv(t, c.onConnect, "reconnect after drop")
	w.handleEvent(&events.Connected{})

	// A ban's expiry is a floor under the backoff.
	c.drop()
	w.handleEvent(&events.TemporaryBan{Code: events.TempBanSentToTooManyPeople, Expire: time.Hour})
	recv(t, c.onConnect, "reconnect after ban")

	// A duplicate Disconnected while connected is ignored.
	w.handleEvent(&events.Disconnected{})

	w.handleEvent(&events.LoggedOut{OnConnect: true})
	recv(t, done, "run to return after logout")

	smu.Lock()
	got := append([]time.Duration(nil), slept...)
	smu.Unlock()
	// Two dial failures (1s, 2s), reset by the login, then the drop (1s)
	// and the ban (an hour, not the 2s step).
	want := []time.Duration{time.Second, 2 * time.Second, time.Second, time.Hour}
	if len(got) != len(want) {
		t.Fatalf("slept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sleep %d = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	if c.connects != 5 || c.disconnects != 1 {
		t.Errorf("connects=%d disconnects=%d", c.connects, c.disconnects)
	}

	// The channel is stopped, nothing else: sends say why.
	_, err := w.Send(context.Background(), channels.OutMessage{Chat: groupID, Text: "hi"})
	if !errors.Is(err, ErrLoggedOut) || !strings.Contains(err.Error(), "botd whatsapp login") {
		t.Errorf("send after logout: %v", err)
	}
}

func TestRunReportsLogoutAsStartError(t *testing.T) {
	env := newTestChannel(t, Config{})
	c := &fakeConn{onConnect: make(chan int, 4)}
	first := make(chan error, 1)
	go env.w.run(context.Background(), c, first)
	recv(t, c.onConnect, "connect")
	env.w.handleEvent(&events.LoggedOut{OnConnect: true, Reason: events.ConnectFailureLoggedOut})
	if err := recv(t, first, "start result"); !errors.Is(err, ErrLoggedOut) {
		t.Errorf("start result %v, want ErrLoggedOut", err)
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	env := newTestChannel(t, Config{})
	c := &fakeConn{onConnect: make(chan int, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { env.w.run(ctx, c, nil); close(done) }()
	recv(t, c.onConnect, "connect")
	cancel()
	recv(t, done, "run to return")
	if c.IsConnected() {
		t.Error("still connected after shutdown")
	}
}

func TestBackoff(t *testing.T) {
	w := &WhatsApp{backoffBase: 2 * time.Second, backoffMax: 5 * time.Minute}
	for _, tc := range []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{0, 0, time.Second},
		{0, 1, 2 * time.Second},
		{3, 0.5, 12 * time.Second}, // 16s step: 8s fixed + 4s
		{8, 1, 5 * time.Minute},    // 512s step capped
		{8, 0, 150 * time.Second},
		{200, 1, 5 * time.Minute}, // no shift overflow
	} {
		w.jitter = func() float64 { return tc.jitter }
		if got := w.backoff(tc.attempt); got != tc.want {
			t.Errorf("backoff(%d, jitter %v) = %v, want %v", tc.attempt, tc.jitter, got, tc.want)
		}
	}
}

func TestStartWithoutDevice(t *testing.T) {
	env := newTestChannel(t, Config{})
	w, err := New(Config{}, SessionFor(Config{}, store.DefaultConfig(), env.dbDir), env.w.env)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "run `botd whatsapp login`") ||
		!strings.Contains(err.Error(), filepath.Join(env.dbDir, "whatsapp.db")) {
		t.Fatalf("Start: %v", err)
	}
}

func TestNewHasNoSideEffects(t *testing.T) {
	dir := t.TempDir()
	sink := chantest.NewSink()
	env := newTestChannel(t, Config{})
	if _, err := New(Config{}, Session{Path: filepath.Join(dir, "sub", "wa.db")}, channels.Env{Registry: env.reg, Sink: sink}); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("New created %v", m)
	}
	if _, err := New(Config{}, Session{Path: filepath.Join(dir, "wa.db")}, channels.Env{}); err == nil {
		t.Error("New without a sink succeeded")
	}
}
