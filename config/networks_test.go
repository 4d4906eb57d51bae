package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/whatsapp"
	// The networks register their sections from their own packages; botd
	// links them in cmd/botd, these tests here.
	_ "github.com/botd-dev/botd/channels/discord"
	_ "github.com/botd-dev/botd/channels/matrix"
	_ "github.com/botd-dev/botd/channels/slack"
	_ "github.com/botd-dev/botd/channels/telegram"
	_ "github.com/botd-dev/botd/channels/web"
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
	const want = "channels.irc: unknown key (this botd's channels: discord, matrix, slack, telegram, web, whatsapp)"
	if _, err := Parse([]byte("channels: {irc: {enabled: true}}"), noEnv); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a network not built in gives %v", err)
	}
}

// With no channel on, botd names how to turn each one on, from the
// networks' descriptions: the web rooms (no account needed) first. One
// network on is enough.
func TestRunReadinessNamesEveryNetwork(t *testing.T) {
	cfg, err := Parse([]byte("channels: {web: {enabled: false}}"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.RunReadiness()
	if len(got) == 0 || !strings.HasPrefix(got[0], "no channel is enabled: set channels.web.enabled: true for the local web rooms, or ") {
		t.Fatalf("RunReadiness = %q", got)
	}
	for _, n := range channels.Networks() {
		if !strings.Contains(got[0], n.Setup) {
			t.Errorf("the message does not say how to turn %s on (%q)", n.Name, n.Setup)
		}
	}
	cfg, err = Parse([]byte("channels: {web: {enabled: false}, discord: {enabled: true, token: a.b.c}}"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range cfg.RunReadiness() {
		if strings.Contains(line, "no channel is enabled") {
			t.Errorf("discord is on, yet: %s", line)
		}
	}
}

// A network's own file (WhatsApp's session_db) is relative to the config
// file, like data_dir, through the section's Paths.
func TestNetworkPathsAreRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "botd.yaml")
	if err := os.WriteFile(path, []byte("channels: {whatsapp: {session_db: wa/session.db}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Channels.Network("whatsapp").(*whatsapp.Config).SessionDB, filepath.Join(dir, "wa", "session.db"); got != want {
		t.Errorf("session_db = %q, want %q", got, want)
	}
}
