//go:build goolm

package matrix

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"

	"github.com/botd-dev/botd/store"
)

// CryptoBuilt says this build has end-to-end encryption (mautrix's
// pure-Go Olm, the goolm build tag).
const CryptoBuilt = true

// olmEngine is mautrix's OlmMachine over a SQLite store (modernc's pure-Go
// driver, as botd's own database) in the data dir, or over botd's
// Postgres database.
type olmEngine struct {
	mach  *crypto.OlmMachine
	db    *dbutil.Database
	state *sqlstatestore.SQLStateStore
	cli   *mautrix.Client
	// shareMu keeps two answers to one room from sharing two sessions.
	shareMu sync.Mutex
}

// openCrypto opens (creating on the first start) the device's crypto
// store, loads or creates its Olm account, and makes sure the
// homeserver has the device's keys: uploaded once, on the first start;
// a later start finds them there and uploads nothing. A panic in the
// crypto library is an error here, never a crash.
func (m *Matrix) openCrypto(ctx context.Context) (_ cryptoEngine, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the crypto library failed: %v", p)
		}
	}()
	if m.store.PostgresDSN != "" {
		return m.openPostgresCrypto(ctx)
	}
	key, err := pickleKey(m.dataDir)
	if err != nil {
		return nil, err
	}
	path := CryptoPath(m.dataDir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("crypto store: %w", err)
	}
	raw, err := sql.Open("sqlite", store.DSN(path))
	if err != nil {
		return nil, fmt.Errorf("crypto store %s: %w", path, err)
	}
	db, err := dbutil.NewWithDB(raw, "sqlite")
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("crypto store %s: %w", path, err)
	}
	e, err := m.loadOlm(ctx, db, key, true)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("crypto store %s: %w", path, err)
	}
	// The store holds the device's private keys and the rooms' keys.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(p, 0o600)
	}
	return e, nil
}

// openPostgresCrypto opens the crypto store in botd's Postgres database
// (mautrix's crypto_* and mx_* tables, through dbutil's postgres dialect
// on a plain pgx handle), sealed with the key kept beside it
// (pgPickleKey): the instance that takes the lease over opens the same
// device with the same Olm and Megolm sessions.
func (m *Matrix) openPostgresCrypto(ctx context.Context) (cryptoEngine, error) {
	raw, err := openPostgres(ctx, m.store.PostgresDSN, 4)
	if err != nil {
		return nil, fmt.Errorf("crypto store: %w", err)
	}
	key, err := pgPickleKey(ctx, raw, m.cfg.UserID)
	if err != nil {
		raw.Close()
		return nil, err
	}
	db, err := dbutil.NewWithDB(raw, "postgres")
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("crypto store in postgres: %w", err)
	}
	e, err := m.loadOlm(ctx, db, key, true)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("crypto store in postgres: %w", err)
	}
	return e, nil
}

