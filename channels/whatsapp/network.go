package whatsapp

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// On reports whether the channel is enabled.
func (c Config) On() bool { return c.Enabled }

// Paths are the section's file paths, which the config makes relative to
// its own folder.
func (c *Config) Paths() []*string { return []*string{&c.SessionDB} }

// The network's description: botd's shared code reads it rather than
// naming whatsapp (channels.Register). WhatsApp's CDN copies go after
// about two weeks, and media retry (asking the sender's phone) is bounded
// too.
func init() {
	channels.Register(channels.Network{
		Name:       "whatsapp",
		RefPrefix:  "wa",
		RefTTL:     14 * 24 * time.Hour,
		Formatting: "Markdown is shown as WhatsApp formatting: **bold**, *italic*, ~~strike~~, `code` and - lists; links show as their address, headings as bold lines, and tables are not supported.",
		Setup:      "channels.whatsapp.enabled: true and run `botd whatsapp login`",
		Checks:     "WhatsApp: a paired session in its store, no connection",
		Example:    "  whatsapp:\n    enabled: ${WHATSAPP_ENABLED:-false}   # pair first: botd whatsapp login\n",
		Config:     func() channels.NetworkConfig { c := DefaultConfig(); return &c },
		MigrateSession: func(ctx context.Context, host channels.Host, cfg channels.NetworkConfig, dsn string, log *slog.Logger) (store.Attached, string, bool, error) {
			path := SessionPath(cfg.(*Config).SessionDB, host.DataDir)
			if _, err := os.Stat(path); err != nil {
				return store.Attached{}, path, false, nil
			}
			a, err := SessionCopy(ctx, path, dsn, log)
			return a, path, err == nil, err
		},
		MigratedNote: "The WhatsApp session is in Postgres now, and botd on Postgres uses it there. Keep %s only as a backup: " +
			"never start a botd on it again (its keys would go stale, and two clients of one device push each other off).\n",
		New: func(env channels.Env, host channels.Host, cfg channels.NetworkConfig) (channels.Channel, error) {
			c := *cfg.(*Config)
			return New(c, SessionFor(c, host.Database, host.DataDir), env)
		},

		// What its chat ids look like: another shape is warned about.
		ChatWarning: func(native string) string {
			if chatIDShape.MatchString(native) {
				return ""
			}
			return "WhatsApp chats are <digits>@g.us for a group"
		},
	})
}

// chatIDShape is what a chat id of this network looks like.
var chatIDShape = regexp.MustCompile(`^[0-9-]+@(g\.us|s\.whatsapp\.net|lid)$`)
