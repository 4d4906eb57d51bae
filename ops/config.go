package ops

import (
	"net"
	"strconv"

	"github.com/botd-dev/botd/internal/settings"
)

// DefaultListen is where /healthz, /readyz and /metrics are served unless
// the config says otherwise: on loopback, so nothing of it reaches the
// network by default.
const DefaultListen = "127.0.0.1:9464"

// Config is the ops section of botd's config file.
type Config struct {
	// Listen is host:port of the health and metrics server; "" turns it
	// off. The endpoints have no authentication: keep it on loopback or
	// behind a firewall.
	Listen string `yaml:"listen"`
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config { return Config{Listen: DefaultListen} }

// The section registers itself: package config decodes ops through
// Config without importing this package.
func init() {
	settings.Register("ops", DefaultConfig, func(c *Config, _ settings.Shared) error { return c.Validate() })
}

// Validate reports the section's problems, keyed by their paths.
func (c Config) Validate() error {
	var ps settings.Problems
	if c.Listen == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(c.Listen)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = strconv.ErrRange
		}
	}
	if err != nil {
		ps.Add("ops.listen", "must be host:port (e.g. %s) or \"\" for off, got %q", DefaultListen, c.Listen)
	}
	return ps.Err()
}
