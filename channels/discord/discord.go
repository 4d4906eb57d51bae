// Package discord connects botd to Discord through
// github.com/bwmarrin/discordgo: the gateway with the Message Content
// intent for receiving, metadata-only refs for attachments (their CDN
// links expire, so a fetch refreshes the link first), and sending text,
// files and "typing…" over the REST API within discordgo's rate-limit
// buckets.
package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/mediaregistry"
)

// Name is the channel name and chat id prefix.
const Name = "discord"

// MaxMessageRunes is Discord's limit on a message's content.
const MaxMessageRunes = 2000

// intents are what botd asks the gateway for: guild channels and threads
// (names), their messages and DMs, with their content (a privileged
// intent switched on in the developer portal).
const intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages |
	discordgo.IntentsMessageContent

// Interface guards.
var (
	_ channels.Channel     = (*Discord)(nil)
	_ channels.MediaSender = (*Discord)(nil)
	_ channels.Typer       = (*Discord)(nil)
	_ channels.Waiter      = (*Discord)(nil)
	_ channels.Downloader  = (*Discord)(nil)
	_ channels.Streamer    = (*Discord)(nil)
)

// Discord is the Discord channel: one bot user.
type Discord struct {
	cfg Config
	env channels.Env
	log *slog.Logger
	s   *discordgo.Session
	// files fetches CDN links; it never carries the token.
	files *http.Client

	// connectTimeout bounds how long Start waits for READY.
	connectTimeout time.Duration
	// reconnect is the wait between attempts after the gateway dropped.
	reconnect   backoff.Schedule
	typingEvery time.Duration
	typingMax   time.Duration
	// editEvery paces a live answer's edits; clock is what counts it
	// (tests move a clock.Fake).
	editEvery time.Duration
	clock     clock.Clock

	// handleMu serialises message handling with stopping, so no message
	// reaches the sink after Wait returned.
	handleMu sync.Mutex
	// dropped is signalled when the gateway connection ended.
	dropped chan struct{}

	// known keeps the refs of recent messages so an edit renders the
	// same refs instead of registering duplicates.
	known *memo[mediaregistry.MediaReference]
	// names caches channel names looked up over REST.
	names *memo[string]

	wg   sync.WaitGroup
	once channels.StartOnce

	mu      sync.Mutex
	me      discordgo.User
	stopped bool
	runCtx  context.Context
	typing  map[string]*typingLoop
	gwConn  net.Conn // the gateway's TCP connection being dialled or used
}

