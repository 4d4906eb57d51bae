package discord

import (
	"context"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Reactor = (*Discord)(nil)

// React implements channels.Reactor: the bot's own reaction old is
// deleted (DELETE …/reactions/<old>/@me; one already gone is no error
// there) and emoji put (PUT …/reactions/<emoji>/@me). Unicode emoji go
// as they are.
func (d *Discord) React(ctx context.Context, r channels.Reaction) error {
	ch, err := nativeChat(r.Chat)
	if err != nil {
		return err
	}
	if r.Old != "" {
		if err := d.s.MessageReactionRemove(ch, r.MessageID, r.Old, "@me", discordgo.WithContext(ctx)); err != nil {
			return fmt.Errorf("discord: remove reaction in %s: %w", r.Chat, err)
		}
	}
	if r.Emoji != "" {
		if err := d.s.MessageReactionAdd(ch, r.MessageID, r.Emoji, discordgo.WithContext(ctx)); err != nil {
			return fmt.Errorf("discord: add reaction in %s: %w", r.Chat, err)
		}
	}
	return nil
}
