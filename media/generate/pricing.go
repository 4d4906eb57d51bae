package generate

import "strings"

// Price is what a model charges, in USD: per unit (an image, a second of
// audio or video) or per million tokens where the provider reports tokens.
type Price struct {
	PerUnit    float64
	InPerMTok  float64
	OutPerMTok float64
}

// prices are list prices of known models (2026-11); a model not listed is
// recorded unpriced unless media.generation.<kind>.price says. Prefix
// match on the model name, longest first.
var prices = []struct {
	prefix string
	p      Price
}{
	// Token-priced images: text/image input, image output.
	{"gpt-image-1-mini", Price{InPerMTok: 2.5, OutPerMTok: 8}},
	{"gpt-image-1", Price{InPerMTok: 10, OutPerMTok: 40}},
	{"dall-e-3", Price{PerUnit: 0.04}},
	{"dall-e-2", Price{PerUnit: 0.02}},
	// Gemini image output is $30 per million tokens, 1290 tokens an image.
	{"gemini-2.5-flash-image", Price{InPerMTok: 0.3, OutPerMTok: 30}},
	{"gemini-3-pro-image", Price{InPerMTok: 2, OutPerMTok: 120}},
	// Speech per second of audio (gpt-4o-mini-tts: about $0.015 a minute).
	{"gpt-4o-mini-tts", Price{PerUnit: 0.015 / 60}},
	// Transcription, per second of audio heard.
	{"whisper-1", Price{PerUnit: 0.006 / 60}},
	{"gpt-4o-transcribe", Price{PerUnit: 0.006 / 60}},
	{"gpt-4o-mini-transcribe", Price{PerUnit: 0.003 / 60}},
	{"tts-1-hd", Price{PerUnit: 0.03 / 60}},
	{"tts-1", Price{PerUnit: 0.015 / 60}},
	// Video per second.
	{"sora-2-pro", Price{PerUnit: 0.30}},
	{"sora-2", Price{PerUnit: 0.10}},
}

// PriceOf returns the known price of model; ok is false when botd has none.
func PriceOf(model string) (Price, bool) {
	m := strings.ToLower(model)
	best, found := -1, false
	var p Price
	for _, e := range prices {
		if strings.HasPrefix(m, e.prefix) && len(e.prefix) > best {
			best, p, found = len(e.prefix), e.p, true
		}
	}
	return p, found
}

// Cost is what units (images, or seconds of audio or video) with usage
// cost under p, in micro-cents (1e-8 USD). Tokens win over units when
// both are priced and reported: they are what the provider bills.
func (p Price) Cost(units float64, u Usage) int64 {
	var usd float64
	if (p.InPerMTok > 0 || p.OutPerMTok > 0) && (u.InputTokens > 0 || u.OutputTokens > 0) {
		usd = float64(u.InputTokens)*p.InPerMTok/1e6 + float64(u.OutputTokens)*p.OutPerMTok/1e6
	} else {
		usd = units * p.PerUnit
	}
	return int64(usd*1e8 + 0.5)
}

// Priced reports whether p can price anything.
func (p Price) Priced() bool { return p.PerUnit > 0 || p.InPerMTok > 0 || p.OutPerMTok > 0 }
