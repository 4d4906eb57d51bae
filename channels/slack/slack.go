// Package slack connects botd to Slack: Socket Mode by default, or the
// Events API over HTTP. Files shared in a chat become media refs holding
// only their metadata and private URL; the bytes are fetched with the bot
// token when the agent asks for them.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
)

// TextLimit is the length botd splits outgoing text at; Slack truncates
// very long messages and renders 4000 characters well.
const TextLimit = 4000

// MaxFilesPerMessage caps the refs one message can create; the rest are
// named as omitted in the text so nothing disappears silently.
const MaxFilesPerMessage = 10

var (
	_ channels.Channel     = (*Slack)(nil)
	_ channels.Waiter      = (*Slack)(nil)
	_ channels.Downloader  = (*Slack)(nil)
	_ channels.MediaSender = (*Slack)(nil)
)

// Slack is one Slack workspace connection (one bot user).
type Slack struct {
	cfg    Config
	env    channels.Env
	log    *slog.Logger
	api    *slackapi.Client
	apiURL *url.URL
	// files fetches private URLs; its redirect policy keeps the token on
	// hosts allowed to receive it.
	files *http.Client

	// connectTimeout bounds how long Start waits for the first Socket Mode
	// connection.
	connectTimeout time.Duration

	// Set by Start from auth.test.
	botUserID string
	botID     string
	teamID    string

	// clock paces live answers' edits, one per editEvery; tests own it.
	clock     clock.Clock
	editEvery time.Duration
	// noStream and noStatus are set once Slack said the workspace has no
	// chat streaming or assistant status, so botd stops asking.
	noStream atomic.Bool
	noStatus atomic.Bool
	// askers is who addressed the bot in each "channel/thread" (a stream
	// to a channel names its recipient); typingIn is the thread of each
	// chat's latest addressed message ("" for a top-level one), where the
	// assistant status shows.
	askers   *memo[asker]
	typingIn *memo[string]

	queue chan queued
	seen  *recent // event ids already queued (Slack retries deliveries)
	// acksMu guards waiting: the acks of each queued event the store does
	// not hold yet (Slack's retries of it add theirs).
	acksMu  sync.Mutex
	waiting map[string][]func()
	known   *refCache

	namesMu  sync.Mutex
	users    map[string]string
	chanName map[string]string

	addrMu sync.Mutex
	addr   net.Addr

	// wg counts the goroutines Start leaves running: the worker that
	// hands messages to the sink, the Socket Mode loops or the Events API
	// server.
	wg sync.WaitGroup
}

