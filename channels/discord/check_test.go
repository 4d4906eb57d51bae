package discord

import (
	"testing"

	"github.com/botd-dev/botd/channels/discord/discordfake"
)

// The channel's Check (what `botd doctor` asks) names the bot, makes only
// GET requests and opens no gateway.
func TestChannelCheck(t *testing.T) {
	h := newHarness(t)
	who, err := h.dc.Check(waitCtx(t))
	if want := "bot " + discordfake.BotName + " (id " + discordfake.BotUserID + ")"; err != nil || who != want {
		t.Fatalf("Check = %q, %v; want %q", who, err, want)
	}
	for _, r := range h.fake.Requests() {
		if r.Method != "GET" {
			t.Errorf("Check sent %s %s", r.Method, r.Path)
		}
	}
	if n := h.fake.Connections(); n != 0 {
		t.Errorf("Check opened %d gateway connections", n)
	}
}
