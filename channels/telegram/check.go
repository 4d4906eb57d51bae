package telegram

import (
	"context"
	"fmt"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Checker = (*Telegram)(nil)

// Check asks the Bot API who the token belongs to (getMe), as Start does
// first, without polling or setting a webhook.
func (t *Telegram) Check(ctx context.Context) (string, error) {
	me, err := t.getMe(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("bot @%s (id %d)", me.Username, me.ID), nil
}