// New builds the channel without touching the network.
func New(cfg Config, env channels.Env) (*Discord, error) {
	cfg = cfg.withDefaults()
	if cfg.Token == "" {
		return nil, errors.New("discord: no bot token: set channels.discord.token (usually ${DISCORD_BOT_TOKEN})")
	}
	if env.Registry == nil || env.Sink == nil {
		return nil, errors.New("discord: env needs a media registry and a sink")
	}
	api, err := url.Parse(cfg.APIURL)
	if err != nil || (api.Scheme != "http" && api.Scheme != "https") || api.Host == "" {
		return nil, fmt.Errorf("discord: channels.discord.api_url %q is not an http(s) URL", cfg.APIURL)
	}
	gw, err := url.Parse(cfg.GatewayURL)
	if err != nil || (gw.Scheme != "ws" && gw.Scheme != "wss") || gw.Host == "" {
		return nil, fmt.Errorf("discord: channels.discord.gateway_url %q is not a ws(s) URL", cfg.GatewayURL)
	}
	log := env.Log
	if log == nil {
		log = slog.Default()
	}
	// Named once here; channels.Env.Compose logs through env.Log too.
	env.Log = log.With("channel", Name)
	d := &Discord{
		cfg:            cfg,
		env:            env,
		log:            env.Log,
		connectTimeout: 30 * time.Second,
		reconnect:      backoff.Schedule{Initial: time.Second, Max: 5 * time.Minute},
		typingEvery:    8 * time.Second, // Discord shows typing for about 10 s
		typingMax:      5 * time.Minute,
		editEvery:      time.Second,
		clock:          clock.Real{},
		dropped:        make(chan struct{}, 1),
		known:          newMemo[mediaregistry.MediaReference](2048),
		names:          newMemo[string](1024),
		typing:         map[string]*typingLoop{},
		// Every REST call and download leaves through the fence: a stale
		// instance sends nothing (channels.FencedTransport). The gateway's
		// socket carries heartbeats and the session, nothing a chat sees.
		files: &http.Client{Transport: channels.FencedTransport(env.Fence, http.DefaultTransport), CheckRedirect: sameHostRedirect},
	}
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	s.Client = &http.Client{
		Transport: &apiTransport{base: channels.FencedTransport(env.Fence, http.DefaultTransport), api: cfg.APIURL + "/", gateway: cfg.GatewayURL},
		Timeout:   60 * time.Second,
		// A redirect could carry the token to another host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.Dialer = &websocket.Dialer{HandshakeTimeout: 30 * time.Second, NetDialContext: d.dialGateway, Proxy: http.ProxyFromEnvironment}
	// botd reconnects itself (with backoff, and not after shutdown).
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	// Handlers run in order on the gateway's reader, so messages of a
	// chat reach the sink in the order Discord sent them.
	s.SyncEvents = true
	// discordgo logs through the standard logger; botd logs what matters
	// itself, and never the identify payload (it holds the token).
	s.LogLevel = -1
	s.Identify.Intents = intents
	s.State.MaxMessageCount = 0
	s.AddHandler(d.onReady)
	s.AddHandler(d.onMessageCreate)
	s.AddHandler(d.onMessageUpdate)
	s.AddHandler(d.onDisconnect)
	s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) { d.log.Info("discord gateway session resumed") })
	d.s = s
	return d, nil
}

// apiTransport sends discordgo's requests for Discord's API to api_url
// instead, and answers the gateway lookup with gateway_url, so one
// setting each decides where botd connects. Anything else is refused:
// this client carries the token.
type apiTransport struct {
	base         http.RoundTripper
	api, gateway string
}

func (t *apiTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rest, ok := strings.CutPrefix(r.URL.String(), discordgo.EndpointAPI)
	if !ok {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("discord: refusing to send the bot token to %s", r.URL.Redacted())
	}
	if r.Method == http.MethodGet && (rest == "gateway" || rest == "gateway/bot") {
		body := fmt.Sprintf(`{"url":%q}`, t.gateway)
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: r}, nil
	}
	u, err := url.Parse(t.api + rest)
	if err != nil {
		return nil, fmt.Errorf("discord: api url: %w", err)
	}
	r2 := r.Clone(r.Context())
	r2.URL, r2.Host = u, ""
	return t.base.RoundTrip(r2)
}

// sameHostRedirect lets a CDN download follow redirects on its own host
// only.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if req.URL.Host != via[0].URL.Host || (req.URL.Scheme != "https" && req.URL.Scheme != "http") {
		return fmt.Errorf("redirect to another host (%s) refused", req.URL.Host)
	}
	return nil
}

// dialGateway dials the gateway and remembers the connection, so a Start
// whose ctx ends (or that times out) can cut an Open that hangs reading.
func (d *Discord) dialGateway(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.gwConn = c
	d.mu.Unlock()
	return c, nil
}

func (d *Discord) cutGateway() {
	d.mu.Lock()
	c := d.gwConn
	d.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Name implements channels.Channel.
func (d *Discord) Name() string { return Name }

// Me is the bot user READY named.
func (d *Discord) Me() discordgo.User {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.me
}

// Wait implements channels.Waiter: it returns once the gateway is closed
// and every typing loop returned after Start's ctx ended. No message
// reaches the sink after it returned.
func (d *Discord) Wait() { d.wg.Wait() }

// Start connects to the gateway and returns once READY arrived: the
// token was accepted and the intents granted. Receiving (and reconnecting
// after a drop, with backoff) continues until ctx ends.
func (d *Discord) Start(ctx context.Context) error {
	if err := d.once.Begin(Name); err != nil {
		return err
	}
	d.mu.Lock()
	d.runCtx = ctx
	d.mu.Unlock()
	if err := d.open(ctx, d.connectTimeout); err != nil {
		d.stopHandling()
		return err
	}
	me := d.Me()
	if me.ID == "" {
		_ = d.s.Close()
		d.stopHandling()
		return errors.New("discord: the gateway answered without READY")
	}
	d.log.Info("discord connected", "bot", me.Username, "id", me.ID)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.supervise(ctx)
	}()
	return nil
}

