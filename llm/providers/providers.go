// Package providers builds adapters by their configured type name, so the
// wiring code needs no knowledge of the individual adapter packages.
package providers

import (
	"fmt"
	"net/http"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/anthropic"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/internal/wire"
	"github.com/botd-dev/botd/llm/openai"
)

// Option configures an adapter; every adapter takes the same ones, and
// these are their one home.
type Option = wire.Option

// WithName sets the name used in errors and attempts (default: the
// adapter's type).
func WithName(name string) Option { return wire.WithName(name) }

// WithPricing replaces llm.DefaultPricing for cost computation.
func WithPricing(pr llm.Pricing) Option { return wire.WithPricing(pr) }

// WithIdleTimeout sets how long a stream may stall between events.
func WithIdleTimeout(d time.Duration) Option { return wire.WithIdleTimeout(d) }

// WithFiles sends media above the store's threshold through the
// provider's files API (see llm.Files).
func WithFiles(f llm.Files) Option { return wire.WithFiles(f) }

// WithLongCache asks for the provider's one-hour prompt cache for the
// prefix every run shares (Anthropic).
func WithLongCache() Option { return wire.WithLongCache() }

// Types lists the accepted type names, for config validation messages.
var Types = []string{"anthropic", "openai", "gemini"}

// NewProvider returns the adapter for typ ("anthropic" | "openai" |
// "gemini"). name is the configured provider name ("deepseek", ...) used
// in errors, logs and attempts; empty means typ. An empty baseURL means the
// vendor's public API. It does no I/O.
func NewProvider(typ, name, apiKey, baseURL string, hc *http.Client, opts ...Option) (llm.Provider, error) {
	if name == "" {
		name = typ
	}
	opts = append([]Option{WithName(name)}, opts...)
	switch typ {
	case "anthropic":
		return anthropic.New(apiKey, baseURL, hc, opts...), nil
	case "openai":
		return openai.New(apiKey, baseURL, hc, opts...), nil
	case "gemini":
		return gemini.New(apiKey, baseURL, hc, opts...), nil
	}
	return nil, fmt.Errorf("llm provider %q: unknown type %q (want one of %v)", name, typ, Types)
}
