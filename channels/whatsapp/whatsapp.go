// Package whatsapp is botd's WhatsApp channel on whatsmeow (the multi-device
// web protocol): pairing, receiving with lazy media refs, on-demand media
// download with media-retry for expired files, and sending.
package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

const channelName = "whatsapp"

// client is the part of *whatsmeow.Client the channel uses once connected;
// a fake drives the tests.
type client interface {
	DownloadToFile(ctx context.Context, msg whatsmeow.DownloadableMessage, file whatsmeow.File) error
	SendMediaRetryReceipt(ctx context.Context, message *types.MessageInfo, mediaKey []byte) error
	SendMessage(ctx context.Context, to types.JID, message *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error)
	UploadReader(ctx context.Context, plaintext io.Reader, tempFile io.ReadWriteSeeker, appInfo whatsmeow.MediaType) (whatsmeow.UploadResponse, error)
	SendChatPresence(ctx context.Context, jid types.JID, state types.ChatPresence, media types.ChatPresenceMedia) error
}

// conn is the connection lifecycle, separate so the reconnect loop can be
// driven without a network.
type conn interface {
	ConnectContext(ctx context.Context) error
	Disconnect()
	IsConnected() bool
}

// lidResolver maps hidden-user ids (LIDs) to phone numbers where the
// session store has learnt the pair.
type lidResolver interface {
	GetPNForLID(ctx context.Context, lid types.JID) (types.JID, error)
}

var (
	_ client = (*whatsmeow.Client)(nil)
	_ conn   = (*whatsmeow.Client)(nil)

	_ channels.Channel         = (*WhatsApp)(nil)
	_ channels.MediaSender     = (*WhatsApp)(nil)
	_ channels.Typer           = (*WhatsApp)(nil)
	_ channels.Waiter          = (*WhatsApp)(nil)
	_ channels.FileDownloader  = (*WhatsApp)(nil)
	_ channels.DownloadLimiter = (*WhatsApp)(nil)

	// The cache's file is handed to whatsmeow as it is.
	_ whatsmeow.File = mediaregistry.File(nil)
)

// ErrLoggedOut is returned (wrapped) by Start and every send once WhatsApp
// has unlinked this device; it is a channels.ErrLoggedOut.
var ErrLoggedOut error = loggedOut{}

type loggedOut struct{}

func (loggedOut) Error() string {
	return "whatsapp device is logged out; run `botd whatsapp login` to pair again"
}
func (loggedOut) Is(target error) bool { return target == channels.ErrLoggedOut }

// WhatsApp is the channel.
type WhatsApp struct {
	cfg     Config
	session Session
	env     channels.Env
	log     *slog.Logger

	// Tunables; tests shorten them.
	retryTimeout time.Duration // waiting for the phone to re-upload media
	backoffBase  time.Duration
	backoffMax   time.Duration
	startWait    time.Duration // how long Start waits for the first login
	jitter       func() float64
	sleep        func(ctx context.Context, d time.Duration) bool
	// prepare, when set, adjusts the client Start made before it
	// connects: tests point it at a fake WhatsApp.
	prepare func(*whatsmeow.Client)

	retries retryWaiters
	sent    recentIDs
	states  chan connState

	// wg counts the connection loop Start leaves running.
	wg sync.WaitGroup
	// deliverMu fences the sink off once the loop ended: whatsmeow may
	// still dispatch a decrypted message from its own goroutines.
	// Deliveries hold it shared, stopDelivering exclusively.
	deliverMu sync.RWMutex
	fenced    bool

	mu      sync.RWMutex
	once    channels.StartOnce
	runCtx  context.Context
	cli     client
	lids    lidResolver
	own     []types.JID // our phone-number and LID users
	stopErr error
}

