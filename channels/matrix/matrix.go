// Package matrix connects botd to a Matrix homeserver through
// maunium.net/go/mautrix: a bot account with an access token, a /sync
// loop whose position survives restarts, rooms as chats
// ("matrix:!room:server"), attachments as metadata-only refs fetched
// lazily through the authenticated media endpoints (encrypted
// attachments decrypted while they stream into the cache), and answers
// as replies with an HTML formatted body.
//
// End-to-end encrypted rooms are read and answered through mautrix's
// pure-Go Olm (the goolm build tag, which make adds to every build): the
// bot's device keys and sessions live in a SQLite store in the data dir
// (CryptoPath), or in botd's Postgres database when its tables are there
// (Store), as does the sync state. A build without the tag, or a crypto store that cannot
// be opened, refuses encrypted rooms instead: logged once per room with
// the reason and listed by EncryptedRooms for the dashboard.
package matrix

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
)

// Name is the channel name and chat id prefix.
const Name = "matrix"

// Interface guards.
var (
	_ channels.Channel     = (*Matrix)(nil)
	_ channels.MediaSender = (*Matrix)(nil)
	_ channels.Typer       = (*Matrix)(nil)
	_ channels.Waiter      = (*Matrix)(nil)
	_ channels.Downloader  = (*Matrix)(nil)
)

// syncFilter is sent inline with every /sync: no presence, a bounded
// timeline per room, and only the members of senders (lazy loading).
const syncFilter = `{"presence":{"types":[]},"account_data":{"types":[]},` +
	`"room":{"timeline":{"limit":50},"state":{"lazy_load_members":true},"ephemeral":{"types":[]},"account_data":{"types":[]}}}`

// Matrix is one bot account on one homeserver.
type Matrix struct {
	cfg     Config
	env     channels.Env
	log     *slog.Logger
	dataDir string
	store   Store
	cli     *mautrix.Client

	// Tuning; tests shrink them.
	pollTimeout   time.Duration // the /sync long-poll
	syncBackoff   backoff.Schedule
	typingTimeout time.Duration // how long one typing notice lasts
	typingEvery   time.Duration // renewed this often while on
	typingMax     time.Duration // and never longer than this without a renewal
	keyWait       time.Duration // how long an encrypted message waits for its room key
	// clock and editEvery pace live answers (nil and 0: the real clock,
	// the package's editEvery).
	clock     clock.Clock
	editEvery time.Duration

	render func(md string, limit int) []string

	// reactions are the events of the bot's own reactions (react.go).
	reactions reactionEvents

	once channels.StartOnce
	wg   sync.WaitGroup

	mu      sync.Mutex
	states  stateStore // where st is kept; set in Start
	st      state
	me      id.UserID
	stopped bool
	// unstored: a message of the sync batch being handled did not reach
	// the store (receiving stopped first); its position is not saved.
	unstored bool
	runCtx   context.Context
	rooms    map[id.RoomID]*room
	invites  map[id.RoomID]id.UserID // pending invites to rooms not (yet) registered
	sent     *recent                 // event ids botd sent, so a reply to one addresses it
	typing   map[string]*typingLoop
	// crypto is end-to-end encryption, nil when it is off; cryptoOff
	// then says why.
	crypto    cryptoEngine
	cryptoOff error
	// pending are encrypted messages waiting for their room key; only
	// the sync loop touches them.
	pending []pendingEvent
}

// New builds the channel without touching the network or the database.
// s says where the sync state and the crypto store live (StoreFor).
func New(cfg Config, s Store, env channels.Env) (*Matrix, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	if cfg.Homeserver == "" || cfg.UserID == "" || (cfg.AccessToken == "" && cfg.Password == "") {
		return nil, errors.New("matrix: set channels.matrix.homeserver, user_id and access_token (or password)")
	}
	if env.Registry == nil || env.Sink == nil {
		return nil, errors.New("matrix: env needs a media registry and a sink")
	}
	if s.DataDir == "" {
		return nil, errors.New("matrix: no data dir for the sync state")
	}
	log := env.Log
	if log == nil {
		log = slog.Default()
	}
	// Named once here; channels.Env.Compose logs through env.Log too.
	env.Log = log.With("channel", Name)
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), cfg.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("matrix: channels.matrix.homeserver %q: %w", cfg.Homeserver, err)
	}
	m := &Matrix{
		cfg:           cfg,
		env:           env,
		log:           env.Log,
		dataDir:       s.DataDir,
		store:         s,
		cli:           cli,
		pollTimeout:   30 * time.Second,
		syncBackoff:   backoff.Schedule{Initial: time.Second, Max: 2 * time.Minute},
		typingTimeout: 30 * time.Second,
		typingEvery:   20 * time.Second,
		typingMax:     5 * time.Minute,
		keyWait:       10 * time.Minute,
		render:        render,
		rooms:         map[id.RoomID]*room{},
		invites:       map[id.RoomID]id.UserID{},
		sent:          newRecent(4096),
		typing:        map[string]*typingLoop{},
	}
	m.setHTTP(time.Second)
	return m, nil
}

