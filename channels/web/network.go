package web

import (
	"time"

	"github.com/botd-dev/botd/channels"
)

// The web rooms' description. Their settings and constructor stay with
// the daemon, which gives the rooms its services (the agent, the media,
// the dashboard); the rest is read from here like any network's. Uploads
// stay in the channel's own folder for as long as their refs live.
func init() {
	channels.Register(channels.Network{
		Name:       Name,
		RefPrefix:  "wb",
		RefTTL:     30 * 24 * time.Hour,
		Formatting: "Markdown is rendered in the chat page: **bold**, *italic*, lists, [links](https://…), > quotes and code blocks (with a copy button); raw HTML is shown as text, and tables are not supported.",
		ValidChat:  ValidRoom,
	})
}