// New builds the channel over the session store session names
// (SessionFor); nothing is opened or connected until Start.
func New(cfg Config, session Session, env channels.Env) (*WhatsApp, error) {
	if env.Sink == nil || env.Registry == nil {
		return nil, errors.New("whatsapp: env needs a Sink and a Registry")
	}
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Named once here; channels.Env.Compose logs through env.Log too.
	env.Log = log.With("channel", channelName)
	return &WhatsApp{
		cfg:          cfg,
		session:      session,
		env:          env,
		log:          env.Log,
		retryTimeout: 45 * time.Second,
		backoffBase:  2 * time.Second,
		backoffMax:   5 * time.Minute,
		startWait:    20 * time.Second,
		jitter:       rand.Float64,
		sleep:        sleepCtx,
		states:       make(chan connState, 32),
		runCtx:       context.Background(),
	}, nil
}

// Name is the chat id prefix.
func (w *WhatsApp) Name() string { return channelName }

// Wait implements channels.Waiter: it returns once the connection loop
// returned after Start's ctx ended and the session store was closed. No
// message reaches the sink after it returned.
func (w *WhatsApp) Wait() { w.wg.Wait() }

// stopDelivering waits for a message being handed to the sink and turns
// away any later one.
func (w *WhatsApp) stopDelivering() {
	w.deliverMu.Lock()
	defer w.deliverMu.Unlock()
	w.fenced = true
}

// Start opens the session store, connects with the paired device and
// returns once logged in (or after startWait, still connecting in the
// background). A missing or logged-out device is an error that says to run
// the login command.
func (w *WhatsApp) Start(ctx context.Context) error {
	if err := w.once.Begin(channelName); err != nil {
		return err
	}

	container, err := openContainer(ctx, w.session, w.log)
	if err != nil {
		return err
	}
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		container.Close()
		return fmt.Errorf("whatsapp: read session in %s: %w", w.session, err)
	}
	if dev.ID == nil {
		container.Close()
		return fmt.Errorf("whatsapp: no paired device in %s: run `botd whatsapp login` first", w.session)
	}
	wm := whatsmeow.NewClient(dev, newWALogger(w.log, "Client"))
	// Our loop reconnects with jittered, capped backoff; whatsmeow's own
	// retries linearly forever and would race it.
	wm.EnableAutoReconnect = false
	if w.prepare != nil {
		w.prepare(wm)
	}
	// A message's receipt goes to WhatsApp only after the handler
	// returned true: onMessage returns once the store holds the message
	// (retrying while it refuses) and false if receiving stopped first, so
	// WhatsApp hands it out again on the next connection. The decrypted
	// event buffer keeps its plaintext until then, as the ratchet has
	// moved on and the redelivery could not be decrypted again.
	wm.EnableDecryptedEventBuffer = true
	wm.AddEventHandlerWithSuccessStatus(w.handle)

	w.mu.Lock()
	w.runCtx = ctx
	w.cli = wm
	w.lids = dev.LIDs
	w.own = ownUsers(dev.GetJID(), dev.GetLID())
	w.mu.Unlock()

	return w.launch(ctx, wm, func() { container.Close() })
}

