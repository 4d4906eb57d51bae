package web

import (
	"time"

	"github.com/botd-dev/botd/channels"
)

// On reports whether the rooms are served.
func (c Config) On() bool { return c.Enabled }

// Listens is the rooms' address, when they are served.
func (c *Config) Listens() map[string]string {
	if !c.Enabled {
		return nil
	}
	return map[string]string{"channels.web.listen": c.Listen}
}

// The web rooms' description. Their constructor stays with the daemon,
// which gives the rooms its services (the agent, the media, the
// dashboard); the rest is read from here like any network's. Uploads
// stay in the channel's own folder for as long as their refs live.
func init() {
	channels.Register(channels.Network{
		Name:       Name,
		RefPrefix:  "wb",
		RefTTL:     30 * 24 * time.Hour,
		Formatting: "Markdown is rendered in the chat page: **bold**, *italic*, lists, [links](https://…), > quotes and code blocks (with a copy button); raw HTML is shown as text, and tables are not supported.",
		ValidChat:  ValidRoom,
		Setup:      "channels.web.enabled: true for the local web rooms",
		SetupInApp: true,
		Example: `  web:                                    # chat rooms and a dashboard in the browser, served by botd itself
    enabled: ${WEB_ENABLED:-true}         # botd prints the address to open (with a login token the first time)
    listen: "${BOTD_WEB_LISTEN:-127.0.0.1:8080}"
`,
		Config: func() channels.NetworkConfig { c := DefaultConfig(); return &c },
	})
}