// open runs one gateway Open (HELLO, IDENTIFY or RESUME, READY or
// RESUMED), cut short when ctx ends or timeout passes.
func (d *Discord) open(ctx context.Context, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- d.s.Open() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		d.cutGateway()
		<-done
		return ctx.Err()
	case <-timer.C:
		d.cutGateway()
		<-done
		return fmt.Errorf("discord: no READY from the gateway at %s within %s", d.cfg.GatewayURL, timeout)
	}
	if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
		return nil
	}
	return d.openError(err)
}

// openError names the setting to fix for the gateway's close codes.
func (d *Discord) openError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return fmt.Errorf("discord: the gateway rejected the bot token (%d %s); check channels.discord.token (DISCORD_BOT_TOKEN)", ce.Code, ce.Text)
		case 4014:
			return fmt.Errorf("discord: the Message Content intent is not enabled for this bot (gateway close %d %s): "+
				"Developer Portal → your application → Bot → Privileged Gateway Intents → turn on Message Content Intent", ce.Code, ce.Text)
		case 4013:
			return fmt.Errorf("discord: the gateway refused botd's intents (%d %s)", ce.Code, ce.Text)
		}
		return fmt.Errorf("discord: gateway closed (%d %s)", ce.Code, ce.Text)
	}
	return fmt.Errorf("discord: gateway at %s: %s", d.cfg.GatewayURL, redact(err.Error(), d.cfg.Token))
}

// supervise reconnects after the gateway dropped (a read error, missed
// heartbeat ACKs, an op 7 Reconnect), with backoff, resuming the session
// where Discord allows it; when ctx ends it closes the gateway and fences
// the sink off.
func (d *Discord) supervise(ctx context.Context) {
	defer d.stopHandling()
	defer func() { _ = d.s.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.dropped:
		}
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("discord gateway connection lost; reconnecting")
		for attempt := 0; ; attempt++ {
			if ctx.Err() != nil {
				return
			}
			err := d.open(ctx, d.connectTimeout)
			if err == nil {
				d.log.Info("discord gateway reconnected", "attempts", attempt+1)
				break
			}
			if ctx.Err() != nil {
				return
			}
			wait := d.reconnect.Wait(attempt)
			d.log.Warn("discord gateway reconnect failed", "err", err, "retry_in", wait)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

func (d *Discord) onDisconnect(*discordgo.Session, *discordgo.Disconnect) {
	select {
	case d.dropped <- struct{}{}:
	default:
	}
}

func (d *Discord) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User == nil {
		return
	}
	d.mu.Lock()
	d.me = *r.User
	d.mu.Unlock()
}

// stopHandling fences the sink off: a message being handled finishes
// first, any later one is dropped.
func (d *Discord) stopHandling() {
	d.handleMu.Lock()
	d.mu.Lock()
	d.stopped = true
	for chat, l := range d.typing {
		l.stop()
		delete(d.typing, chat)
	}
	d.mu.Unlock()
	d.handleMu.Unlock()
}

func (d *Discord) isStopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}

func (d *Discord) runContext() context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runCtx == nil {
		return context.Background()
	}
	return d.runCtx
}

// redact removes the token from a message, should a library put it there.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}

// memo is a bounded map, oldest key forgotten first.
type memo[V any] struct {
	mu    sync.Mutex
	max   int
	order []string
	m     map[string]V
}

func newMemo[V any](max int) *memo[V] { return &memo[V]{max: max, m: make(map[string]V, max)} }

func (c *memo[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *memo[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		c.order = append(c.order, key)
	}
	c.m[key] = v
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}
