package channels

import (
	"fmt"
	"net/url"
)

// ConfigProblem is one thing wrong with a channel's own settings, found by
// the channel's Config.Validate. Package config places it under the
// channel's section ("channels.telegram." + Key).
type ConfigProblem struct {
	// Key is the path below the channel's section: "token", "webhook.url".
	Key string
	Msg string
	// EnvHint marks a missing secret: package config appends the
	// environment variable the value was meant to come from, as in
	// "required when the channel is enabled (set TELEGRAM_BOT_TOKEN)".
	EnvHint bool
}

// CheckURL adds a problem for key unless raw is empty or an absolute
// http(s) URL.
func CheckURL(ps *[]ConfigProblem, key, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		*ps = append(*ps, ConfigProblem{Key: key, Msg: fmt.Sprintf("must be an http(s) URL, got %q", raw)})
	}
}
