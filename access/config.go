package access

import (
	"fmt"
	"strconv"
	"strings"

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
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config { return Config{UnknownChats: Pair} }

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
		if err := validOwner(o); err != nil {
			ps.Add(path, "%v", err)
			continue
		}
		if seen[o] {
			ps.Add(path, "%q is listed twice", o)
		}
		seen[o] = true
	}
	return ps.Err()
}

// validOwner checks the "<network>:<user id>" shape; the network part is
// not checked against the built-in networks, so a config keeps working
// in a build without one.
func validOwner(o string) error {
	net, id, ok := strings.Cut(o, ":")
	if !ok || net == "" || id == "" || strings.ContainsFunc(o, func(r rune) bool { return r <= ' ' }) {
		return fmt.Errorf("%q must look like <network>:<user id>, e.g. telegram:123456 or slack:U0123", o)
	}
	return nil
}
