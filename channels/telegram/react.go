package telegram

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
)

var (
	_ channels.Reactor = (*Telegram)(nil)
	_ channels.Sighted = (*Telegram)(nil)
)

// React implements channels.Reactor with setMessageReaction, which
// replaces the bot's reaction: old needs no call of its own. A bot may
// only use Telegram's fixed list of reaction emoji; another is refused
// by the Bot API (REACTION_INVALID) and reported here.
func (t *Telegram) React(ctx context.Context, r channels.Reaction) error {
	chat, messageID, emoji := r.Chat, r.MessageID, r.Emoji
	id, err := nativeChat(chat)
	if err != nil {
		return err
	}
	msg, err := strconv.Atoi(messageID)
	if err != nil {
		return fmt.Errorf("telegram reaction: message id %q is not a number", messageID)
	}
	p := &bot.SetMessageReactionParams{ChatID: id, MessageID: msg}
	if emoji != "" {
		p.Reaction = []models.ReactionType{{Type: models.ReactionTypeTypeEmoji,
			ReactionTypeEmoji: &models.ReactionTypeEmoji{Type: models.ReactionTypeTypeEmoji, Emoji: emoji}}}
	}
	err = t.retry(ctx, true, func() error {
		_, err := t.b.SetMessageReaction(ctx, p)
		return err
	})
	if err != nil {
		return fmt.Errorf("telegram reaction in %s: %s", chat, redact(err.Error(), t.cfg.Token))
	}
	return nil
}

// privacyNote says what a bot in privacy mode sees of a group.
const privacyNote = "Note: this bot's privacy mode is on, so in groups it only sees messages that mention it, " +
	"reply to it or start with a /command, not the conversation around them. To let it read the whole group, " +
	"turn privacy mode off with @BotFather (/setprivacy → Disable), then remove the bot and add it again (or make it an admin)."

// SightNote implements channels.Sighted: getMe's can_read_all_group_messages
// is false while privacy mode is on (the default for every new bot).
func (t *Telegram) SightNote() string {
	me := t.Me()
	if me.ID == 0 || me.CanReadAllGroupMessages {
		return ""
	}
	return privacyNote
}
