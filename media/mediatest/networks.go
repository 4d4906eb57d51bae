package mediatest

import (
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
)

var registerOnce sync.Once

// RegisterNetworks describes the network the rig's chats and refs use
// (telegram), as far as the tests need: the real description registers
// from the network's package (its init) when a test links it.
func RegisterNetworks() {
	registerOnce.Do(func() {
		if _, linked := channels.Lookup("telegram"); !linked {
			channels.Register(channels.Network{Name: "telegram", RefPrefix: "tg", RefTTL: 30 * 24 * time.Hour})
		}
	})
}