// loadOlm makes the engine over an open store; publish makes sure the
// homeserver has the device's keys (the fuzz target runs without one).
func (m *Matrix) loadOlm(ctx context.Context, db *dbutil.Database, key []byte, publish bool) (*olmEngine, error) {
	zl := zerolog.New(zerologSlog{m.log}).Level(zerolog.DebugLevel)
	dblog := dbutil.ZeroLogger(zl)
	db.Log = dblog
	// One account per device: a new token for a new device starts a new
	// account in the same file rather than reusing the old device's keys.
	accountID := string(m.cli.UserID) + "/" + string(m.cli.DeviceID)
	cs := crypto.NewSQLCryptoStore(db, dblog, accountID, m.cli.DeviceID, key)
	if err := cs.DB.Upgrade(ctx); err != nil {
		return nil, fmt.Errorf("upgrading the crypto tables: %w", err)
	}
	ss := sqlstatestore.NewSQLStateStore(db, dblog, false)
	if err := ss.Upgrade(ctx); err != nil {
		return nil, fmt.Errorf("upgrading the room state tables: %w", err)
	}
	mach := crypto.NewOlmMachine(m.cli, &zl, cs, ss)
	// Trust: botd cannot compare emoji or scan a QR code, so it trusts
	// on first use. Answers are encrypted for every device of the room's
	// members that is not blacklisted, verified or not (mautrix's default,
	// as Element does); messages from unverified devices are read.
	mach.SendKeysMinTrust = id.TrustStateUnset
	// Room keys are never handed out on request: a device asking for the
	// keys of past messages gets nothing from the bot.
	mach.AllowKeyShare = func(context.Context, *id.Device, event.RequestedKeyInfo) *crypto.KeyShareRejection {
		return &crypto.KeyShareRejectNoResponse
	}
	if err := mach.Load(ctx); err != nil {
		return nil, fmt.Errorf("loading the Olm account (a store from another pickle key, or damaged): %w", err)
	}
	e := &olmEngine{mach: mach, db: db, state: ss, cli: m.cli}
	if publish {
		if err := e.publishKeys(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// publishKeys uploads the device's identity and one-time keys if the
// homeserver does not have them yet, and checks they are the ones in
// the store if it does (as mautrix's cryptohelper does).
func (e *olmEngine) publishKeys(ctx context.Context) error {
	resp, err := e.cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{
		DeviceKeys: map[id.UserID]mautrix.DeviceIDList{e.cli.UserID: {e.cli.DeviceID}},
	})
	if err != nil {
		return fmt.Errorf("asking the homeserver for the device's keys: %w", err)
	}
	own := e.mach.OwnIdentity()
	shared := e.mach.GetAccount().Shared
	device, ok := resp.DeviceKeys[e.cli.UserID][e.cli.DeviceID]
	switch {
	case !ok || len(device.Keys) == 0:
		if shared {
			return errors.New("the homeserver lost the device's keys that botd uploaded (was the device logged out?)")
		}
		if err := e.mach.ShareKeys(ctx, -1); err != nil {
			return fmt.Errorf("uploading the device's keys: %w", err)
		}
	case !shared:
		return fmt.Errorf("device %s already has keys on the homeserver that are not in botd's store (another client's device? give botd a token of its own)", e.cli.DeviceID)
	case device.Keys.GetEd25519(e.cli.DeviceID) != own.SigningKey:
		return fmt.Errorf("the homeserver has another identity key for device %s than botd's store", e.cli.DeviceID)
	}
	return nil
}

func (e *olmEngine) processSync(ctx context.Context, resp *mautrix.RespSync) {
	e.mach.ProcessSyncResponse(ctx, resp, "")
}

func (e *olmEngine) updateState(ctx context.Context, evt *event.Event) {
	mautrix.UpdateStateStore(ctx, e.state, evt)
	switch evt.Type {
	case event.StateMember:
		// A member leaving (or a new one) retires the room's outbound
		// session, so the next answer gets a new one shared to who is in.
		e.mach.HandleMemberEvent(ctx, evt)
	case event.StateHistoryVisibility:
		e.mach.HandleHistoryVisibility(ctx, evt)
	}
}

func (e *olmEngine) decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	if evt.Content.Parsed == nil {
		if err := evt.Content.ParseRaw(evt.Type); err != nil {
			return nil, fmt.Errorf("unreadable encrypted content: %w", err)
		}
	}
	dec, err := e.mach.DecryptMegolmEvent(ctx, evt)
	if errors.Is(err, crypto.ErrNoSessionFound) {
		return nil, fmt.Errorf("%w: %w", errNoSession, err)
	}
	return dec, err
}

func (e *olmEngine) encrypt(ctx context.Context, r id.RoomID, t event.Type, content any) (*event.EncryptedEventContent, error) {
	e.shareMu.Lock()
	defer e.shareMu.Unlock()
	enc, err := e.mach.EncryptMegolmEvent(ctx, r, t, content)
	if err == nil {
		return enc, nil
	}
	if !errors.Is(err, crypto.ErrSessionExpired) && !errors.Is(err, crypto.ErrNoGroupSession) && !errors.Is(err, crypto.ErrSessionNotShared) {
		return nil, err
	}
	// The sync loads members lazily (only those who speak), so the full
	// list comes from /members, joined and invited alike.
	resp, err := e.cli.Members(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("listing the room's members to share its key: %w", err)
	}
	var users []id.UserID
	for _, evt := range resp.Chunk {
		if evt == nil || evt.StateKey == nil {
			continue
		}
		if mc, ok := evt.Content.Parsed.(*event.MemberEventContent); ok &&
			(mc.Membership == event.MembershipJoin || mc.Membership == event.MembershipInvite) {
			users = append(users, id.UserID(*evt.StateKey))
		}
	}
	if err := e.mach.ShareGroupSession(ctx, r, users); err != nil {
		return nil, fmt.Errorf("sharing the room key with the members' devices: %w", err)
	}
	return e.mach.EncryptMegolmEvent(ctx, r, t, content)
}

func (e *olmEngine) isEncrypted(ctx context.Context, r id.RoomID) bool {
	ok, err := e.state.IsEncrypted(ctx, r)
	return err == nil && ok
}

func (e *olmEngine) deviceKey() string { return string(e.mach.OwnIdentity().SigningKey) }

func (e *olmEngine) close() error {
	e.mach.Destroy()
	return e.db.Close()
}

// zerologSlog carries mautrix's zerolog output into botd's log: its
// errors as warnings (the dashboard shows those), the rest at debug.
type zerologSlog struct{ l *slog.Logger }

func (z zerologSlog) Write(p []byte) (int, error) { return z.WriteLevel(zerolog.DebugLevel, p) }

func (z zerologSlog) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	lv := slog.LevelDebug
	if level >= zerolog.ErrorLevel {
		lv = slog.LevelWarn
	}
	if !z.l.Enabled(context.Background(), lv) {
		return len(p), nil
	}
	var fields map[string]any
	if json.Unmarshal(p, &fields) != nil {
		z.l.Log(context.Background(), lv, "matrix crypto: "+strings.TrimSpace(string(p)))
		return len(p), nil
	}
	msg, _ := fields["message"].(string)
	delete(fields, "message")
	delete(fields, "level")
	delete(fields, "time")
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	z.l.Log(context.Background(), lv, "matrix crypto: "+msg, args...)
	return len(p), nil
}
