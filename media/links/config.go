package links

import (
	"strings"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/webfetch"
	"github.com/botd-dev/botd/websearch"
)

// Config is the internet section: what botd may do on the web for the
// agent. webfetch and websearch define the settings of fetch_url and
// web_search; this composes them.
type Config struct {
	Fetch  webfetch.Config  `yaml:"fetch"`
	Search websearch.Config `yaml:"search"`
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config {
	return Config{Fetch: webfetch.DefaultConfig(), Search: websearch.DefaultConfig()}
}

// The section registers itself: package config decodes internet through
// Config without importing this package.
func init() {
	settings.Register("internet", DefaultConfig, func(c *Config, _ settings.Shared) error { return c.Validate() })
}

// Validate reports every problem of the section at its key path
// (internet.fetch.…, internet.search.…).
func (c Config) Validate() error {
	var ps settings.Problems
	ps = append(ps, under("internet.fetch", c.Fetch.Validate())...)
	ps = append(ps, under("internet.search", c.Search.Validate())...)
	return ps.Err()
}

// under puts a part's problems, whose paths are relative to it, at their
// place in the file.
func under(section string, ps settings.Problems) settings.Problems {
	out := make(settings.Problems, len(ps))
	for i, p := range ps {
		p.Path = strings.TrimSuffix(section+"."+p.Path, ".")
		out[i] = p
	}
	return out
}
