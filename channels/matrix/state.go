package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/botd-dev/botd/internal/atomicfile"
)

// StatePath is where the channel keeps what it must remember across
// restarts: the sync position, and the token a password login got.
func StatePath(dataDir string) string { return filepath.Join(dataDir, "matrix", "state.json") }

// state is the file at StatePath. It holds a secret (the access token
// of a password login), so it is written 0600 in a 0700 folder under the
// data dir, never under groups/ or data/ipc/.
type state struct {
	// Homeserver and UserID say whose state this is: a config pointing
	// at another account must not resume (or reuse a token) from it.
	Homeserver  string `json:"homeserver"`
	UserID      string `json:"user_id"`
	Since       string `json:"since,omitempty"`
	AccessToken string `json:"access_token,omitempty"`
	DeviceID    string `json:"device_id,omitempty"`
	// Invites are rooms botd was invited to that no group had
	// registered yet: botd joins one once it is registered.
	Invites []string `json:"invites,omitempty"`
}

// maxStateBytes bounds the state file read back; it is a few hundred bytes.
const maxStateBytes = 64 << 10

// loadState reads the state file; a missing one is an empty state.
func loadState(path string) (state, error) {
	var st state
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("matrix state %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return st, fmt.Errorf("matrix state %s: %w", path, err)
	}
	if len(b) > maxStateBytes {
		return st, fmt.Errorf("matrix state %s: larger than %d bytes", path, maxStateBytes)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("matrix state %s: %w", path, err)
	}
	return st, nil
}

// saveState replaces the state file atomically: a crash leaves the old
// sync position (some events are handed out again, which the store's
// upsert absorbs) or the new one, never a torn file.
func saveState(path string, st state) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("matrix state: %w", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("matrix state: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("matrix state %s: %w", path, err)
	}
	return nil
}
