package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Checker = (*Slack)(nil)

// Check asks Slack who the bot token belongs to (auth.test), as Start
// does first, without opening a socket or listening for events.
func (s *Slack) Check(ctx context.Context) (string, error) {
	auth, err := s.api.AuthTestContext(ctx)
	if err != nil {
		return "", fmt.Errorf("auth.test failed, check channels.slack.bot_token (SLACK_BOT_TOKEN) and api_url: %s", hide(err.Error(), s.cfg.BotToken, s.cfg.AppToken))
	}
	return fmt.Sprintf("bot user %s in workspace %q", auth.UserID, auth.Team), nil
}

// hide replaces each non-empty token in s.
func hide(s string, tokens ...string) string {
	for _, t := range tokens {
		if t != "" {
			s = strings.ReplaceAll(s, t, "<token>")
		}
	}
	return s
}
