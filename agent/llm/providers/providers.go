// Package providers builds adapters by their configured type name, so the
// wiring code needs no knowledge of the individual adapter packages.
package providers

import (
	"fmt"
	"net/http"

	"github.com/botd-dev/botd/agent/llm"
	"github.com/botd-dev/botd/agent/llm/anthropic"
	"github.com/botd-dev/botd/agent/llm/gemini"
	"github.com/botd-dev/botd/agent/llm/openai"
)

// Types lists the accepted type names, for config validation messages.
var Types = []string{"anthropic", "openai", "gemini"}

// NewProvider returns the adapter for typ ("anthropic" | "openai" |
// "gemini"). name is the configured provider name ("deepseek", ...) used
// in errors, logs and attempts; empty means typ. An empty baseURL means the
// vendor's public API. It does no I/O.
func NewProvider(typ, name, apiKey, baseURL string, hc *http.Client) (llm.Provider, error) {
	if name == "" {
		name = typ
	}
	switch typ {
	case "anthropic":
		return anthropic.New(apiKey, baseURL, hc, anthropic.WithName(name)), nil
	case "openai":
		return openai.New(apiKey, baseURL, hc, openai.WithName(name)), nil
	case "gemini":
		return gemini.New(apiKey, baseURL, hc, gemini.WithName(name)), nil
	}
	return nil, fmt.Errorf("llm provider %q: unknown type %q (want one of %v)", name, typ, Types)
}
