// Package web is botd's own chat network: a page per room served by the
// daemon, where people post text and files and read the assistant's
// answers, plus an admin dashboard on the same server. A room is a chat
// like any other ("web:<room>"); uploads become refs and placeholders
// through channels.Env.Compose and stay in the channel's own folder
// (<data_dir>/web/files) until the agent asks for them, exactly as a
// Telegram photo stays on Telegram's servers.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/connlimit"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// Name is the channel name and chat id prefix.
const Name = "web"

// Interface guards.
var (
	_ channels.Channel         = (*Web)(nil)
	_ channels.MediaSender     = (*Web)(nil)
	_ channels.Typer           = (*Web)(nil)
	_ channels.Waiter          = (*Web)(nil)
	_ channels.Downloader      = (*Web)(nil)
	_ channels.DownloadLimiter = (*Web)(nil)
)

// Options are what the channel needs besides its config section.
type Options struct {
	// DataDir is botd's data_dir; the channel keeps its files in
	// DataDir/web: the admin token and uploads (the rooms' messages are
	// in Store; an older botd's room logs are imported from DataDir/web/rooms).
	DataDir string
	// MaxUploadBytes caps the files of one posted message together
	// (media.max_download_bytes: nothing larger could be fetched anyway).
	MaxUploadBytes int64
	// Groups are botd's groups: those whose chat is web:<room> are the
	// rooms; the dashboard lists them all.
	Groups *groups.Set
	// Store is botd's database: it holds the channel's room links, live
	// sessions and rooms' messages (shared by the instances on one
	// database) and gives the dashboard its runs. Required.
	Store *store.Store
	// Monitor gives the dashboard the channels' states; nil leaves them out.
	Monitor *Monitor
	// Model is the model runs start with, for the dashboard.
	Model string
	// Networks says which registered networks the config turns on, by
	// name, for the dashboard: every network is listed, one that is off
	// with how to turn it on, and a group on it is marked. Nil lists only
	// the channels that report a state.
	Networks map[string]bool
	// Notice is shown at the top of every page, e.g. that no LLM key is
	// set and which one to set.
	Notice string
	// Out receives the one line with the address to open (stdout); the
	// login token is in it only on the start that created the token.
	Out io.Writer
	// SweepEvery is how often files older than a ref's lifetime are
	// removed (default 1h).
	SweepEvery time.Duration
	// Budget is botd's disk budget (media.max_disk_bytes): uploads are
	// reported to it, and a room's uploads are refused past its group's
	// share. Nil: no share is enforced.
	Budget *diskbudget.Budget
	// Lease says which botd instance is active (docs/scaling.md), for the
	// dashboard; nil (one instance) shows nothing.
	Lease func() LeaseView
	// LeaseTrouble, when set, says why the lease's renewals fail and
	// since when ("" while they succeed): the one instance on SQLite runs
	// on through a store hiccup and reports it here.
	LeaseTrouble func() (problem string, since time.Time)
	// Pending lists the chats waiting for approval with a pairing code
	// (package access), for the dashboard; nil leaves them out.
	Pending func(ctx context.Context) ([]PendingChat, error)
	// Decide approves (or, approve false, denies) the chat waiting with
	// code, from the dashboard's list; what it returns is said on the
	// page. Nil: the list has no buttons.
	Decide func(ctx context.Context, code string, approve bool) (said string, err error)
	// Settings is a group's settings in force with their sources
	// (package chatctl), for the dashboard; nil leaves them out.
	Settings func(ctx context.Context, folder string) ([]GroupSetting, error)
	// SetSetting changes a group's setting from the dashboard (value ""
	// goes back to the config's). refused, when not "", is why the value
	// was not taken, said on the page as it is; err is any other failure.
	// Nil: the settings cannot be changed here.
	SetSetting func(ctx context.Context, folder, name, value string) (refused string, err error)
	// Standby makes this the server of an instance standing by: every
	// page says so, with Lease's view, and what would reach the assistant
	// or change the rooms (posts, stops, room links) is refused with 503,
	// since another instance answers. Reading rooms and the dashboard
	// works.
	Standby bool

	// heartbeat replaces the event streams' ping interval, sessionCheck
	// how long a session read from the database is trusted (negative: not
	// at all) and how often open streams' sessions are re-read, and now
	// the clock (tests).
	heartbeat    time.Duration
	sessionCheck time.Duration
	// standbyPoll replaces how often a standby's event streams read new
	// messages (tests).
	standbyPoll time.Duration
	now         func() time.Time
}

