package matrix

import (
	"strings"

	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/internal/settings"
)

// Config is channels.matrix in botd's config file.
type Config struct {
	Enabled bool `yaml:"enabled"`
	// Homeserver is the client-server API base URL
	// (https://matrix.example.org), not the server name.
	Homeserver string `yaml:"homeserver"`
	// UserID is the bot account, @botd:example.org.
	UserID string `yaml:"user_id"`
	// AccessToken is the bot account's token. Empty with Password set:
	// botd logs in once and keeps the token it got in
	// <data_dir>/matrix/state.json (mode 0600), never in groups/ or
	// data/ipc/.
	AccessToken string `yaml:"access_token"`
	Password    string `yaml:"password"`
}

// DefaultConfig is the section a config file is decoded over: disabled.
func DefaultConfig() Config { return Config{} }

// Validate reports every problem of the section as settings.Problems,
// keyed by their paths below channels.matrix.
func (c Config) Validate() error {
	const sec = "channels.matrix."
	var ps settings.Problems
	ps.CheckURL(sec+"homeserver", c.Homeserver)
	if !c.Enabled {
		return ps.Err()
	}
	if c.Homeserver == "" {
		ps.Add(sec+"homeserver", "required when the channel is enabled (the client API URL, e.g. https://matrix.example.org)")
	}
	if c.UserID == "" {
		ps.Add(sec+"user_id", "required when the channel is enabled (the bot account, e.g. @botd:example.org)")
	} else if _, _, err := id.UserID(c.UserID).ParseAndValidateRelaxed(); err != nil || !strings.HasPrefix(c.UserID, "@") {
		ps.Add(sec+"user_id", "must be a Matrix user id like @botd:example.org, got %q", c.UserID)
	}
	if c.AccessToken == "" && c.Password == "" {
		ps.AddSecret(sec+"access_token", "required when the channel is enabled (or channels.matrix.password, exchanged once for a token)", settings.SetHint)
	}
	return ps.Err()
}
