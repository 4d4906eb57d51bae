// Package telegram connects botd to the Telegram Bot API through
// github.com/go-telegram/bot: long polling (or a webhook) for receiving,
// metadata-only extraction of attachments, lazy getFile downloads, and
// sending text, files and "typing…".
package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/clock"
)

// Name is the channel name and chat id prefix.
const Name = "telegram"

const (
	// MaxMessageRunes is Telegram's text limit per message.
	MaxMessageRunes = 4096
	// maxCaptionRunes is Telegram's caption limit; longer captions go out
	// as a separate text message.
	maxCaptionRunes = 1024
	// cloudUploadLimit is the cloud Bot API's limit for bot uploads.
	cloudUploadLimit = 50 << 20
	// cloudPhotoLimit: larger images must go as documents.
	cloudPhotoLimit = 10 << 20
)

// Interface guards.
var (
	_ channels.Channel         = (*Telegram)(nil)
	_ channels.MediaSender     = (*Telegram)(nil)
	_ channels.Typer           = (*Telegram)(nil)
	_ channels.Waiter          = (*Telegram)(nil)
	_ channels.Downloader      = (*Telegram)(nil)
	_ channels.DownloadLimiter = (*Telegram)(nil)
	_ channels.Streamer        = (*Telegram)(nil)
)

// Telegram is the Telegram channel.
type Telegram struct {
	cfg    Config
	env    channels.Env
	log    *slog.Logger
	apiURL string
	maxDL  int64
	b      *bot.Bot
	// files downloads file bytes; no overall timeout, since a large file
	// on a slow link must not be cut off; the caller's ctx bounds it.
	files *http.Client

	// Retry tuning; tests shrink the units.
	retryAfterUnit time.Duration // one retry_after "second"
	backoffBase    time.Duration // first 5xx backoff, doubled per attempt
	maxRetryWait   time.Duration // a longer retry_after is not waited out
	maxAttempts    int
	typingEvery    time.Duration
	typingMax      time.Duration
	pollTimeout    time.Duration

	// render is the package's render, per channel so a test can give
	// its own without touching the other tests' channels.
	render func(md string, limit int) []string
	// clk paces live answers; tests move a clock.Fake.
	clk clock.Clock
	// paces holds each chat's budget of live-answer calls.
	paceMu sync.Mutex
	paces  map[int64]*chatPace

	// handleMu serialises update handling so an album's messages (and
	// anything else) reach the sink in the order Telegram sent them.
	handleMu sync.Mutex
	// acks holds back the poll that would confirm unhandled updates.
	acks *ackGate

	// wg counts the goroutines Start and SetTyping leave running: the
	// poller or the webhook server, and the typing loops.
	wg       sync.WaitGroup
	done     chan struct{}
	doneOnce sync.Once

	mu   sync.Mutex
	me   models.User
	once channels.StartOnce
	// stopped is set once receiving ended for good: no update is handled
	// and no typing loop is started after it.
	stopped bool
	runCtx  context.Context
	typing  map[string]*typingLoop
	hookLn  net.Listener
}

// New builds the channel without touching the network.
func New(cfg Config, env channels.Env) (*Telegram, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("telegram: no bot token: set channels.telegram.token (usually ${TELEGRAM_BOT_TOKEN})")
	}
	if env.Registry == nil || env.Sink == nil {
		return nil, errors.New("telegram: env needs a media registry and a sink")
	}
	if cfg.Webhook != nil {
		if cfg.Webhook.URL == "" || cfg.Webhook.Listen == "" {
			return nil, errors.New("telegram: channels.telegram.webhook needs both url and listen")
		}
		// Without a secret anyone who finds the URL can inject messages.
		if cfg.Webhook.Secret == "" {
			return nil, errors.New("telegram: channels.telegram.webhook.secret is required")
		}
	}
	log := env.Log
	if log == nil {
		log = slog.Default()
	}
	// Named once here; channels.Env.Compose logs through env.Log too.
	env.Log = log.With("channel", Name)
	cfg = cfg.withDefaults()
	t := &Telegram{
		cfg:            cfg,
		env:            env,
		log:            env.Log,
		apiURL:         strings.TrimRight(cfg.APIURL, "/"),
		maxDL:          cfg.MaxDownloadBytes,
		retryAfterUnit: time.Second,
		backoffBase:    500 * time.Millisecond,
		maxRetryWait:   time.Minute,
		maxAttempts:    4,
		typingEvery:    4 * time.Second,
		typingMax:      5 * time.Minute,
		pollTimeout:    time.Minute,
		typing:         map[string]*typingLoop{},
		render:         render,
		clk:            clock.Real{},
		paces:          map[int64]*chatPace{},
		done:           make(chan struct{}),
		acks:           newAckGate(),
	}
	t.files = &http.Client{Transport: t.transport(), CheckRedirect: noRedirect}
	if err := t.newBot(); err != nil {
		return nil, err
	}
	return t, nil
}