// LeaseView is the lease as the dashboard shows it.
type LeaseView struct {
	// This is this instance's id; Active the holder's, empty when no
	// instance holds a live lease.
	This, Active string
	Since        time.Time
	Epoch        int64
}

// maxTextRunes bounds what one posted message may say.
const maxTextRunes = 16000

// Web is the web channel.
type Web struct {
	cfg   Config
	o     Options
	env   channels.Env
	log   *slog.Logger
	dir   string
	rooms map[string]*room
	order []string // room names: the main group's first, then by name
	tmpl  *template.Template
	now   func() time.Time

	files *fileStore
	auth  *auth

	// deliverMu keeps posted messages in order into the sink and fences
	// it off once receiving stopped.
	deliverMu sync.Mutex
	stopped   bool

	wg     sync.WaitGroup
	mu     sync.Mutex
	once   channels.StartOnce
	ln     net.Listener
	runCtx context.Context
	typing map[string]*time.Timer
	// stopper cancels the run answering a chat (SetStopper).
	stopper func(chat string) bool
}

// New builds the channel; nothing is read, created or listened on before
// Start.
func New(cfg Config, env channels.Env, o Options) (*Web, error) {
	if env.Registry == nil || env.Sink == nil {
		return nil, errors.New("web: env needs a media registry and a sink")
	}
	if o.Groups == nil {
		return nil, errors.New("web: options need the groups")
	}
	if o.DataDir == "" {
		return nil, errors.New("web: options need the data_dir")
	}
	if o.Store == nil {
		return nil, errors.New("web: options need the store (room links and sessions live in it)")
	}
	if o.MaxUploadBytes <= 0 {
		o.MaxUploadBytes = media.DefaultConfig().MaxDownloadBytes
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.heartbeat <= 0 {
		o.heartbeat = heartbeat
	}
	if o.standbyPoll <= 0 {
		o.standbyPoll = standbyPoll
	}
	switch {
	case o.sessionCheck == 0:
		o.sessionCheck = sessionCheck
	case o.sessionCheck < 0:
		o.sessionCheck = 0
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = time.Hour
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	cfg = cfg.withDefaults()
	if ps := settings.Of(cfg.Validate()); len(ps) > 0 {
		return nil, fmt.Errorf("web: %s", ps[0])
	}
	log := env.Log
	if log == nil {
		log = slog.Default()
	}
	// Named once here; channels.Env.Compose logs through env.Log too.
	env.Log = log.With("channel", Name)
	if env.AssistantName == "" {
		env.AssistantName = "Andy"
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	dir := filepath.Join(o.DataDir, "web")
	w := &Web{
		cfg: cfg, o: o, env: env, log: env.Log, dir: dir, tmpl: tmpl, now: o.now,
		rooms:  map[string]*room{},
		typing: map[string]*time.Timer{},
	}
	var mainRoom string
	for _, g := range o.Groups.All() {
		name, ok := RoomOf(g.Chat)
		if !ok {
			continue
		}
		title := g.Name
		if title == "" {
			title = name
		}
		w.rooms[name] = &room{name: name, title: title, folder: g.Folder, fence: env.Fence}
		w.order = append(w.order, name)
		if g.Main {
			mainRoom = name
		}
	}
	sort.Slice(w.order, func(i, j int) bool {
		a, b := w.order[i], w.order[j]
		if (a == mainRoom) != (b == mainRoom) {
			return a == mainRoom
		}
		return a < b
	})
	return w, nil
}

// Name implements channels.Channel.
func (w *Web) Name() string { return Name }

// Addr is the address the server listens on ("127.0.0.1:8080"); empty
// before Start.
func (w *Web) Addr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ln == nil {
		return ""
	}
	return w.ln.Addr().String()
}

// BaseURL is the address to open in a browser, without a path.
func (w *Web) BaseURL() string {
	addr := w.Addr()
	if addr == "" {
		return ""
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Start creates the channel's folder and admin token, loads the rooms
// and serves the pages until ctx ends. The address to open is printed to
// Options.Out, with the login token the first time.
func (w *Web) Start(ctx context.Context) error {
	if err := w.once.Begin(Name); err != nil {
		return err
	}
	w.mu.Lock()
	w.runCtx = ctx
	w.mu.Unlock()

	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return fmt.Errorf("web: %w", err)
	}
	a, created, err := openAuth(ctx, w.dir, w.cfg.AdminToken, w.o.Store, w.now, w.log)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	a.check = w.o.sessionCheck
	w.auth = a
	fs, err := openFileStore(filepath.Join(w.dir, "files"))
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	w.files = fs
	for _, name := range w.order {
		if err := w.rooms[name].open(ctx, w.o.Store, filepath.Join(w.dir, "rooms"), w.o.Standby, w.log); err != nil {
			return fmt.Errorf("web: room %s: %w", name, err)
		}
	}

	ln, err := net.Listen("tcp", w.cfg.Listen)
	if err != nil {
		return fmt.Errorf("web: listen on %s (channels.web.listen): %w", w.cfg.Listen, err)
	}
	w.mu.Lock()
	w.ln = ln
	w.mu.Unlock()
	if host, _, _ := net.SplitHostPort(w.cfg.Listen); !IsLoopback(host) {
		w.log.Warn("the web channel is reachable from other machines (channels.web.allow_remote): put it behind TLS and keep the admin token secret",
			"listen", ln.Addr().String())
	}
	srv := connlimit.Server{MaxConns: w.cfg.MaxConns, What: "web", Log: w.log, ErrorLevel: slog.LevelDebug}.New(ctx, w.Handler())
	w.wg.Add(3)
	go func() {
		defer w.wg.Done()
		w.auth.watch(ctx, max(w.o.sessionCheck, 10*time.Millisecond))
	}()
	go func() {
		defer w.wg.Done()
		if err := srv.Serve(connlimit.Listener(ln, connlimit.DefaultReadHeaderTimeout)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("web server stopped", "err", err)
		}
	}()
	go func() {
		defer w.wg.Done()
		w.sweepLoop(ctx)
		// Pages stream events until their request ends with ctx; give
		// posts in flight a moment, then fence the sink off.
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil {
			_ = srv.Close()
		}
		w.deliverMu.Lock()
		w.stopped = true
		w.deliverMu.Unlock()
	}()

	// The one line a person needs; the token only when it was just made,
	// so it is never printed (or logged) again.
	if created {
		fmt.Fprintf(w.o.Out, "botd web: open %s/login#token=%s\n", w.BaseURL(), a.adminToken())
	} else {
		where := filepath.Join(w.dir, adminTokenFile)
		if w.cfg.AdminToken != "" {
			where = "channels.web.admin_token"
		}
		fmt.Fprintf(w.o.Out, "botd web: open %s/ (admin token: %s)\n", w.BaseURL(), where)
	}
	w.log.Info("web channel listening", "addr", ln.Addr().String(), "rooms", len(w.order))
	return nil
}

// Wait implements channels.Waiter: it returns once the server and the
// sweeper stopped after Start's ctx ended; no message reaches the sink
// after it.
func (w *Web) Wait() { w.wg.Wait() }

func (w *Web) sweepLoop(ctx context.Context) {
	t := time.NewTicker(w.o.SweepEvery)
	defer t.Stop()
	for {
		w.sweep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep removes files older than a web ref lives: the ref can no longer
// be fetched, so nothing needs them.
func (w *Web) sweep() {
	n, err := w.files.sweep(w.now().Add(-w.env.Registry.TTL(Name)))
	switch {
	case err != nil:
		w.log.Warn("sweeping web files failed", "err", err)
	case n > 0:
		w.log.Debug("swept web files", "count", n)
	}
}

func (w *Web) room(chat string) (*room, error) {
	name, ok := RoomOf(chat)
	if !ok {
		return nil, fmt.Errorf("web: %q is not a web chat", chat)
	}
	r, ok := w.rooms[name]
	if !ok {
		return nil, fmt.Errorf("web: no room %q (add a group with chat: %s)", name, chat)
	}
	return r, nil
}

// Send implements channels.Channel: the text is added to the room
// and pushed to every open page of the room.
func (w *Web) Send(ctx context.Context, m channels.OutMessage) (channels.Delivery, error) {
	r, err := w.room(m.Chat)
	if err != nil {
		return channels.Delivery{}, err
	}
	w.stopTyping(r.name)
	msg, err := r.add(Message{ID: newID(), Time: w.now(), From: w.env.AssistantName, Assistant: true, Text: m.Text, ReplyTo: m.ReplyTo})
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("web: %w", err)
	}
	return channels.Delivery{MessageIDs: []string{msg.ID}}, nil
}

// SendMedia implements channels.MediaSender: the file is copied into the
// channel's folder (the group's copy may change or go) and shown in the
// room, inline when it is an image.
func (w *Web) SendMedia(ctx context.Context, m channels.OutMedia) (channels.Delivery, error) {
	r, err := w.room(m.Chat)
	if err != nil {
		return channels.Delivery{}, err
	}
	if m.File == nil {
		return channels.Delivery{}, errors.New("web: no file to send")
	}
	st, err := m.File.Stat()
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("web: %w", err)
	}
	if st.Size() > w.o.MaxUploadBytes {
		return channels.Delivery{}, fmt.Errorf("web: %s is %d bytes, over media.max_download_bytes (%d): %w",
			mediaregistry.SafeName(m.FileName), st.Size(), w.o.MaxUploadBytes, channels.ErrTooLarge)
	}
	w.stopTyping(r.name)
	fi, err := w.files.save(r.name, io.NewSectionReader(m.File, 0, st.Size()), w.o.MaxUploadBytes, cleanFileName(m.FileName), m.MIME)
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("web: %w", err)
	}
	msg, err := r.add(Message{ID: newID(), Time: w.now(), From: w.env.AssistantName, Assistant: true, Text: m.Caption, Files: []FileInfo{fi}})
	if err != nil {
		return channels.Delivery{}, fmt.Errorf("web: %w", err)
	}
	return channels.Delivery{MessageIDs: []string{msg.ID}}, nil
}

// typingFor bounds how long a page shows "typing…" without news; the
// agent repeats SetTyping while it works.
const typingFor = 30 * time.Second

// SetTyping implements channels.Typer.
func (w *Web) SetTyping(ctx context.Context, chat string, on bool) error {
	r, err := w.room(chat)
	if err != nil {
		return err
	}
	if !on {
		w.stopTyping(r.name)
		return nil
	}
	if err := r.mayShow(ctx); err != nil {
		return fmt.Errorf("web: %w", err)
	}
	w.mu.Lock()
	if t, ok := w.typing[r.name]; ok {
		t.Reset(typingFor)
	} else {
		w.typing[r.name] = time.AfterFunc(typingFor, func() { w.stopTyping(r.name) })
	}
	w.mu.Unlock()
	r.publish(event{kind: "typing", typing: true})
	return nil
}

func (w *Web) stopTyping(name string) {
	w.mu.Lock()
	t, ok := w.typing[name]
	delete(w.typing, name)
	w.mu.Unlock()
	if ok {
		t.Stop()
		w.rooms[name].publish(event{kind: "typing", typing: false})
	}
}

// DownloadLimit implements channels.DownloadLimiter: nothing larger was
// accepted.
func (w *Web) DownloadLimit(*mediaregistry.MediaReference) (int64, string) {
	return w.o.MaxUploadBytes, "the web upload limit (media.max_download_bytes)"
}

// Download implements channels.Downloader: the upload is read from the
// channel's folder, where it has waited since it was posted.
func (w *Web) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	if w.files == nil {
		return nil, 0, fmt.Errorf("web: not started: %w", channels.ErrUnavailable)
	}
	room, ok := RoomOf(ref.Chat)
	if !ok || ref.Channel != Name {
		return nil, 0, fmt.Errorf("web: ref %s is not a web upload: %w", ref.ID, channels.ErrForbidden)
	}
	f, fi, err := w.files.open(room, string(ref.Private))
	if err != nil {
		return nil, 0, fmt.Errorf("web: %s: %w", ref.ID, err)
	}
	return f, fi.Size, nil
}

// newID is a random message or file id: unguessable, since a file's id is
// its address.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// roomNames lists the rooms in display order.
func (w *Web) roomNames() []string { return w.order }

func (w *Web) mainRoom() string {
	if len(w.order) == 0 {
		return ""
	}
	return w.order[0]
}

func trimTo(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n])) + "…"
}
