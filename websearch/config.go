package websearch

import (
	"cmp"

	"github.com/botd-dev/botd/internal/settings"
)

// Providers botd can search through.
const (
	SearXNG = "searxng"
	Brave   = "brave"
)

// DefaultBraveURL is Brave Search API's address; base_url points elsewhere
// only for a proxy or a fake.
const DefaultBraveURL = "https://api.search.brave.com"

// BravePricePerQuery is Brave Search API's list price for its Search plan,
// $5 per 1,000 requests, used when price_per_query is left at 0 for brave.
const BravePricePerQuery = 0.005

// Config is internet.search in botd's config file.
type Config struct {
	// Provider is "" (web_search is not offered), "searxng" or "brave".
	Provider string `yaml:"provider"`
	// BaseURL is the operator's SearXNG (required: its JSON API is GET
	// {base}/search?q=…&format=json) or Brave's API (default
	// DefaultBraveURL). It is the operator's own choice, so unlike the
	// URLs a model asks for it does not pass the SSRF guard: a SearXNG is
	// usually on loopback or the LAN.
	BaseURL string `yaml:"base_url"`
	// APIKey is Brave's subscription token (X-Subscription-Token),
	// usually ${BRAVE_API_KEY}.
	APIKey string `yaml:"api_key"`
	// PricePerQuery is what one search costs in USD, for botd usage.
	// 0 means the provider's list price: BravePricePerQuery for brave,
	// nothing for a self-hosted SearXNG.
	PricePerQuery float64 `yaml:"price_per_query"`
}

// DefaultConfig is the section a config file is decoded over: search off.
func DefaultConfig() Config { return Config{} }

// withDefaults fills what the section left empty: the one home of its
// defaults, for Price and for New. They depend on the provider, which is
// why DefaultConfig cannot carry them.
func (c Config) withDefaults() Config {
	if c.Provider == Brave {
		c.BaseURL = cmp.Or(c.BaseURL, DefaultBraveURL)
		if c.PricePerQuery == 0 {
			c.PricePerQuery = BravePricePerQuery
		}
	}
	return c
}

// Enabled reports whether a provider is configured, i.e. whether the
// web_search tool is offered at all.
func (c Config) Enabled() bool { return c.Provider != "" }

// Price is what one search costs in USD with the defaults applied.
func (c Config) Price() float64 { return c.withDefaults().PricePerQuery }

// Validate reports every problem of the section, keyed by paths relative
// to it ("provider", "base_url", "api_key", "price_per_query").
func (c Config) Validate() settings.Problems {
	var ps settings.Problems
	switch c.Provider {
	case "":
		return nil
	case SearXNG:
		if c.BaseURL == "" {
			ps.Add("base_url", "required for provider searxng: your instance's address, e.g. http://127.0.0.1:8888")
		}
	case Brave:
		if c.APIKey == "" {
			ps.AddSecret("api_key", "required for provider brave", settings.SetHint)
		}
	default:
		ps.Add("provider", `must be "searxng" or "brave" (or empty to turn web search off), got %q`, c.Provider)
		return ps
	}
	ps.CheckURL("base_url", c.BaseURL)
	if c.PricePerQuery < 0 {
		ps.Add("price_per_query", "must not be negative, got %g", c.PricePerQuery)
	}
	return ps
}
