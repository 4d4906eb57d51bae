package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Checker = (*WhatsApp)(nil)

// Check looks for a paired device in the session store, as Start does,
// without connecting: WhatsApp has no read-only call to prove a session
// with, and a second connection of the same device would take over the
// running one's. A SQLite session file that does not exist is not
// created.
func (w *WhatsApp) Check(ctx context.Context) (string, error) {
	if w.session.PostgresDSN == "" {
		if _, err := os.Stat(w.session.Path); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("whatsapp: not paired (no session in %s): run `botd whatsapp login`", w.session)
		}
	}
	container, err := openContainer(ctx, w.session, w.log)
	if err != nil {
		return "", err
	}
	defer container.Close()
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		return "", fmt.Errorf("whatsapp: read session in %s: %w", w.session, err)
	}
	if dev.ID == nil {
		return "", fmt.Errorf("whatsapp: not paired (no device in %s): run `botd whatsapp login`", w.session)
	}
	return fmt.Sprintf("paired as %s (session %s; not connected by this check)", dev.ID.ToNonAD(), w.session), nil
}
