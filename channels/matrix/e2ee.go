package matrix

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/internal/atomicfile"
)

// CryptoPath is the SQLite database of the bot's end-to-end encryption:
// its device's Olm account, the Olm and Megolm sessions, the devices it
// knows and the encryption state of its rooms. Under the data dir,
// beside the state file, never under groups/ or data/ipc/.
func CryptoPath(dataDir string) string { return filepath.Join(dataDir, "matrix", "crypto.db") }

// cryptoWhere names the crypto store in the log: its file, or the
// Postgres database (never its DSN).
func (m *Matrix) cryptoWhere() string {
	if m.store.PostgresDSN != "" {
		return m.store.String()
	}
	return CryptoPath(m.dataDir)
}

// pickleKeyPath holds the key the crypto store's secrets (the Olm
// account, the sessions) are encrypted with at rest.
func pickleKeyPath(dataDir string) string { return filepath.Join(dataDir, "matrix", "crypto.key") }

// errNoSession is a message whose Megolm session botd has not (yet)
// received: the sender's device may send the key in a later sync.
var errNoSession = errors.New("no room key for this message (yet)")

// cryptoEngine is end-to-end encryption for the channel. Only the
// build with the goolm tag has one (mautrix's pure-Go Olm); without it
// openCrypto says so and encrypted rooms are refused.
type cryptoEngine interface {
	// processSync feeds a sync's to-device events (room keys), device
	// list changes and one-time key counts to the Olm machine. It runs
	// before the sync's rooms, so a key that came with its message is
	// there when the message is decrypted.
	processSync(ctx context.Context, resp *mautrix.RespSync)
	// updateState learns a room's encryption, members and history
	// visibility from a state event (parsed).
	updateState(ctx context.Context, evt *event.Event)
	// decrypt opens an m.room.encrypted event; errNoSession when its
	// key has not arrived.
	decrypt(ctx context.Context, evt *event.Event) (*event.Event, error)
	// encrypt seals content for room r, sharing a Megolm session with
	// the members' devices first when needed.
	encrypt(ctx context.Context, r id.RoomID, t event.Type, content any) (*event.EncryptedEventContent, error)
	// isEncrypted reports whether the store knows room r as encrypted.
	isEncrypted(ctx context.Context, r id.RoomID) bool
	// deviceKey is the device's Ed25519 fingerprint key, for the log.
	deviceKey() string
	close() error
}

// maxPickleKeyBytes bounds the key file read back.
const maxPickleKeyBytes = 1024

// pickleKey returns the key the SQLite crypto store is sealed with:
// random, made once and kept 0600 in the data dir (on Postgres it is in
// the database: pgPickleKey). Not derived from the access token:
// a token changes (a new password login, a rotated token) while the
// device keeps its keys, and a derived key would then lock botd out of
// its own store; and a token pasted into a config file is more exposed
// than a file only botd reads. Whoever reads the data dir can read both
// the store and this key, as with WhatsApp's session store: at-rest
// protection of the data dir is the file system's.
func pickleKey(dataDir string) ([]byte, error) {
	path := pickleKeyPath(dataDir)
	f, err := os.Open(path)
	switch {
	case err == nil:
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxPickleKeyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("crypto key %s: %w", path, err)
		}
		if len(b) < 32 || len(b) > maxPickleKeyBytes {
			return nil, fmt.Errorf("crypto key %s: %d bytes, want 32 to %d", path, len(b), maxPickleKeyBytes)
		}
		return b, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("crypto key %s: %w", path, err)
	}
	if _, err := os.Stat(CryptoPath(dataDir)); err == nil {
		// A store without its key cannot be opened; a new key would only
		// hide that until the account fails to unpickle.
		return nil, fmt.Errorf("crypto key %s is missing but the store %s exists (move the store away to start a new device)", path, CryptoPath(dataDir))
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("crypto key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("crypto key: %w", err)
	}
	if err := atomicfile.WriteFile(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("crypto key %s: %w", path, err)
	}
	return key, nil
}
