package slack

import (
	"regexp"
	"time"

	"github.com/botd-dev/botd/channels"
)

// On reports whether the channel is enabled.
func (c Config) On() bool { return c.Enabled }

// The network's description: botd's shared code reads it rather than
// naming slack (channels.Register). Slack files stay until deleted.
func init() {
	channels.Register(channels.Network{
		Name:       "slack",
		RefPrefix:  "sl",
		RefTTL:     30 * 24 * time.Hour,
		Formatting: "Markdown is shown as Slack formatting: **bold**, *italic*, ~~strike~~, `code`, code blocks, [links](https://…), > quotes and - lists; headings become bold lines and tables are not supported, so use few of either.",
		Setup:      "channels.slack.enabled: true with SLACK_BOT_TOKEN and SLACK_APP_TOKEN",
		Checks:     "Slack auth.test",
		Example:    "  slack:\n    enabled: ${SLACK_ENABLED:-false}\n    bot_token: \"${SLACK_BOT_TOKEN}\"       # xoxb-...\n    app_token: \"${SLACK_APP_TOKEN}\"       # xapp-... (Socket Mode)\n    api_url: \"https://slack.com/api/\"\n",
		Config:     func() channels.NetworkConfig { c := DefaultConfig(); return &c },
		New: func(env channels.Env, host channels.Host, cfg channels.NetworkConfig) (channels.Channel, error) {
			return New(*cfg.(*Config), env)
		},

		// What its chat ids look like: another shape is warned about.
		ChatWarning: func(native string) string {
			if chatIDShape.MatchString(native) {
				return ""
			}
			return "Slack channel ids are capital letters and digits starting with C, G or D, e.g. C0123456789"
		},
	})
}

// Listens is the Events API's address, when the enabled channel uses it.
func (c *Config) Listens() map[string]string {
	if !c.Enabled || c.Mode != ModeEvents {
		return nil
	}
	return map[string]string{"channels.slack.listen": c.Listen}
}

// chatIDShape is what a chat id of this network looks like.
var chatIDShape = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)
