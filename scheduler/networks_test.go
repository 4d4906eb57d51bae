package scheduler

import (
	"time"

	"github.com/botd-dev/botd/channels"
)

// The networks whose chats and refs these tests use, described as far as
// they need: the real descriptions register from the network packages
// (their init) when a test links them.
func init() {
	for _, n := range []channels.Network{
		{Name: "telegram", RefPrefix: "tg"}, {Name: "slack", RefPrefix: "sl"}, {Name: "whatsapp", RefPrefix: "wa"},
		{Name: "web", RefPrefix: "wb"}, {Name: "discord", RefPrefix: "dc"}, {Name: "matrix", RefPrefix: "mx"},
	} {
		n.RefTTL = 30 * 24 * time.Hour
		if n.Name == "whatsapp" {
			n.RefTTL = 14 * 24 * time.Hour
		}
		if _, linked := channels.Lookup(n.Name); !linked {
			channels.Register(n)
		}
	}
}