// New checks the settings and builds the channel without connecting.
func New(cfg Config, env channels.Env) (*Slack, error) {
	cfg = cfg.withDefaults()
	if !strings.HasSuffix(cfg.APIURL, "/") {
		// slack-go appends method names directly to the endpoint.
		cfg.APIURL += "/"
	}
	u, err := url.Parse(cfg.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("slack: channels.slack.api_url %q is not an http(s) URL", cfg.APIURL)
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	log := env.Log
	if log == nil {
		log = slog.Default()
	}
	// Named once here; channels.Env.Compose logs through env.Log too.
	env.Log = log.With("channel", "slack")
	s := &Slack{
		cfg:            cfg,
		env:            env,
		log:            env.Log,
		apiURL:         u,
		connectTimeout: 30 * time.Second,
		queue:          make(chan queued, 256),
		waiting:        map[string][]func(){},
		seen:           newRecent(1024),
		known:          newRefCache(2048),
		clock:          clock.Real{},
		editEvery:      time.Second,
		askers:         newMemo[asker](1024),
		typingIn:       newMemo[string](1024),
		users:          map[string]string{},
		chanName:       map[string]string{},
	}
	// Every Web API call and every download leaves through the fence: a
	// stale instance sends nothing (channels.FencedTransport). Socket
	// mode's websocket carries only the acks of what Slack sent.
	tr := channels.FencedTransport(env.Fence, http.DefaultTransport)
	s.files = &http.Client{Transport: tr, CheckRedirect: s.checkRedirect}
	s.api = slackapi.New(cfg.BotToken,
		slackapi.OptionAPIURL(cfg.APIURL),
		slackapi.OptionAppLevelToken(cfg.AppToken),
		slackapi.OptionHTTPClient(&http.Client{Transport: tr, Timeout: 60 * time.Second}),
	)
	return s, nil
}

func checkConfig(cfg Config) error {
	var problems []string
	if cfg.BotToken == "" {
		problems = append(problems, "channels.slack.bot_token is empty (set SLACK_BOT_TOKEN to the xoxb- bot token)")
	} else if !strings.HasPrefix(cfg.BotToken, "xoxb-") {
		problems = append(problems, "channels.slack.bot_token must be a bot token starting with xoxb-")
	}
	switch cfg.Mode {
	case ModeSocket:
		if cfg.AppToken == "" {
			problems = append(problems, "channels.slack.app_token is empty (set SLACK_APP_TOKEN to the xapp- app-level token with connections:write; or use mode: events)")
		} else if !strings.HasPrefix(cfg.AppToken, "xapp-") {
			problems = append(problems, "channels.slack.app_token must be an app-level token starting with xapp-")
		}
	case ModeEvents:
		if cfg.SigningSecret == "" {
			problems = append(problems, "channels.slack.signing_secret is required with mode: events")
		}
		if cfg.Listen == "" {
			problems = append(problems, "channels.slack.listen is required with mode: events (e.g. 127.0.0.1:3000)")
		}
	default:
		problems = append(problems, fmt.Sprintf("channels.slack.mode %q is not socket or events", cfg.Mode))
	}
	if len(problems) > 0 {
		return fmt.Errorf("slack: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Name is the chat id prefix.
func (s *Slack) Name() string { return "slack" }

// Addr is the Events API listener's address once Start returned (events
// mode only); nil otherwise.
func (s *Slack) Addr() net.Addr {
	s.addrMu.Lock()
	defer s.addrMu.Unlock()
	return s.addr
}

// Start checks the bot token with auth.test, then connects (Socket Mode) or
// starts listening (Events API), and returns once events can arrive.
// Everything keeps running in the background until ctx ends.
func (s *Slack) Start(ctx context.Context) error {
	authCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	auth, err := s.api.AuthTestContext(authCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("slack: auth.test failed, check channels.slack.bot_token (SLACK_BOT_TOKEN) and api_url: %w", err)
	}
	s.botUserID, s.botID, s.teamID = auth.UserID, auth.BotID, auth.TeamID
	s.log.Info("slack authenticated", "team", auth.Team, "bot_user", auth.UserID)

	// runCtx also ends when Start fails, so nothing is left running then.
	runCtx, stop := context.WithCancel(ctx)
	s.wg.Go(func() { s.worker(runCtx) })
	if s.cfg.Mode == ModeEvents {
		err = s.startEvents(runCtx)
	} else {
		err = s.startSocket(runCtx)
	}
	if err != nil {
		stop()
		return err
	}
	context.AfterFunc(ctx, stop)
	return nil
}

// Wait implements channels.Waiter: it returns once every goroutine Start
// left running returned after its ctx ended. Only the worker hands
// messages to the sink, so none arrives after Wait returned.
func (s *Slack) Wait() { s.wg.Wait() }

// queued is an event waiting for the worker, and the id its acks wait on.
type queued struct {
	ev slackevents.EventsAPIEvent
	id string
}

// worker handles events one at a time so messages of a chat reach the sink
// in order. An event is acknowledged to Slack only once the store holds
// it (channels.Env.Deliver retries while the store fails); one left
// unstored when receiving stops is never acknowledged, so Slack sends it
// again.
func (s *Slack) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-s.queue:
			if s.handle(ctx, q.ev) {
				s.confirm(q.id)
			}
		}
	}
}

// enqueue queues ev for the worker; ack runs once the store holds it. A
// retry of an event already queued only adds its ack; one of an event
// already stored is acknowledged at once.
func (s *Slack) enqueue(ctx context.Context, ev slackevents.EventsAPIEvent, ack func()) {
	id := ""
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok {
		id = cb.EventID
	}
	if id == "" {
		id = fmt.Sprintf("noid-%p", &ev)
	}
	s.acksMu.Lock()
	if acks, ok := s.waiting[id]; ok {
		s.waiting[id] = append(acks, ack)
		s.acksMu.Unlock()
		return
	}
	if !s.seen.add(id) {
		s.acksMu.Unlock()
		ack()
		return
	}
	s.waiting[id] = []func(){ack}
	s.acksMu.Unlock()
	select {
	case s.queue <- queued{ev: ev, id: id}:
	case <-ctx.Done():
	}
}

// confirm runs the acks of a stored event.
func (s *Slack) confirm(id string) {
	s.acksMu.Lock()
	acks := s.waiting[id]
	delete(s.waiting, id)
	s.acksMu.Unlock()
	for _, ack := range acks {
		ack()
	}
}

func (s *Slack) startSocket(ctx context.Context) error {
	smc := socketmode.New(s.api)
	connected := make(chan struct{})
	failed := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)

	s.wg.Go(func() { s.socketEvents(runCtx, smc, connected) })
	s.wg.Go(func() {
		// RunContext reconnects on its own (with backoff) after drops and on
		// transient dial errors; it returns only on a fatal auth error or a
		// broken reconnect, so keep restarting it with our own backoff.
		wait := backoff.Schedule{Initial: time.Second, Max: 5 * time.Minute}
		for attempt, first := 0, true; ; attempt, first = attempt+1, false {
			err := smc.RunContext(runCtx)
			if runCtx.Err() != nil {
				return
			}
			if first {
				select {
				case <-connected:
				default:
					failed <- err
					return
				}
			}
			d := wait.Wait(attempt)
			s.log.Warn("slack socket mode stopped, reconnecting", "err", err, "in", d)
			select {
			case <-time.After(d):
			case <-runCtx.Done():
				return
			}
		}
	})

	timer := time.NewTimer(s.connectTimeout)
	defer timer.Stop()
	select {
	case <-connected:
		context.AfterFunc(ctx, stop)
		return nil
	case err := <-failed:
		stop()
		return fmt.Errorf("slack: socket mode connection failed, check channels.slack.app_token (SLACK_APP_TOKEN, an xapp- token with connections:write): %w", err)
	case <-timer.C:
		stop()
		return fmt.Errorf("slack: no socket mode connection after %s (is Socket Mode enabled for the app?)", s.connectTimeout)
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

func (s *Slack) socketEvents(ctx context.Context, smc *socketmode.Client, connected chan struct{}) {
	var once sync.Once
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return
		case evt = <-smc.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeConnected:
			once.Do(func() { close(connected) })
			s.log.Debug("slack socket mode connected")
		case socketmode.EventTypeConnectionError:
			if e, ok := evt.Data.(*slackapi.ConnectionErrorEvent); ok {
				s.log.Warn("slack socket mode connection error", "attempt", e.Attempt, "backoff", e.Backoff, "err", e.ErrorObj)
			}
		case socketmode.EventTypeEventsAPI:
			// Acked once stored (the worker runs ack): Slack redelivers
			// what is not acked within 3 s, and a redelivery of an event
			// still waiting for the store is acked with it.
			ack := func() {}
			if evt.Request != nil {
				env := evt.Request.EnvelopeID
				ack = func() { _ = smc.AckCtx(ctx, env, nil) }
			}
			if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
				s.enqueue(ctx, ev, ack)
			} else {
				ack()
			}
		case socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
			if evt.Request != nil {
				_ = smc.AckCtx(ctx, evt.Request.EnvelopeID, nil)
			}
		}
	}
}

func (s *Slack) startEvents(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("slack: listen on channels.slack.listen %q: %w", s.cfg.Listen, err)
	}
	s.addrMu.Lock()
	s.addr = ln.Addr()
	s.addrMu.Unlock()
	srv := &http.Server{
		Handler:           s.EventsHandler(ctx),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
	}
	s.wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("slack events listener stopped", "err", err)
		}
	})
	s.wg.Go(func() {
		<-ctx.Done()
		// The handler only queues events, so a stuck request holds up
		// nothing but itself; Close ends it after the grace period.
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil {
			_ = srv.Close()
		}
	})
	s.log.Info("slack events API listening", "addr", ln.Addr().String())
	return nil
}
