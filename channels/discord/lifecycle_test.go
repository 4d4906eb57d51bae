package discord

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/channels/discord/discordfake"
	"github.com/botd-dev/botd/internal/testwait"
)

// TestReconnectResumes: a dropped gateway is reconnected with a RESUME,
// and what was posted while it was down is delivered after it.
func TestReconnectResumes(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	if in, _ := h.post(t, discordfake.Message{Content: "before"}); in.Text != "before" {
		t.Fatalf("got %q", in.Text)
	}
	h.fake.DropConnection()
	h.fake.Post(discordfake.Message{Content: "while down"})
	if in := h.next(t); in.Text != "while down" {
		t.Fatalf("after the drop got %q", in.Text)
	}
	if err := h.fake.WaitReady(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	if h.fake.Identifies() != 1 || h.fake.Resumes() != 1 || h.fake.Connections() != 2 {
		t.Fatalf("identifies %d, resumes %d, connections %d", h.fake.Identifies(), h.fake.Resumes(), h.fake.Connections())
	}
	if in, _ := h.post(t, discordfake.Message{Content: "after"}); in.Text != "after" {
		t.Fatalf("got %q", in.Text)
	}
	// A second drop is survived as well.
	h.fake.DropConnection()
	if err := h.fake.WaitReady(waitCtx(t), 3); err != nil {
		t.Fatal(err)
	}
	if in, _ := h.post(t, discordfake.Message{Content: "again"}); in.Text != "again" {
		t.Fatalf("got %q", in.Text)
	}
}

// TestStopFencesTheSink: once Start's ctx ended and Wait returned, the
// gateway is closed and nothing more is delivered or reconnected.
func TestStopFencesTheSink(t *testing.T) {
	h := newHarness(t)
	if err := h.dc.Start(h.ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.dc.Start(h.ctx); err == nil {
		t.Fatal("a second Start was accepted")
	}
	if err := h.dc.SetTyping(h.ctx, chatChannel, true); err != nil {
		t.Fatal(err)
	}
	h.cancel()
	chantest.WaitReturns(t, h.dc)
	total := h.sink.Total()
	h.fake.Post(discordfake.Message{Content: "after stop"})
	if h.sink.Total() != total {
		t.Fatal("delivered after Wait returned")
	}
	if h.fake.Connections() != 1 {
		t.Fatalf("connections = %d after stop", h.fake.Connections())
	}
}

func TestStartErrorsNameTheFix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*discordfake.Server, *Config)
		want  string
	}{
		{"message content intent off", func(f *discordfake.Server, _ *Config) { f.SetMessageContentIntent(false) },
			"Message Content Intent"},
		{"token rejected", func(_ *discordfake.Server, c *Config) { c.Token = "wrong.token.value" },
			"channels.discord.token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := discordfake.New(t)
			cfg := Config{Enabled: true, Token: discordfake.Token, APIURL: f.APIURL(), GatewayURL: f.GatewayURL()}
			tc.setup(f, &cfg)
			sink := chantest.NewSink()
			dc, err := New(cfg, channels.Env{Registry: newRegistry(t), Sink: sink, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			dc.connectTimeout = chantest.HangGuard
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err = dc.Start(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), discordfake.Token) {
				t.Fatalf("error has the token: %v", err)
			}
			chantest.WaitReturns(t, dc)
		})
	}
}

