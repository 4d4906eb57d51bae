package config

import (
	"os"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
	// The networks register their sections from their own packages; botd
	// links them in cmd/botd, these tests here.
	_ "github.com/botd-dev/botd/channels/discord"
	_ "github.com/botd-dev/botd/channels/matrix"
	_ "github.com/botd-dev/botd/channels/slack"
	_ "github.com/botd-dev/botd/channels/telegram"
	_ "github.com/botd-dev/botd/channels/web"
	_ "github.com/botd-dev/botd/channels/whatsapp"
)

// Each network's example section, from its description, is the one the
// example config shows; and each is decoded strictly through its own type.
func TestNetworkDescriptions(t *testing.T) {
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nets := 0
	for _, n := range channels.Networks() {
		if n.Config == nil {
			continue
		}
		nets++
		if n.Example == "" || !strings.Contains(string(example), n.Example) {
			t.Errorf("%s: config.example.yaml does not hold its example section:\n%s", n.Name, n.Example)
		}
		_, err := Parse([]byte("channels: {"+n.Name+": {enabeld: true}}"), noEnv)
		if err == nil || !strings.Contains(err.Error(), "channels."+n.Name+".enabeld: unknown key (did you mean enabled?)") {
			t.Errorf("%s: a misspelt key gives %v", n.Name, err)
		}
	}
	if nets != 6 {
		t.Errorf("%d networks with settings registered, want 6", nets)
	}
	if _, err := Parse([]byte("channels: {irc: {enabled: true}}"), noEnv); err == nil || !strings.Contains(err.Error(), "channels.irc: unknown key") {
		t.Errorf("a network not built in gives %v", err)
	}
}
