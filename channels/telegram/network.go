package telegram

import (
	"regexp"
	"time"

	"github.com/botd-dev/botd/channels"
)

// On reports whether the channel is enabled.
func (c Config) On() bool { return c.Enabled }

// The network's description: botd's shared code reads it rather than
// naming telegram (channels.Register). Telegram file ids do not expire.
func init() {
	channels.Register(channels.Network{
		Name:       Name,
		RefPrefix:  "tg",
		RefTTL:     30 * 24 * time.Hour,
		Formatting: "Markdown is shown as Telegram formatting: **bold**, *italic*, ~~strike~~, `code`, code blocks, [links](https://…), > quotes and - lists; headings become bold lines and tables are not supported, so use few of either.",
		Setup:      "channels.telegram.enabled: true and TELEGRAM_BOT_TOKEN",
		Checks:     "Telegram getMe",
		Example:    "  telegram:\n    enabled: ${TELEGRAM_ENABLED:-false}\n    token: \"${TELEGRAM_BOT_TOKEN}\"\n    api_url: \"https://api.telegram.org\"   # or a local Bot API server\n",
		Config:     func() channels.NetworkConfig { c := DefaultConfig(); return &c },
		New: func(env channels.Env, host channels.Host, cfg channels.NetworkConfig) (channels.Channel, error) {
			return New(*cfg.(*Config), env)
		},

		// What its chat ids look like: another shape is warned about.
		ChatWarning: func(native string) string {
			if chatIDShape.MatchString(native) {
				return ""
			}
			return "Telegram chat ids are whole numbers, e.g. -1001234567890 for a group"
		},
	})
}

// Listens is the webhook's address, when the enabled channel has one.
func (c *Config) Listens() map[string]string {
	if !c.Enabled || c.Webhook == nil {
		return nil
	}
	return map[string]string{"channels.telegram.webhook.listen": c.Webhook.Listen}
}

// chatIDShape is what a chat id of this network looks like.
var chatIDShape = regexp.MustCompile(`^-?[0-9]{1,20}$`)
