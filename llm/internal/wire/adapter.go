package wire

import (
	"context"
	"net/http"

	"github.com/botd-dev/botd/llm"
)

// Adapter is the part of an adapter that does not depend on its vendor's
// wire format: the client its calls share, its base URL, and the
// llm.Provider methods, which differ only in how a request is opened.
// Adapters embed it (through an unexported alias, so the field stays
// private to them).
type Adapter struct {
	Client  Client
	BaseURL string
	open    OpenFunc
}

// OpenFunc posts req and returns its stream; keepRaw asks the stream to
// keep the payloads for Result.Raw.
type OpenFunc func(ctx context.Context, req *llm.Request, keepRaw bool) (llm.Stream, error)

// NewAdapter is every adapter's constructor: it does no I/O, so a bad key
// surfaces on first use. An empty baseURL means defaultURL; a nil hc means
// http.DefaultClient.
func NewAdapter(provider, apiKey, baseURL, defaultURL string, hc *http.Client, parse ErrorParser, open OpenFunc, opts []Option) Adapter {
	if baseURL == "" {
		baseURL = defaultURL
	}
	a := Adapter{
		Client:  Client{Provider: provider, APIKey: apiKey, HTTP: hc, Pricing: llm.DefaultPricing, ParseError: parse},
		BaseURL: baseURL,
		open:    open,
	}
	for _, o := range opts {
		o(&a.Client)
	}
	return a
}

func (a *Adapter) Name() string { return a.Client.Provider }

// Capabilities is what the vendors' own APIs all take; an adapter whose
// server may lack some of it (OpenAI-compatible ones) overrides it.
func (a *Adapter) Capabilities() llm.Capabilities {
	return llm.Capabilities{Tools: true, Streaming: true, Vision: true, Reasoning: true, Documents: true}
}

// Generate is built on the stream so that there is one wire decoder per
// vendor to get right.
func (a *Adapter) Generate(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	return Generate(ctx, a.Name(), func(keepRaw bool) (llm.Stream, error) { return a.open(ctx, req, keepRaw) })
}

func (a *Adapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	return a.open(ctx, req, false)
}
