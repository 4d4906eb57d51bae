package matrix

import (
	"context"
	"fmt"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Checker = (*Matrix)(nil)

// Check asks the homeserver who the access token belongs to
// (/account/whoami) without syncing. With only a password configured it
// uses the token the first password login kept; before that login it
// does not log in (that would make a new device) and says so.
func (m *Matrix) Check(ctx context.Context) (string, error) {
	token := m.cfg.AccessToken
	if token == "" {
		states, err := m.store.openStateStore(ctx, m.cfg.UserID)
		if err != nil {
			return "", fmt.Errorf("matrix: %w", err)
		}
		st, err := states.load(ctx)
		states.close()
		if err != nil {
			return "", fmt.Errorf("matrix: %w", err)
		}
		if st.Homeserver == m.cfg.Homeserver && st.UserID == m.cfg.UserID {
			token = st.AccessToken
		}
	}
	if token == "" {
		return "", fmt.Errorf("matrix: only channels.matrix.password is set and botd has not logged in yet; "+
			"it logs in at its first start (a new device): %w", channels.ErrUnchecked)
	}
	m.mu.Lock()
	m.cli.AccessToken = token
	m.mu.Unlock()
	who, err := m.cli.Whoami(ctx)
	if err := m.whoamiErr(who, err); err != nil {
		return "", err
	}
	return fmt.Sprintf("user %s (device %s)", who.UserID, who.DeviceID), nil
}
