package mcp

import (
	"net"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/internal/settings"
)

// Config is the mcp section of botd's config file.
type Config struct {
	HTTP HTTPConfig `yaml:"http"`
}

// HTTPConfig is mcp.http: where `botd mcp --http` listens and the bearer
// tokens remote clients present.
type HTTPConfig struct {
	Listen string       `yaml:"listen"`
	Tokens []TokenGrant `yaml:"tokens"`
	// MaxSessionsPerToken bounds one token's open sessions (0: the
	// default, DefaultMaxSessionsPerToken).
	MaxSessionsPerToken int `yaml:"max_sessions_per_token"`
	// AllowRemote lets listen be an address other machines reach (put
	// TLS in front); AllowedHosts are the names they send in Host then.
	AllowRemote  bool     `yaml:"allow_remote"`
	AllowedHosts []string `yaml:"allowed_hosts"`
}

// TokenGrant maps one bearer token to the groups it may reach: group for
// one, groups for several (each tool then takes a group argument), and
// whether it may only read.
type TokenGrant struct {
	Token  string   `yaml:"token"`
	Group  string   `yaml:"group"`
	Groups []string `yaml:"groups"`
	// ReadOnly offers only the tools that change nothing: no
	// send_message, send_media, tasks, memory writes or generation.
	ReadOnly bool `yaml:"read_only"`
}

// Folders are the groups the token reaches, in the order given.
func (t TokenGrant) Folders() []string {
	if t.Group != "" {
		return append([]string{t.Group}, t.Groups...)
	}
	return t.Groups
}

// Key names what the token reaches: tokens of the same grant share a
// server.
func (t TokenGrant) Key() string {
	k := strings.Join(t.Folders(), ",")
	if t.ReadOnly {
		k += " read-only"
	}
	return k
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config { return Config{HTTP: HTTPConfig{Listen: "127.0.0.1:8765"}} }

// The section registers itself: package config decodes mcp through
// Config without importing this package.
func init() {
	settings.Register("mcp", DefaultConfig, func(c *Config, s settings.Shared) error { return c.Validate(s.IsGroup) })
}

// Validate reports every problem of the section with its key path;
// isGroup tells whether a token's group is a configured group folder.
func (c Config) Validate(isGroup func(folder string) bool) error {
	var ps settings.Problems
	tokens := map[string]int{}
	for i, t := range c.HTTP.Tokens {
		path := "mcp.http.tokens[" + strconv.Itoa(i) + "]"
		if len(t.Token) < 16 {
			ps.AddSecret(path+".token", "must be at least 16 characters", settings.SetHint)
		}
		// A token reaches one group; the same token twice would silently
		// pick one of them.
		if j, dup := tokens[t.Token]; dup && t.Token != "" {
			ps.Add(path+".token", "is the same as mcp.http.tokens[%d].token; each token must be unique", j)
		}
		tokens[t.Token] = i
		switch {
		case t.Group != "" && len(t.Groups) > 0:
			ps.Add(path+".groups", "is given beside group: list every group the token reaches under groups, or one under group")
		case t.Group != "":
			if !isGroup(t.Group) {
				ps.Add(path+".group", "unknown group folder %q", t.Group)
			}
		case len(t.Groups) == 0:
			ps.Add(path+".group", "is missing: the group folder the token reaches (or groups: [a, b] for several)")
		}
		seen := map[string]bool{}
		for j, g := range t.Groups {
			gp := path + ".groups[" + strconv.Itoa(j) + "]"
			switch {
			case seen[g]:
				ps.Add(gp, "group %q is listed twice", g)
			case !isGroup(g):
				ps.Add(gp, "unknown group folder %q", g)
			}
			seen[g] = true
		}
	}
	if c.HTTP.MaxSessionsPerToken < 0 {
		ps.Add("mcp.http.max_sessions_per_token", "must be a positive number of sessions (0 or unset: %d)", DefaultMaxSessionsPerToken)
	}
	if c.HTTP.Listen != "" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			ps.Add("mcp.http.listen", "must be host:port (e.g. 127.0.0.1:8765)")
		}
	}
	return ps.Err()
}