// TestStartCutByContext: a gateway that accepts the websocket and never
// says HELLO does not hold Start past its ctx.
func TestStartCutByContext(t *testing.T) {
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		<-release
	}))
	defer silent.Close()
	defer close(release)
	f := discordfake.New(t)
	dc, err := New(Config{Enabled: true, Token: discordfake.Token, APIURL: f.APIURL(), GatewayURL: "ws" + strings.TrimPrefix(silent.URL, "http")},
		channels.Env{Registry: newRegistry(t), Sink: chantest.NewSink(), Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dc.connectTimeout = chantest.HangGuard
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cut once the websocket is up: Start is then waiting for HELLO.
	go func() {
		for {
			dc.mu.Lock()
			c := dc.gwConn
			dc.mu.Unlock()
			if c != nil || ctx.Err() != nil {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if err := dc.Start(ctx); err == nil {
		t.Fatal("Start succeeded without HELLO")
	}
	chantest.WaitReturns(t, dc)
}

func TestCheck(t *testing.T) {
	f := discordfake.New(t)
	cfg := Config{Enabled: true, Token: discordfake.Token, APIURL: f.APIURL()}
	ctx := waitCtx(t)
	if err := Check(ctx, cfg); err != nil {
		t.Fatalf("Check: %v", err)
	}
	f.SetMessageContentIntent(false)
	if err := Check(ctx, cfg); err == nil || !strings.Contains(err.Error(), "Message Content Intent") {
		t.Fatalf("Check without the intent: %v", err)
	}
	cfg.Token = "other.bad.token"
	if err := Check(ctx, cfg); err == nil || !strings.Contains(err.Error(), "rejected channels.discord.token") || strings.Contains(err.Error(), cfg.Token) {
		t.Fatalf("Check with a bad token: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"disabled default", DefaultConfig(), ""},
		{"enabled with token", Config{Enabled: true, Token: "MTA.Gx.abc", APIURL: DefaultAPIURL, GatewayURL: DefaultGatewayURL}, ""},
		{"Bot prefix accepted", Config{Enabled: true, Token: "Bot MTA.Gx.abc"}, ""},
		{"no token", Config{Enabled: true}, "channels.discord.token"},
		{"client secret", Config{Enabled: true, Token: "abcdefabcdefabcdef"}, "not a bot token"},
		{"api url", Config{APIURL: "ftp://x"}, "channels.discord.api_url"},
		{"gateway url", Config{GatewayURL: "https://gateway.discord.gg"}, "channels.discord.gateway_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReconnectReidentifies: a session Discord no longer resumes (op 9)
// is begun anew on the same connection, and receiving goes on.
func TestReconnectReidentifies(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.fake.InvalidateSession()
	h.fake.DropConnection()
	if err := h.fake.WaitReady(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	if h.fake.Identifies() != 2 || h.fake.Resumes() != 0 {
		t.Fatalf("identifies %d, resumes %d", h.fake.Identifies(), h.fake.Resumes())
	}
	if in, _ := h.post(t, discordfake.Message{Content: "after"}); in.Text != "after" {
		t.Fatalf("got %q", in.Text)
	}
}

// TestZombieConnectionReconnects: heartbeats go out at HELLO's interval,
// and a gateway that stops acknowledging them is left for a new
// connection.
func TestZombieConnectionReconnects(t *testing.T) {
	h := newHarness(t)
	h.fake.SetHeartbeatInterval(20 * time.Millisecond)
	h.start(t)
	testwait.Until(t, "heartbeats", func() bool { return h.fake.Heartbeats() >= 3 })
	h.fake.StopHeartbeatAcks(true)
	testwait.Until(t, "a second connection", func() bool { return h.fake.Connections() >= 2 })
	h.fake.StopHeartbeatAcks(false)
	if err := h.fake.WaitReady(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	if in, _ := h.post(t, discordfake.Message{Content: "still here"}); in.Text != "still here" {
		t.Fatalf("got %q", in.Text)
	}
}

// TestTokenStaysOnTheAPI: the session's client refuses any URL but the
// API's, so the token cannot be sent elsewhere.
func TestTokenStaysOnTheAPI(t *testing.T) {
	h := newHarness(t)
	got := make(chan string, 1)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	defer elsewhere.Close()
	if _, err := h.dc.s.Request(http.MethodGet, elsewhere.URL+"/x", nil); err == nil || strings.Contains(err.Error(), discordfake.Token) {
		t.Fatalf("request elsewhere: %v", err)
	}
	select {
	case a := <-got:
		t.Fatalf("a request reached another host with Authorization %q", a)
	default:
	}
}
