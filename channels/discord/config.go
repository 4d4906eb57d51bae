package discord

import (
	"cmp"
	"net/url"
	"strings"

	"github.com/botd-dev/botd/internal/settings"
)

const (
	// DefaultAPIURL is Discord's REST API in the version discordgo speaks;
	// channels.discord.api_url points elsewhere for a proxy or a fake.
	DefaultAPIURL = "https://discord.com/api/v9"
	// DefaultGatewayURL is Discord's gateway.
	DefaultGatewayURL = "wss://gateway.discord.gg"
)

// Config is channels.discord in botd's config file.
type Config struct {
	Enabled bool `yaml:"enabled"`
	// Token is the bot token from the developer portal (Bot → Reset
	// Token), without the "Bot " prefix (one is accepted and dropped).
	Token      string `yaml:"token"`
	APIURL     string `yaml:"api_url"`
	GatewayURL string `yaml:"gateway_url"`
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config { return Config{}.withDefaults() }

// withDefaults fills what the section left empty: the one home of its
// defaults, for the file and for New.
func (c Config) withDefaults() Config {
	c.APIURL = strings.TrimRight(cmp.Or(c.APIURL, DefaultAPIURL), "/")
	c.GatewayURL = cmp.Or(c.GatewayURL, DefaultGatewayURL)
	c.Token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c.Token), "Bot "))
	return c
}

// Validate reports every problem of the section as settings.Problems,
// keyed by their paths below channels.discord.
func (c Config) Validate() error {
	const sec = "channels.discord."
	var ps settings.Problems
	ps.CheckURL(sec+"api_url", c.APIURL)
	checkWS(&ps, sec+"gateway_url", c.GatewayURL)
	if !c.Enabled {
		return ps.Err()
	}
	tok := c.withDefaults().Token
	switch {
	case tok == "":
		ps.AddSecret(sec+"token", "required when the channel is enabled", settings.SetHint)
	case strings.ContainsAny(tok, " \t\r\n"):
		ps.Add(sec+"token", "must be the bot token alone (no spaces or line breaks)")
	case strings.Count(tok, ".") != 2:
		// A bot token is three dot-separated parts; a client secret or an
		// application id pasted by mistake is not.
		ps.Add(sec+"token", "is not a bot token (Developer Portal → your app → Bot → Reset Token; not the client secret or the application id)")
	}
	return ps.Err()
}

// checkWS adds a problem at path unless raw is empty or an absolute
// ws(s) URL.
func checkWS(ps *settings.Problems, path, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		ps.Add(path, "must be a ws(s) URL, got %q", raw)
	}
}
