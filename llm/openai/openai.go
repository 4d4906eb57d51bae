// Package openai adapts the Chat Completions API to the llm seam. The same
// adapter serves OpenAI and the compatible servers (DeepSeek, OpenRouter,
// Ollama, vLLM) through its base URL, so it tolerates their dialects:
// reasoning in reasoning_content or reasoning, errors as objects or
// strings, DeepSeek's cache counters.
package openai

import (
	"context"
	"net/http"
	"net/url"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// DefaultBaseURL is the public OpenAI API, including the version path.
const DefaultBaseURL = "https://api.openai.com/v1"

// Option configures a Provider.
type Option = wire.Option

// Options shared by every adapter.
var (
	WithName        = wire.WithName
	WithPricing     = wire.WithPricing
	WithIdleTimeout = wire.WithIdleTimeout
	WithFiles       = wire.WithFiles
)

// Provider is the Chat Completions adapter.
type Provider struct {
	c       wire.Client
	baseURL string
	// official is true for api.openai.com, whose newer models reject
	// max_tokens in favour of max_completion_tokens, which in turn not every
	// compatible server understands.
	official bool
}

var _ llm.Provider = (*Provider)(nil)

// New returns an adapter. It does no I/O. baseURL includes the version
// path (".../v1"); empty means OpenAI. A nil hc means http.DefaultClient.
func New(apiKey, baseURL string, hc *http.Client, opts ...Option) *Provider {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	p := &Provider{
		c:       wire.Client{Provider: "openai", APIKey: apiKey, HTTP: hc, Pricing: llm.DefaultPricing, ParseError: parseError},
		baseURL: baseURL,
	}
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() == "api.openai.com" {
		p.official = true
	}
	for _, o := range opts {
		o(&p.c)
	}
	return p
}

func (p *Provider) Name() string { return p.c.Provider }

func (p *Provider) Capabilities() llm.Capabilities {
	return llm.Capabilities{Tools: true, Streaming: true, Vision: true, Reasoning: true, Documents: p.official}
}

func (p *Provider) Generate(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	return wire.Generate(ctx, p.Name(), func(keepRaw bool) (llm.Stream, error) { return p.open(ctx, req, keepRaw) })
}

func (p *Provider) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	return p.open(ctx, req, false)
}

func (p *Provider) open(ctx context.Context, req *llm.Request, keepRaw bool) (llm.Stream, error) {
	body, err := buildRequest(p.Name(), req, p.official, p.c.RemoteFiles(ctx, p, req))
	if err != nil {
		return nil, err
	}
	h := p.header()
	return p.c.Stream(ctx, wire.Call{
		URL:     wire.JoinURL(p.baseURL, "/chat/completions"),
		Header:  h,
		Body:    body,
		Model:   req.Model,
		Decoder: &decoder{},
		KeepRaw: keepRaw,
	})
}
