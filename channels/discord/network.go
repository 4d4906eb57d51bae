package discord

import (
	"context"
	"regexp"
	"time"

	"github.com/botd-dev/botd/channels"
)

// On reports whether the channel is enabled.
func (c Config) On() bool { return c.Enabled }

// The network's description: botd's shared code reads it rather than
// naming discord (channels.Register). Discord refs refresh their signed CDN link at each fetch.
func init() {
	channels.Register(channels.Network{
		Name:       Name,
		RefPrefix:  "dc",
		RefTTL:     30 * 24 * time.Hour,
		Formatting: "Markdown is shown as Discord renders it: **bold**, *italic*, ~~strike~~, `code`, code blocks with a language, [links](https://…), > quotes, - lists and # headings; tables are not supported. Mentions you write ping nobody.",
		Setup:      "channels.discord.enabled: true and DISCORD_BOT_TOKEN",
		Checks:     "Discord /users/@me",
		Example:    "  discord:\n    enabled: ${DISCORD_ENABLED:-false}\n    token: \"${DISCORD_BOT_TOKEN}\"         # Developer Portal → Bot; turn on Message Content Intent\n",
		Config:     func() channels.NetworkConfig { c := DefaultConfig(); return &c },
		New: func(env channels.Env, host channels.Host, cfg channels.NetworkConfig) (channels.Channel, error) {
			return New(*cfg.(*Config), env)
		},
		Check: func(ctx context.Context, cfg channels.NetworkConfig) error { return Check(ctx, *cfg.(*Config)) },

		// What its chat ids look like: another shape is warned about.
		ChatWarning: func(native string) string {
			if chatIDShape.MatchString(native) {
				return ""
			}
			return "Discord channel ids are numbers of 17 to 20 digits (Developer Mode, then Copy Channel ID)"
		},
	})
}

// chatIDShape is what a chat id of this network looks like.
var chatIDShape = regexp.MustCompile(`^[0-9]{15,21}$`)