// setHTTP gives the client botd's transport and mautrix's own retries
// (network errors, 429, 502-504; the same request again, so a send keeps
// its transaction id) with a first backoff of base.
func (m *Matrix) setHTTP(base time.Duration) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A /sync answers within pollTimeout; anything slower is a dead
	// connection. No overall timeout: a large download must not be cut
	// off, the caller's ctx bounds it.
	tr.ResponseHeaderTimeout = m.pollTimeout + 15*time.Second
	// Every call (sends, edits, reactions, typing, receipts, /sync,
	// media) leaves through the fence: a stale instance sends nothing
	// (channels.FencedTransport).
	m.cli.Client = &http.Client{Transport: channels.FencedTransport(m.env.Fence, tr)}
	m.cli.DefaultHTTPRetries = 3
	m.cli.DefaultHTTPBackoff = base
	m.cli.MaxHTTPBackoff = time.Minute
	m.cli.UserAgent = "botd"
}

// Name implements channels.Channel.
func (m *Matrix) Name() string { return Name }

// Wait implements channels.Waiter: it returns once the sync loop and
// every typing loop returned after Start's ctx ended. No message reaches
// the sink after it returned.
func (m *Matrix) Wait() { m.wg.Wait() }

// Me is the bot account as the homeserver confirmed it in Start.
func (m *Matrix) Me() id.UserID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.me
}

// Start checks the token with /account/whoami (after a password login,
// the first time, when only a password is configured), then syncs in the
// background until ctx ends.
func (m *Matrix) Start(ctx context.Context) error {
	if err := m.once.Begin(Name); err != nil {
		return err
	}
	states, err := m.store.openStateStore(ctx, m.cfg.UserID)
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	started := false
	defer func() {
		if !started {
			states.close()
		}
	}()
	st, err := states.load(ctx)
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	if st.Homeserver != m.cfg.Homeserver || st.UserID != m.cfg.UserID {
		// Another account's position and token are no use to this one.
		st = state{Homeserver: m.cfg.Homeserver, UserID: m.cfg.UserID}
	}
	m.mu.Lock()
	m.states, m.st = states, st
	m.mu.Unlock()

	who, err := m.authenticate(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.me = who.UserID
	m.cli.DeviceID = who.DeviceID
	for _, r := range m.st.Invites {
		m.invites[id.RoomID(r)] = ""
	}
	m.mu.Unlock()
	m.log.Info("matrix connected", "user", who.UserID, "device", who.DeviceID, "resuming", m.st.Since != "")
	m.startCrypto(ctx)

	m.mu.Lock()
	m.runCtx = ctx
	m.mu.Unlock()
	started = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.syncLoop(ctx)
		m.mu.Lock()
		m.stopped = true
		eng := m.crypto
		m.mu.Unlock()
		if eng != nil {
			if err := eng.close(); err != nil {
				m.log.Warn("matrix: closing the crypto store", "err", err)
			}
		}
		if err := states.close(); err != nil {
			m.log.Warn("matrix: closing the state store", "err", err)
		}
	}()
	return nil
}

// startCrypto turns end-to-end encryption on, or leaves it off with the
// reason logged: the channel runs either way, and encrypted rooms are
// then refused as they are without the goolm build tag.
func (m *Matrix) startCrypto(ctx context.Context) {
	if m.cli.DeviceID == "" {
		m.setCrypto(nil, errors.New("the homeserver named no device for the access token"))
		return
	}
	eng, err := m.openCrypto(ctx)
	m.setCrypto(eng, err)
}

func (m *Matrix) setCrypto(eng cryptoEngine, err error) {
	if err != nil {
		err = errors.New(m.redact(err.Error()))
	}
	m.mu.Lock()
	m.crypto, m.cryptoOff = eng, err
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("matrix: end-to-end encryption is off; encrypted rooms are refused", "reason", err)
		return
	}
	m.log.Info("matrix: end-to-end encryption on", "device", m.cli.DeviceID, "ed25519", eng.deviceKey(), "store", m.cryptoWhere())
}

// cryptoState is the crypto engine, or nil and why it is off.
func (m *Matrix) cryptoState() (cryptoEngine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crypto == nil && m.cryptoOff == nil {
		return nil, errors.New("the channel has not started")
	}
	return m.crypto, m.cryptoOff
}

// CryptoOff says why end-to-end encryption is off (nil while it is on):
// for the dashboard beside EncryptedRooms.
func (m *Matrix) CryptoOff() error {
	_, err := m.cryptoState()
	return err
}

// authenticate settles the access token (the configured one, or the one
// a password login got and the state file kept) and checks it.
func (m *Matrix) authenticate(ctx context.Context) (*mautrix.RespWhoami, error) {
	token := m.cfg.AccessToken
	fromState := false
	if token == "" {
		m.mu.Lock()
		token = m.st.AccessToken
		m.mu.Unlock()
		fromState = token != ""
	}
	if token == "" {
		var err error
		if token, err = m.login(ctx); err != nil {
			return nil, err
		}
	}
	m.cli.AccessToken = token
	who, err := m.cli.Whoami(ctx)
	if errors.Is(err, mautrix.MUnknownToken) && fromState {
		// The kept token was logged out: log in again, once.
		m.log.Warn("matrix: the token from the password login was rejected; logging in again")
		if token, err = m.login(ctx); err != nil {
			return nil, err
		}
		m.cli.AccessToken = token
		who, err = m.cli.Whoami(ctx)
	}
	if err := m.whoamiErr(who, err); err != nil {
		return nil, err
	}
	return who, nil
}

