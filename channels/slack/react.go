package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Reactor = (*Slack)(nil)

// emojiNames are the names Slack knows the emoji botd reacts with by
// (ack_reaction and the failure mark); Slack takes names, not the
// characters.
var emojiNames = map[string]string{
	"👀": "eyes", "✅": "white_check_mark", "👍": "+1", "🤔": "thinking_face", "⏳": "hourglass_flowing_sand",
	"😢": "cry", "🙏": "pray", "🔥": "fire", "⚠️": "warning", "❌": "x", "👌": "ok_hand", "🎉": "tada",
}

// emojiName is Slack's name of emoji.
func emojiName(emoji string) (string, error) {
	if n, ok := emojiNames[emoji]; ok {
		return n, nil
	}
	return "", fmt.Errorf("slack reaction: no Slack name known for %q (botd knows %s)", emoji, knownEmoji())
}

func knownEmoji() string {
	var ks []string
	for k := range emojiNames {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, " ")
}

// React implements channels.Reactor with reactions.remove of old and
// reactions.add of emoji. A reaction already there (or already gone) is
// what was asked for: not an error.
func (s *Slack) React(ctx context.Context, r channels.Reaction) error {
	chat, old, emoji := r.Chat, r.Old, r.Emoji
	channel, err := nativeID(chat)
	if err != nil {
		return err
	}
	ref := slackapi.NewRefToMessage(channel, r.MessageID)
	if old != "" {
		name, err := emojiName(old)
		if err != nil {
			return err
		}
		if err := s.api.RemoveReactionContext(ctx, name, ref); err != nil && !isSlackError(err, "no_reaction") {
			return fmt.Errorf("slack: reactions.remove in %s: %w", chat, err)
		}
	}
	if emoji != "" {
		name, err := emojiName(emoji)
		if err != nil {
			return err
		}
		if err := s.api.AddReactionContext(ctx, name, ref); err != nil && !isSlackError(err, "already_reacted") {
			return fmt.Errorf("slack: reactions.add in %s: %w", chat, err)
		}
	}
	return nil
}

// isSlackError reports whether err is Slack's error code.
func isSlackError(err error, code string) bool {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err == code
	}
	return err.Error() == code
}
