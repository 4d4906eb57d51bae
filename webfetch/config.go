package webfetch

import (
	"fmt"
	"time"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/netguard"
)

// Config is the internet.fetch section.
type Config struct {
	// Enabled offers fetch_url; off, every Get answers ErrDisabled.
	Enabled bool `yaml:"enabled"`
	// AllowPrivate opens address ranges the guard refuses (an intranet
	// wiki): CIDRs or single addresses. Names such as localhost stay
	// refused.
	AllowPrivate []string `yaml:"allow_private"`
	// MaxBytes caps one response, both as sent and once decompressed.
	MaxBytes int64 `yaml:"max_bytes"`
	// Timeout bounds one fetch from the first dial to the last byte.
	Timeout settings.Duration `yaml:"timeout"`
	// PerGroupPerHour is how many network fetches a group may start in
	// any hour; answers from the cache are not counted.
	PerGroupPerHour int `yaml:"per_group_per_hour"`
	// CacheTTL is how long a page is reused without asking again when the
	// server says nothing, and the most it may ask for.
	CacheTTL settings.Duration `yaml:"cache_ttl"`
}

// DefaultConfig is fetching on, nothing private opened, 10 MB, 30 s, 60
// fetches per group per hour, pages kept a day.
func DefaultConfig() Config {
	return Config{
		Enabled:         true,
		MaxBytes:        10 << 20,
		Timeout:         settings.Duration(30 * time.Second),
		PerGroupPerHour: 60,
		CacheTTL:        settings.Duration(24 * time.Hour),
	}
}

// The bounds past which a value is a typo rather than a choice.
const (
	maxMaxBytes     = 1 << 30
	maxTimeout      = 10 * time.Minute
	maxPerHour      = 100000
	maxCacheTTL     = 365 * 24 * time.Hour
	minFetchTimeout = time.Second
)

// Validate reports every problem, with key paths relative to the section
// (the caller puts them under internet.fetch).
func (c Config) Validate() settings.Problems {
	var ps settings.Problems
	for i, s := range c.AllowPrivate {
		if _, err := netguard.ParsePrefixes([]string{s}); err != nil {
			ps.Add(fmt.Sprintf("allow_private[%d]", i), "%v", err)
		}
	}
	switch {
	case c.MaxBytes <= 0:
		ps.Add("max_bytes", "must be a positive number of bytes (the default is %d, 10 MB)", DefaultConfig().MaxBytes)
	case c.MaxBytes > maxMaxBytes:
		ps.Add("max_bytes", "%d is more than 1 GB; a web page that large is not read into a chat", c.MaxBytes)
	}
	switch t := c.Timeout.D(); {
	case t < minFetchTimeout:
		ps.Add("timeout", "must be at least 1s, got %v", t)
	case t > maxTimeout:
		ps.Add("timeout", "must be at most %v, got %v", maxTimeout, t)
	}
	switch {
	case c.PerGroupPerHour <= 0:
		ps.Add("per_group_per_hour", "must be at least 1 (set enabled: false to turn fetching off), got %d", c.PerGroupPerHour)
	case c.PerGroupPerHour > maxPerHour:
		ps.Add("per_group_per_hour", "must be at most %d, got %d", maxPerHour, c.PerGroupPerHour)
	}
	switch t := c.CacheTTL.D(); {
	case t < 0:
		ps.Add("cache_ttl", "must not be negative, got %v", t)
	case t > maxCacheTTL:
		ps.Add("cache_ttl", "must be at most %v, got %v", maxCacheTTL, t)
	}
	return ps
}