// newBot (re)builds the library client; tests call it again after
// shortening pollTimeout.
func (t *Telegram) newBot() error {
	api := &statusClient{c: &http.Client{Transport: t.transport(), CheckRedirect: noRedirect}, token: t.cfg.Token, acks: t.acks}
	b, err := bot.New(t.cfg.Token,
		bot.WithSkipGetMe(), // New must not connect; Start calls getMe itself
		bot.WithServerURL(t.apiURL),
		bot.WithHTTPClient(t.pollTimeout, api),
		bot.WithDefaultHandler(t.onUpdate),
		// One worker, handlers inline: updates are handled strictly in order.
		bot.WithWorkers(1),
		bot.WithNotAsyncHandlers(),
		bot.WithErrorsHandler(func(err error) {
			t.log.Warn("telegram api error", "err", redact(err.Error(), t.cfg.Token))
		}),
		bot.WithDebugHandler(func(format string, args ...any) {
			t.log.Debug(redact(fmt.Sprintf(format, args...), t.cfg.Token))
		}),
		bot.WithAllowedUpdates(bot.AllowedUpdates{
			models.AllowedUpdateMessage, models.AllowedUpdateEditedMessage,
			models.AllowedUpdateChannelPost, models.AllowedUpdateEditedChannelPost,
		}),
	)
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	t.b = b
	return nil
}

func (t *Telegram) transport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Long polls answer within pollTimeout; anything slower is a dead
	// connection. Uploads are unaffected: the clock starts after the body.
	tr.ResponseHeaderTimeout = t.pollTimeout + 15*time.Second
	// Every call of the Bot API and every download leaves here: a stale
	// instance sends nothing (channels.FencedTransport).
	return channels.FencedTransport(t.env.Fence, tr)
}

// A redirect could carry the token-bearing URL to another host.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Name implements channels.Channel.
func (t *Telegram) Name() string { return Name }

// Me is the bot user learned from getMe in Start.
func (t *Telegram) Me() models.User {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.me
}

// Done is closed when receiving has stopped after ctx ended (or Start
// failed).
func (t *Telegram) Done() <-chan struct{} { return t.done }

// Wait implements channels.Waiter: it returns once the poller or webhook
// server and every typing loop returned after Start's ctx ended. No
// message reaches the sink after it returned.
func (t *Telegram) Wait() { t.wg.Wait() }

// receive runs recv (the poller, or the webhook server's shutdown) in the
// background; once it returned, update handling stops for good.
func (t *Telegram) receive(recv func()) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		recv()
		t.stopHandling()
	}()
}

// stopHandling fences the sink off: an update being handled (a webhook
// call that outlived the server's shutdown) finishes first, any later one
// is dropped. The counter in wg is held until this returned, so SetTyping
// never adds to a finished group.
func (t *Telegram) stopHandling() {
	t.handleMu.Lock()
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	t.handleMu.Unlock()
	t.doneOnce.Do(func() { close(t.done) })
}

func (t *Telegram) isStopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

// WebhookAddr is the address the webhook server listens on (useful with
// listen: "127.0.0.1:0"); empty in polling mode or before Start.
func (t *Telegram) WebhookAddr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hookLn == nil {
		return ""
	}
	return t.hookLn.Addr().String()
}

// Start checks the token with getMe, then receives in the background until
// ctx ends: long polling by default, a webhook server when configured.
func (t *Telegram) Start(ctx context.Context) error {
	if err := t.once.Begin(Name); err != nil {
		return err
	}
	t.mu.Lock()
	t.runCtx = ctx
	t.mu.Unlock()

	me, err := t.getMe(ctx)
	if err != nil {
		t.stopHandling()
		return err
	}
	t.mu.Lock()
	t.me = *me
	t.mu.Unlock()
	t.log.Info("telegram connected", "bot", "@"+me.Username, "id", me.ID)
	if !me.CanReadAllGroupMessages {
		t.log.Info("telegram: privacy mode is on: in groups the bot sees only commands, mentions and replies to it (@BotFather /setprivacy to change)")
	}

	if t.cfg.Webhook != nil {
		return t.startWebhook(ctx)
	}
	// getUpdates answers 409 while a webhook is set (say, from an earlier
	// webhook-mode run); polling means the webhook has to go.
	if _, err := t.b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); err != nil {
		t.stopHandling()
		return fmt.Errorf("telegram: deleteWebhook before polling: %s", redact(err.Error(), t.cfg.Token))
	}
	// bot.Start returns once its poller and its worker returned; handlers
	// run inline in the worker, so the last delivery is over by then.
	t.receive(func() { t.b.Start(ctx) })
	return nil
}

