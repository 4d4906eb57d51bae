package wire

import (
	"time"

	"github.com/botd-dev/botd/llm"
)

// Option configures the client inside an adapter. The options are offered to callers by llm/providers, so every adapter takes
// the same ones.
type Option func(*Client)

// WithName sets the name used in errors and attempts (default: the
// adapter's type).
func WithName(name string) Option { return func(c *Client) { c.Provider = name } }

// WithPricing replaces llm.DefaultPricing for cost computation.
func WithPricing(pr llm.Pricing) Option { return func(c *Client) { c.Pricing = pr } }

// WithIdleTimeout sets how long a stream may stall between events.
func WithIdleTimeout(d time.Duration) Option { return func(c *Client) { c.IdleTimeout = d } }

// WithLongCache asks for the provider's long-lived prompt cache where it
// has one (Anthropic: one hour) for the prefix every run shares, the
// system prompt and tools.
func WithLongCache() Option { return func(c *Client) { c.LongCache = true } }

// WithFiles lets the adapter refer to large media through the provider's
// files API, uploading each file once (see [llm.Files]).
func WithFiles(f llm.Files) Option { return func(c *Client) { c.Files = f } }
