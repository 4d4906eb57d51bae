package main

import (
	"testing"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/providers"
)

// The chain a run asks says whether its first model searches deferred
// tools natively: an Anthropic model with tool search does, an older
// one and another vendor's take the load_tools path. Nothing is sent.
func TestBuildLLMToolSearch(t *testing.T) {
	tests := []struct {
		provider, model string
		want            bool
	}{
		{"claude", "claude-sonnet-4-5", true},
		{"claude", "claude-opus-4-1", false},
		{"gpt", "claude-sonnet-4-5", false}, // an OpenAI-compatible gateway: no native search
		{"gpt", "gpt-5", false},
	}
	for _, tt := range tests {
		cfg := &config.Config{}
		cfg.LLM.Providers = map[string]providers.Provider{
			"claude": {Type: "anthropic", APIKey: "k", BaseURL: "http://127.0.0.1:1"},
			"gpt":    {Type: "openai", APIKey: "k", BaseURL: "http://127.0.0.1:1/v1"},
		}
		cfg.LLM.Model = providers.Model{Provider: tt.provider, Name: tt.model}
		p, err := buildLLM(cfg, newLLMProviders(cfg, nil), func(llm.Attempt) {})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Capabilities().ToolSearch; got != tt.want {
			t.Errorf("%s %s: tool search %v, want %v", tt.provider, tt.model, got, tt.want)
		}
	}
}