// launch runs the connection loop over c in the background until ctx ends
// (closing what Start opened with cleanup afterwards) and returns once
// logged in, or after startWait, still connecting in the background.
func (w *WhatsApp) launch(ctx context.Context, c conn, cleanup func()) error {
	first := make(chan error, 1)
	w.wg.Go(func() {
		w.run(ctx, c, first)
		// Before cleanup: a message being handled may still read the
		// session store (LID lookups).
		w.stopDelivering()
		cleanup()
	})
	t := time.NewTimer(w.startWait)
	defer t.Stop()
	select {
	case err := <-first:
		return err
	case <-t.C:
		w.log.Warn("whatsapp: not logged in yet; still connecting in the background", "after", w.startWait)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ownUsers(ids ...types.JID) []types.JID {
	var out []types.JID
	for _, id := range ids {
		if !id.IsEmpty() {
			out = append(out, id.ToNonAD())
		}
	}
	return out
}

// client returns the connected client, or why there is none. It is
// fenced (fencedClient) when env has a fence: every call the channel
// makes goes through here.
func (w *WhatsApp) client() (client, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.stopErr != nil {
		return nil, w.stopErr
	}
	if w.cli == nil {
		return nil, errors.New("whatsapp: channel not started")
	}
	if w.env.Fence != nil {
		return fencedClient{c: w.cli, fence: w.env.Fence}, nil
	}
	return w.cli, nil
}

func (w *WhatsApp) ctx() context.Context {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.runCtx
}

// handleEvent runs on whatsmeow's event goroutine: keep it short and never
// block on the state channel.
func (w *WhatsApp) handleEvent(raw any) { w.handle(raw) }

// handle is handleEvent reporting whether whatsmeow may acknowledge the
// event (see Start).
func (w *WhatsApp) handle(raw any) bool {
	switch evt := raw.(type) {
	case *events.Message:
		return w.onMessage(w.ctx(), evt)
	case *events.MediaRetry:
		w.retries.deliver(evt)
	case *events.Connected:
		w.refreshOwn()
		w.pushState(connState{kind: stConnected})
	case *events.Disconnected:
		w.pushState(connState{kind: stDisconnected})
	case *events.LoggedOut:
		w.pushState(connState{kind: stStopped, err: ErrLoggedOut})
	case *events.StreamReplaced:
		w.pushState(connState{kind: stStopped, err: errors.New(
			"whatsapp: another client connected with this session; stopped to avoid a reconnect fight (restart botd to take over)")})
	case *events.ClientOutdated:
		w.pushState(connState{kind: stStopped, err: errors.New(
			"whatsapp: WhatsApp rejected the client version as outdated; update botd")})
	case *events.TemporaryBan:
		w.log.Error("whatsapp: account temporarily banned", "reason", evt.String())
		w.pushState(connState{kind: stDisconnected, wait: evt.Expire})
	case *events.ConnectFailure:
		w.log.Warn("whatsapp: connect failure", "reason", int(evt.Reason), "message", evt.Message)
		w.pushState(connState{kind: stDisconnected})
	case *events.KeepAliveTimeout:
		w.log.Debug("whatsapp: keepalive timeout", "errors", evt.ErrorCount)
	}
	return true
}

func (w *WhatsApp) refreshOwn() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wm, ok := w.cli.(*whatsmeow.Client); ok && wm.Store != nil {
		w.own = ownUsers(wm.Store.GetJID(), wm.Store.GetLID())
	}
}

func (w *WhatsApp) isOwn(j types.JID) bool {
	j = j.ToNonAD()
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, o := range w.own {
		if o.User == j.User && o.Server == j.Server {
			return true
		}
	}
	return false
}

// onMessage normalises and delivers one message and reports whether it
// may be acknowledged: the store holds it (Env.Deliver retries while the
// store refuses, holding up whatsmeow's handler queue so later messages
// wait behind it), or it is not one botd keeps. A bad message must not
// stop the stream: it is logged and acknowledged.
func (w *WhatsApp) onMessage(ctx context.Context, evt *events.Message) bool {
	if ctx == nil {
		ctx = context.Background() // a test's event before Start
	}
	w.deliverMu.RLock()
	defer w.deliverMu.RUnlock()
	if w.fenced {
		// After Wait the store may be closed; not acknowledged, so
		// WhatsApp hands it out again on the next connection.
		w.log.Warn("whatsapp: message received after the channel stopped; left for the next start", "id", evt.Info.ID)
		return false
	}
	in, ok, err := w.inbound(ctx, evt)
	if err != nil {
		w.log.Warn("whatsapp: message dropped", "id", evt.Info.ID, "err", err)
	}
	if !ok {
		return ctx.Err() == nil
	}
	return w.env.Deliver(ctx, in) == nil
}

// inbound turns a message event into an Inbound, registering media refs
// for registered chats (channels.Env.Compose). ok is false for messages
// botd does not show.
func (w *WhatsApp) inbound(ctx context.Context, evt *events.Message) (channels.Inbound, bool, error) {
	info := evt.Info
	switch info.Chat.Server {
	case types.BroadcastServer, types.NewsletterServer:
		// Status updates, broadcast lists and channels are not chats a
		// group can be bound to.
		return channels.Inbound{}, false, nil
	}
	chatJID := w.chatJID(ctx, &info)
	chat := channelName + ":" + chatJID.String()
	senderJID := w.phoneJID(ctx, info.Sender, info.SenderAlt)
	c, err := extract(evt, chat, senderJID.String())
	if err != nil {
		return channels.Inbound{}, false, err
	}
	if c.empty() {
		return channels.Inbound{}, false, nil
	}

	in := channels.Inbound{
		ChatID:     chat,
		IsGroup:    info.IsGroup,
		ID:         c.ID,
		SenderID:   senderJID.String(),
		SenderName: info.PushName,
		Time:       info.Timestamp,
		FromMe:     info.IsFromMe,
		ReplyTo:    c.ReplyTo,
		Edit:       c.Edit,
	}
	if !info.IsGroup && !info.IsFromMe {
		in.ChatName = info.PushName
	}
	if in.SenderName == "" {
		in.SenderName = senderJID.User
	}

	shared := w.cfg.SharedNumber
	prefix := w.botPrefix()
	in.IsBot = w.sent.has(info.ID) || (info.IsFromMe && (!shared || strings.HasPrefix(c.Text, prefix)))
	if in.IsBot {
		in.SenderName = w.env.AssistantName
	}

	text := mediaregistry.Neutralize(c.Text)
	for _, m := range c.Mentions {
		j, err := types.ParseJID(m)
		if err != nil || !w.isOwn(j) {
			continue
		}
		// On a shared number an @mention names the owner, not the bot.
		if !shared && w.env.AssistantName != "" {
			text = strings.ReplaceAll(text, "@"+j.User, "@"+w.env.AssistantName)
			in.Mentioned = true
		}
	}
	switch {
	case in.IsBot:
		in.Mentioned = false // the bot never addresses itself
	case !shared && !info.IsGroup:
		in.Mentioned = true // a DM to the bot's own number
	case !shared && c.QuotedParticipant != "":
		if j, err := types.ParseJID(c.QuotedParticipant); err == nil && w.isOwn(j) {
			in.Mentioned = true
		}
	case shared && prefix != "" && strings.HasPrefix(c.QuotedText, prefix):
		in.Mentioned = true // a reply to one of the bot's prefixed messages
	}

	in.Links = c.Links
	w.env.Compose(ctx, &in, text, c.Media)
	return in, true, nil
}

// botPrefix marks the bot's messages on a shared number.
func (w *WhatsApp) botPrefix() string {
	if w.env.AssistantName == "" {
		return ""
	}
	return w.env.AssistantName + ": "
}

// chatJID is the chat's phone-number id where one is known: groups in
// config name DMs by number, while WhatsApp increasingly addresses them by
// LID.
func (w *WhatsApp) chatJID(ctx context.Context, info *types.MessageInfo) types.JID {
	chat := info.Chat.ToNonAD()
	if chat.Server != types.HiddenUserServer {
		return chat
	}
	alt := info.SenderAlt
	if info.IsFromMe {
		alt = info.RecipientAlt
	}
	return w.phoneJID(ctx, chat, alt)
}

// phoneJID maps a LID to its phone number: the message's alternate address
// first, then the session store's LID map; otherwise the LID stays.
func (w *WhatsApp) phoneJID(ctx context.Context, j, alt types.JID) types.JID {
	j = j.ToNonAD()
	if j.Server != types.HiddenUserServer {
		return j
	}
	if alt.Server == types.DefaultUserServer {
		return alt.ToNonAD()
	}
	w.mu.RLock()
	lids := w.lids
	w.mu.RUnlock()
	if lids != nil {
		if pn, err := lids.GetPNForLID(ctx, j); err == nil && !pn.IsEmpty() {
			return pn.ToNonAD()
		}
	}
	return j
}

// recentIDs remembers ids of messages we sent, so their echoes from other
// linked devices are known as the bot's own.
type recentIDs struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

const recentIDsMax = 512

func (r *recentIDs) add(id string) {
	if id == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = make(map[string]struct{}, recentIDsMax)
		r.ring = make([]string, recentIDsMax)
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.ids[id] = struct{}{}
	r.next = (r.next + 1) % recentIDsMax
}

func (r *recentIDs) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.ids[id]
	return ok
}
