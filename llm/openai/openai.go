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

// Option configures a Provider; the options are llm/providers' With*.
type Option = wire.Option

// adapter names the embedded wire.Adapter so that the field stays
// unexported while its llm.Provider methods are promoted.
type adapter = wire.Adapter

// Provider is the Chat Completions adapter.
type Provider struct {
	adapter
	// official is true for api.openai.com, whose newer models reject
	// max_tokens in favour of max_completion_tokens, which in turn not every
	// compatible server understands.
	official bool
}

var _ llm.Provider = (*Provider)(nil)

// New returns an adapter. It does no I/O. baseURL includes the version
// path (".../v1"); empty means OpenAI. A nil hc means http.DefaultClient.
func New(apiKey, baseURL string, hc *http.Client, opts ...Option) *Provider {
	p := &Provider{}
	p.adapter = wire.NewAdapter("openai", apiKey, baseURL, DefaultBaseURL, hc, parseError, p.open, opts)
	if u, err := url.Parse(p.BaseURL); err == nil && u.Hostname() == "api.openai.com" {
		p.official = true
	}
	return p
}

// Capabilities claims documents (the file content part) only for OpenAI
// itself, see official.
func (p *Provider) Capabilities() llm.Capabilities {
	return llm.Capabilities{Tools: true, Streaming: true, Vision: true, Reasoning: true, Documents: p.official}
}

func (p *Provider) open(ctx context.Context, req *llm.Request, keepRaw bool) (llm.Stream, error) {
	body, err := buildRequest(p.Name(), req, p.official, p.Client.RemoteFiles(ctx, p, req))
	if err != nil {
		return nil, err
	}
	h := p.header()
	return p.Client.Stream(ctx, wire.Call{
		URL:     wire.JoinURL(p.BaseURL, "/chat/completions"),
		Header:  h,
		Body:    body,
		Model:   req.Model,
		Decoder: &decoder{},
		KeepRaw: keepRaw,
	})
}
