package slack

import (
	"strings"

	"github.com/botd-dev/botd/channels"
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
func DefaultConfig() Config {
	return Config{APIURL: DefaultAPIURL, Mode: ModeSocket}
}

// Validate reports every problem of the section, keyed below
// channels.slack. Tokens are only required when the channel is enabled.
func (c Config) Validate() []channels.ConfigProblem {
	var ps []channels.ConfigProblem
	add := func(key, msg string, hint bool) {
		ps = append(ps, channels.ConfigProblem{Key: key, Msg: msg, EnvHint: hint})
	}
	channels.CheckURL(&ps, "api_url", c.APIURL)
	switch c.Mode {
	case ModeSocket, ModeEvents:
	default:
		add("mode", "must be socket or events", false)
	}
	if !c.Enabled {
		return ps
	}
	if c.BotToken == "" {
		add("bot_token", "required when the channel is enabled", true)
	} else if !strings.HasPrefix(c.BotToken, "xoxb-") {
		add("bot_token", "must be a bot token (xoxb-...)", false)
	}
	switch c.Mode {
	case ModeSocket:
		if c.AppToken == "" {
			add("app_token", "required in socket mode", true)
		} else if !strings.HasPrefix(c.AppToken, "xapp-") {
			add("app_token", "must be an app-level token (xapp-...)", false)
		}
	case ModeEvents:
		if c.SigningSecret == "" {
			add("signing_secret", "required in events mode", true)
		}
		if c.Listen == "" {
			add("listen", "required in events mode (e.g. 127.0.0.1:3000)", false)
		}
	}
	return ps
}
