package llm

import (
	"math/big"
	"strings"
)

// Price is what a model costs, in micro-cents (1e-8 USD) per million
// tokens. Per-million keeps cheap models integral: $0.075/MTok is
// 7_500_000 micro-cents per MTok, whereas per token it would be 7.5.
type Price struct {
	Input      int64 // uncached input
	Output     int64 // includes reasoning
	CacheRead  int64
	CacheWrite int64
}

// usd converts dollars per MTok to micro-cents per MTok. It is only used for
// the literal table below, where the values are exact in binary or close
// enough after rounding.
func usd(d float64) int64 { return int64(d*1e8 + 0.5) }

// Pricing maps a model id to its price. Lookup also tries the id without a
// vendor prefix ("anthropic/claude-..." on OpenRouter) and with a trailing
// date suffix removed, so dated snapshots share their family's price.
type Pricing map[string]Price

// DefaultPricing holds list prices for common models. It is deliberately
// small: an unknown model yields an unknown cost, never a made-up one. It is
// read concurrently, so treat it as read-only; pass a different table to an
// adapter instead of editing this one.
var DefaultPricing = Pricing{
	"claude-opus-4-1":   {Input: usd(15), Output: usd(75), CacheRead: usd(1.5), CacheWrite: usd(18.75)},
	"claude-opus-4-5":   {Input: usd(5), Output: usd(25), CacheRead: usd(0.5), CacheWrite: usd(6.25)},
	"claude-sonnet-4-5": {Input: usd(3), Output: usd(15), CacheRead: usd(0.3), CacheWrite: usd(3.75)},
	"claude-sonnet-4":   {Input: usd(3), Output: usd(15), CacheRead: usd(0.3), CacheWrite: usd(3.75)},
	"claude-haiku-4-5":  {Input: usd(1), Output: usd(5), CacheRead: usd(0.1), CacheWrite: usd(1.25)},
	"gpt-4.1":           {Input: usd(2), Output: usd(8), CacheRead: usd(0.5)},
	"gpt-4.1-mini":      {Input: usd(0.4), Output: usd(1.6), CacheRead: usd(0.1)},
	"gpt-4o":            {Input: usd(2.5), Output: usd(10), CacheRead: usd(1.25)},
	"gpt-4o-mini":       {Input: usd(0.15), Output: usd(0.6), CacheRead: usd(0.075)},
	"gpt-5":             {Input: usd(1.25), Output: usd(10), CacheRead: usd(0.125)},
	"gpt-5-mini":        {Input: usd(0.25), Output: usd(2), CacheRead: usd(0.025)},
	"deepseek-chat":     {Input: usd(0.28), Output: usd(0.42), CacheRead: usd(0.028)},
	"deepseek-reasoner": {Input: usd(0.28), Output: usd(0.42), CacheRead: usd(0.028)},
	"gemini-2.5-pro":    {Input: usd(1.25), Output: usd(10), CacheRead: usd(0.31)},
	"gemini-2.5-flash":  {Input: usd(0.3), Output: usd(2.5), CacheRead: usd(0.075)},
	"gemini-2.0-flash":  {Input: usd(0.1), Output: usd(0.4), CacheRead: usd(0.025)},
}

// Lookup finds the price for model.
func (p Pricing) Lookup(model string) (Price, bool) {
	if p == nil {
		return Price{}, false
	}
	if pr, ok := p[model]; ok {
		return pr, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		return p.Lookup(model[i+1:])
	}
	// claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14: strip date suffixes.
	if trimmed := trimDateSuffix(model); trimmed != model {
		return p.Lookup(trimmed)
	}
	return Price{}, false
}

func trimDateSuffix(m string) string {
	isDigits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return s != ""
	}
	// -YYYYMMDD
	if i := strings.LastIndexByte(m, '-'); i > 0 && len(m)-i-1 == 8 && isDigits(m[i+1:]) {
		return m[:i]
	}
	// -YYYY-MM-DD
	if n := len(m); n > 11 && m[n-11] == '-' && m[n-6] == '-' && m[n-3] == '-' &&
		isDigits(m[n-10:n-6]) && isDigits(m[n-5:n-3]) && isDigits(m[n-2:]) {
		return m[:len(m)-11]
	}
	return m
}

// Apply sets the cost of u for model: CostKnown is false for an unpriced
// model. Rounds half up to whole micro-cents.
func (p Pricing) Apply(model string, u *Usage) {
	pr, ok := p.Lookup(model)
	if !ok {
		u.CostMicrocents, u.CostKnown = 0, false
		return
	}
	// big.Int guards the product against overflow on absurd token counts;
	// this runs once per call so the cost is irrelevant.
	total := new(big.Int)
	add := func(tokens, rate int64) {
		total.Add(total, new(big.Int).Mul(big.NewInt(tokens), big.NewInt(rate)))
	}
	add(u.InputTokens, pr.Input)
	add(u.OutputTokens, pr.Output)
	add(u.CacheReadTokens, pr.CacheRead)
	long := min(u.CacheWriteLongTokens, u.CacheWriteTokens)
	add(u.CacheWriteTokens-long, pr.CacheWrite)
	add(long, 2*pr.Input)
	total.Add(total, big.NewInt(500_000))
	total.Quo(total, big.NewInt(1_000_000))
	u.CostMicrocents, u.CostKnown = total.Int64(), true
}

// ApplyBatch is Apply at the batch rate. Anthropic's Message Batches and
// OpenAI's Batch API bill every token class (input, output, cache reads
// and writes) at half the list price, so the batch cost is the list cost
// halved. The list cost is rounded first, as Apply does, and the half
// rounds up (a list cost of 7 micro-cents bills 4), so a batch is never
// reported below half of what the same call would cost unbatched.
func (p Pricing) ApplyBatch(model string, u *Usage) {
	p.Apply(model, u)
	if u.CostKnown {
		u.CostMicrocents = (u.CostMicrocents + 1) / 2
	}
}