func (t *Telegram) getMe(ctx context.Context) (*models.User, error) {
	var me *models.User
	err := t.retry(ctx, true, func() error {
		var err error
		me, err = t.b.GetMe(ctx)
		return err
	})
	switch {
	case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		// The Bot API answers 404 for a malformed token, 401 for a revoked one.
		return nil, fmt.Errorf("telegram: the bot token was rejected (%s); check channels.telegram.token (TELEGRAM_BOT_TOKEN)",
			redact(err.Error(), t.cfg.Token))
	case err != nil:
		return nil, channels.Unreachable("telegram: getMe at %s: %s", t.apiURL, redact(err.Error(), t.cfg.Token))
	}
	return me, nil
}

func (t *Telegram) startWebhook(ctx context.Context) error {
	wh := t.cfg.Webhook
	ln, err := net.Listen("tcp", wh.Listen)
	if err != nil {
		t.stopHandling()
		return fmt.Errorf("telegram: webhook listen on %s (channels.telegram.webhook.listen): %w", wh.Listen, err)
	}
	t.mu.Lock()
	t.hookLn = ln
	t.mu.Unlock()
	srv := &http.Server{
		// Every path: a reverse proxy may rewrite the public URL's path;
		// the secret header is what authenticates a request.
		Handler:           t.WebhookHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	// serveCtx ends with ctx, or early when setWebhook fails.
	serveCtx, stopServing := context.WithCancel(ctx)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.log.Error("telegram webhook server stopped", "err", err)
		}
	}()
	t.receive(func() {
		defer stopServing()
		<-serveCtx.Done()
		// Shutdown waits for the calls being handled, for a grace period;
		// stopHandling then waits for any still running and turns later
		// ones (a handler mounted elsewhere) away.
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil {
			_ = srv.Close()
		}
	})
	err = t.retry(ctx, true, func() error {
		_, err := t.b.SetWebhook(ctx, &bot.SetWebhookParams{
			URL:         wh.URL,
			SecretToken: wh.Secret,
			// One connection at a time keeps updates in order (albums!).
			MaxConnections: 1,
			AllowedUpdates: []string{
				models.AllowedUpdateMessage, models.AllowedUpdateEditedMessage,
				models.AllowedUpdateChannelPost, models.AllowedUpdateEditedChannelPost,
			},
		})
		return err
	})
	if err != nil {
		stopServing()
		return fmt.Errorf("telegram: setWebhook %s (channels.telegram.webhook.url): %s", wh.URL, redact(err.Error(), t.cfg.Token))
	}
	t.log.Info("telegram webhook set", "listen", ln.Addr().String(), "url", wh.URL)
	return nil
}

// maxUpdateBytes bounds a webhook body; real updates are a few KB.
const maxUpdateBytes = 1 << 20

// WebhookHandler serves Telegram's webhook calls. The library's own
// handler only logs a bad secret; this one refuses it with 401.
func (t *Telegram) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		secret := ""
		if t.cfg.Webhook != nil {
			secret = t.cfg.Webhook.Secret
		}
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
			t.log.Warn("telegram webhook: request with a wrong secret token refused", "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var u models.Update
		if err := json.NewDecoder(io.LimitReader(r.Body, maxUpdateBytes)).Decode(&u); err != nil {
			t.log.Warn("telegram webhook: undecodable update", "err", err)
			http.Error(w, "bad update", http.StatusBadRequest)
			return
		}
		// Handled before answering: Telegram sends the next update only
		// after this one is acknowledged (max_connections 1), keeping order.
		// Not stored (receiving stopped, or Telegram gave up waiting while
		// the store failed): not acknowledged, so Telegram sends it again.
		if !t.handleUpdate(r.Context(), &u) {
			http.Error(w, "not stored yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
