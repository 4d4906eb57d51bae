package access

import (
	"strconv"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/settings"
)

// What botd does about a message addressed to it from a chat no group
// registers (access.unknown_chats).
const (
	// Pair answers once an hour with a pairing code and how to approve it.
	Pair = "pair"
	// Ignore stays silent (botd logs the chat's id once).
	Ignore = "ignore"
)

// Config is the access section of botd's config file.
type Config struct {
	// UnknownChats is Pair or Ignore.
	UnknownChats string `yaml:"unknown_chats"`
	// Owners are the people who may approve chats from a chat:
	// "<network>:<user id>", e.g. "telegram:123456", "slack:U0123".
	Owners []string `yaml:"owners"`
	// PerSenderPerHour bounds the runs one person may start in an hour,
	// so one member cannot spend a group's budget alone; 0 is no limit.
	PerSenderPerHour int `yaml:"per_sender_per_hour"`
}

// IsOwner reports whether id ("<network>:<user id>") is one of
// access.owners.
func (c Config) IsOwner(id string) bool {
	for _, o := range c.Owners {
		if o == id {
			return true
		}
	}
	return false
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config { return Config{UnknownChats: Pair} }

// The section registers itself: package config decodes access through
// Config without importing this package.
func init() {
	settings.Register("access", DefaultConfig, func(c *Config, _ settings.Shared) error { return c.Validate() })
}

// Validate reports every problem of the section with its key path.
func (c Config) Validate() error {
	var ps settings.Problems
	switch c.UnknownChats {
	case Pair, Ignore:
	default:
		ps.Add("access.unknown_chats", "must be %q or %q, not %q", Pair, Ignore, c.UnknownChats)
	}
	seen := map[string]bool{}
	for i, o := range c.Owners {
		path := "access.owners[" + strconv.Itoa(i) + "]"
		if err := groups.ValidateUserID(o); err != nil {
			ps.Add(path, "%v", err)
			continue
		}
		if seen[o] {
			ps.Add(path, "%q is listed twice", o)
		}
		seen[o] = true
	}
	if c.PerSenderPerHour < 0 {
		ps.Add("access.per_sender_per_hour", "must not be negative")
	}
	return ps.Err()
}
