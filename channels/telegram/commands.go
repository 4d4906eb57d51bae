package telegram

import (
	"context"
	"fmt"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
)

var _ channels.CommandMenu = (*Telegram)(nil)

// SetCommands implements channels.CommandMenu with setMyCommands, so the
// clients offer the commands when someone types "/".
func (t *Telegram) SetCommands(ctx context.Context, cmds []channels.BotCommand) error {
	p := &bot.SetMyCommandsParams{}
	for _, c := range cmds {
		help := c.Help
		if r := []rune(help); len(r) > 256 { // the Bot API's bound
			help = string(r[:255]) + "…"
		}
		p.Commands = append(p.Commands, models.BotCommand{Command: c.Name, Description: help})
	}
	err := t.retry(ctx, true, func() error { // the same list again is harmless
		_, err := t.b.SetMyCommands(ctx, p)
		return err
	})
	if err != nil {
		return fmt.Errorf("telegram: setMyCommands: %s", redact(err.Error(), t.cfg.Token))
	}
	return nil
}
