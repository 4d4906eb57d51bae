package telegram

import (
	"context"

	"github.com/go-telegram/bot/models"
)

// HandleUpdate feeds one update through the receive path as a poll would,
// with me as the bot getMe returned. It is for the benchmark in package
// telegram_test, which imports package agent (whose config imports this
// package) and so cannot live in package telegram.
func HandleUpdate(t *Telegram, ctx context.Context, me models.User, u *models.Update) {
	t.mu.Lock()
	t.me = me
	t.mu.Unlock()
	t.onUpdate(ctx, nil, u)
}
