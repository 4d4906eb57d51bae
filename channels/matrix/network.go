package matrix

import (
	"regexp"
	"time"

	"github.com/botd-dev/botd/channels"
)

// On reports whether the channel is enabled.
func (c Config) On() bool { return c.Enabled }

// The network's description: botd's shared code reads it rather than
// naming matrix (channels.Register). Matrix media stays on the homeserver until its retention removes it.
func init() {
	channels.Register(channels.Network{
		Name:       Name,
		RefPrefix:  "mx",
		RefTTL:     30 * 24 * time.Hour,
		Formatting: "Markdown is shown as Matrix formatting: **bold**, *italic*, ~~strike~~, `code`, code blocks, [links](https://…), > quotes and - lists; tables are not supported.",
		Setup:      "channels.matrix.enabled: true with MATRIX_HOMESERVER, MATRIX_USER_ID and MATRIX_ACCESS_TOKEN",
		Checks:     "Matrix /account/whoami",
		Example:    "  matrix:\n    enabled: ${MATRIX_ENABLED:-false}\n    homeserver: \"${MATRIX_HOMESERVER}\"    # https://matrix.example.org\n    user_id: \"${MATRIX_USER_ID}\"          # @botd:example.org\n    access_token: \"${MATRIX_ACCESS_TOKEN}\"\n",
		Config:     func() channels.NetworkConfig { c := DefaultConfig(); return &c },
		New: func(env channels.Env, host channels.Host, cfg channels.NetworkConfig) (channels.Channel, error) {
			return New(*cfg.(*Config), StoreFor(host.Database, host.DataDir), env)
		},

		// What its chat ids look like: another shape is warned about.
		ChatWarning: func(native string) string {
			if chatIDShape.MatchString(native) {
				return ""
			}
			return "Matrix room ids look like !abcdefgh:example.org (Element: Room settings, Advanced)"
		},
	})
}

// Warnings says when this build cannot join the encrypted rooms the
// enabled channel may be in.
func (c *Config) Warnings() []string {
	if !c.Enabled || CryptoBuilt {
		return nil
	}
	return []string{"channels.matrix: this botd was built without end-to-end encryption (build with `make build`, " +
		"or go build -tags goolm), so it refuses encrypted rooms"}
}

// chatIDShape is what a chat id of this network looks like.
var chatIDShape = regexp.MustCompile(`^![^:]+:.+$`)