// whoamiErr says what a /account/whoami answer means for the settings:
// a rejected token, an unreachable homeserver, another account's token.
func (m *Matrix) whoamiErr(who *mautrix.RespWhoami, err error) error {
	switch {
	case errors.Is(err, mautrix.MUnknownToken), errors.Is(err, mautrix.MMissingToken), errors.Is(err, mautrix.MForbidden):
		return fmt.Errorf("matrix: the homeserver rejected the access token (%s); check channels.matrix.access_token (MATRIX_ACCESS_TOKEN)", m.redact(err.Error()))
	case err != nil:
		return channels.Unreachable("matrix: whoami at %s (channels.matrix.homeserver): %s", m.cfg.Homeserver, m.redact(err.Error()))
	}
	if who.UserID != id.UserID(m.cfg.UserID) {
		return fmt.Errorf("matrix: the access token belongs to %s, not to channels.matrix.user_id %s", who.UserID, m.cfg.UserID)
	}
	return nil
}

// login exchanges channels.matrix.password for a token and keeps it in
// the state file, so the password is sent once, not at every start.
func (m *Matrix) login(ctx context.Context) (string, error) {
	if m.cfg.Password == "" {
		return "", errors.New("matrix: no access token: set channels.matrix.access_token (or password)")
	}
	resp, err := m.cli.Login(ctx, &mautrix.ReqLogin{
		Type:                     mautrix.AuthTypePassword,
		Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: m.cfg.UserID},
		Password:                 m.cfg.Password,
		InitialDeviceDisplayName: "botd",
	})
	if err != nil {
		return "", fmt.Errorf("matrix: password login as %s failed (check channels.matrix.password): %s", m.cfg.UserID, m.redact(err.Error()))
	}
	m.mu.Lock()
	m.st.AccessToken, m.st.DeviceID = resp.AccessToken, resp.DeviceID.String()
	st, states := m.st, m.states
	m.mu.Unlock()
	if err := states.save(ctx, st); err != nil {
		return "", fmt.Errorf("matrix: keeping the token of the password login: %w", err)
	}
	m.log.Info("matrix: logged in with the password; the token is kept with the sync state", "device", resp.DeviceID, "in", m.store.String())
	return resp.AccessToken, nil
}

// syncLoop long-polls /sync until ctx ends. Failures back off (capped,
// jittered) and the loop carries on from the same position, so a lost
// connection or a restarted homeserver costs nothing. The position is
// saved after the store holds the batch (a delivery the store refused is
// retried and holds up the next /sync): a crash in between hands the
// batch out again, and the store's upsert absorbs that.
func (m *Matrix) syncLoop(ctx context.Context) {
	m.mu.Lock()
	since := m.st.Since
	m.mu.Unlock()
	failures := 0
	for ctx.Err() == nil {
		resp, err := m.cli.FullSyncRequest(ctx, mautrix.ReqSync{
			Since: since, Timeout: int(m.pollTimeout / time.Millisecond), FilterID: syncFilter,
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := m.syncBackoff.Wait(failures)
			failures++
			msg := "matrix sync failed; retrying"
			if errors.Is(err, mautrix.MUnknownToken) {
				msg = "matrix sync: the homeserver rejected the access token (logged out?); check channels.matrix.access_token; retrying"
			}
			m.log.Warn(msg, "err", m.redact(err.Error()), "attempt", failures, "wait", wait)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if failures > 0 {
			m.log.Info("matrix sync recovered", "after_failures", failures)
			failures = 0
		}
		m.handleSync(ctx, resp, since == "")
		if m.takeUnstored() {
			// Only when receiving stopped: the saved position stays before
			// this batch, so nothing of it is lost.
			return
		}
		if resp.NextBatch != "" && resp.NextBatch != since {
			since = resp.NextBatch
			m.saveSince(ctx, since)
		}
	}
}

func (m *Matrix) saveSince(ctx context.Context, since string) {
	m.mu.Lock()
	m.st.Since = since
	m.st.Invites = m.st.Invites[:0]
	for r := range m.invites {
		m.st.Invites = append(m.st.Invites, string(r))
	}
	st, states := m.st, m.states
	m.mu.Unlock()
	// The batch was handed out: its position is kept even when ctx just
	// ended, or the next start (here or on the standby) hands it out again.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := states.save(ctx, st); err != nil {
		// The loop goes on; a restart replays from the last saved position.
		m.log.Warn("matrix: saving the sync position failed", "err", err)
	}
}

// redact hides the access token and password in s.
func (m *Matrix) redact(s string) string {
	for _, secret := range []string{m.cli.AccessToken, m.cfg.AccessToken, m.cfg.Password} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "<secret>")
		}
	}
	return s
}

func (m *Matrix) isStopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
}
