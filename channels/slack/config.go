package slack

import (
	"cmp"
	"strings"

	"github.com/botd-dev/botd/internal/settings"
)

// DefaultAPIURL is used when channels.slack.api_url is empty.
const DefaultAPIURL = "https://slack.com/api/"

// Receiving modes: Socket Mode (an outbound websocket, the default) or the
// Events API (Slack posts to channels.slack.listen).
const (
	ModeSocket = "socket"
	ModeEvents = "events"
)

// Config is channels.slack in botd's config file.
type Config struct {
	Enabled       bool   `yaml:"enabled"`
	BotToken      string `yaml:"bot_token"`
	AppToken      string `yaml:"app_token"`
	APIURL        string `yaml:"api_url"`
	Mode          string `yaml:"mode"` // socket | events
	SigningSecret string `yaml:"signing_secret"`
	Listen        string `yaml:"listen"`
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config { return Config{}.withDefaults() }

// withDefaults fills what the section left empty: the one home of its
// defaults, for the file and for New.
func (c Config) withDefaults() Config {
	c.APIURL = cmp.Or(c.APIURL, DefaultAPIURL)
	c.Mode = cmp.Or(c.Mode, ModeSocket)
	return c
}

// Validate reports every problem of the section, keyed by their paths
// below channels.slack. Tokens are only required when the channel is
// enabled.
func (c Config) Validate() error {
	const sec = "channels.slack."
	var ps settings.Problems
	ps.CheckURL(sec+"api_url", c.APIURL)
	switch c.Mode {
	case ModeSocket, ModeEvents:
	default:
		ps.Add(sec+"mode", "must be socket or events")
	}
	if !c.Enabled {
		return ps.Err()
	}
	if c.BotToken == "" {
		ps.AddSecret(sec+"bot_token", "required when the channel is enabled", settings.SetHint)
	} else if !strings.HasPrefix(c.BotToken, "xoxb-") {
		ps.Add(sec+"bot_token", "must be a bot token (xoxb-...)")
	}
	switch c.Mode {
	case ModeSocket:
		if c.AppToken == "" {
			ps.AddSecret(sec+"app_token", "required in socket mode", settings.SetHint)
		} else if !strings.HasPrefix(c.AppToken, "xapp-") {
			ps.Add(sec+"app_token", "must be an app-level token (xapp-...)")
		}
	case ModeEvents:
		if c.SigningSecret == "" {
			ps.AddSecret(sec+"signing_secret", "required in events mode", settings.SetHint)
		}
		if c.Listen == "" {
			ps.Add(sec+"listen", "required in events mode (e.g. 127.0.0.1:3000)")
		}
	}
	return ps.Err()
}
