package providers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/llm/providers"
)

func TestConfigValidate(t *testing.T) {
	valid := func() providers.Config {
		c := providers.DefaultConfig()
		c.Providers = map[string]providers.Provider{"x": {Type: "openai"}, "a": {Type: "anthropic", CacheTTL: "1h"}}
		c.Model = providers.Model{Provider: "x", Name: "m", MaxTokens: 4096}
		return c
	}
	cases := []struct {
		name   string
		change func(c *providers.Config)
		want   string // "" is valid
	}{
		{"defaults", func(c *providers.Config) {}, ""},
		{"empty section", func(c *providers.Config) { *c = providers.DefaultConfig() }, ""},
		{"unknown provider", func(c *providers.Config) { c.Model.Provider = "y" }, `llm.model.provider: unknown provider "y"`},
		{"no model name", func(c *providers.Config) { c.Model.Name = "" }, "llm.model.name: must not be empty"},
		{"bad type", func(c *providers.Config) { c.Providers["x"] = providers.Provider{Type: "claude"} }, "llm.providers.x.type: must be one of anthropic, openai, gemini"},
		{"bad base url", func(c *providers.Config) {
			c.Providers["x"] = providers.Provider{Type: "openai", BaseURL: "localhost:11434"}
		}, "llm.providers.x.base_url: must be an http(s) URL"},
		{"cache ttl value", func(c *providers.Config) { c.Providers["a"] = providers.Provider{Type: "anthropic", CacheTTL: "2h"} }, "llm.providers.a.cache_ttl: must be 5m or 1h"},
		{"cache ttl not anthropic", func(c *providers.Config) { c.Providers["x"] = providers.Provider{Type: "openai", CacheTTL: "1h"} }, "llm.providers.x.cache_ttl: 1h is Anthropic's"},
		{"fallback", func(c *providers.Config) { c.Fallback = []providers.Model{{Provider: "x", Name: "n", MaxAttempts: -1}} }, "llm.fallback[0].max_attempts: must not be negative"},
		{"upload threshold", func(c *providers.Config) { c.Files.UploadOverBytes = -1 }, "llm.files.upload_over_bytes: must not be negative"},
		{"upload keep", func(c *providers.Config) { c.Files.Keep = settings.Duration(10 * time.Minute) }, "llm.files.keep: must be at least 1h"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("problems %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("problems %v, want %q", err, tc.want)
			}
		})
	}
}

func TestUsableModels(t *testing.T) {
	c := providers.DefaultConfig()
	c.Providers = map[string]providers.Provider{
		"anthropic": {Type: "anthropic"},
		"openai":    {Type: "openai", BaseURL: "https://api.openai.com/v1"},
		"ollama":    {Type: "openai", BaseURL: "http://127.0.0.1:11434/v1"},
		"gemini":    {Type: "gemini", APIKey: "k"},
	}
	c.Model = providers.Model{Provider: "anthropic", Name: "claude"}
	c.Fallback = []providers.Model{{Provider: "openai", Name: "gpt"}, {Provider: "ollama", Name: "llama"}, {Provider: "gemini", Name: "flash"}, {Provider: "nowhere", Name: "x"}}
	var got []string
	for _, m := range c.UsableModels() {
		got = append(got, m.Provider)
	}
	// No key: anthropic and OpenAI's own API are out; a local server and a
	// provider with a key are in; an undefined provider is out.
	if strings.Join(got, ",") != "ollama,gemini" {
		t.Errorf("usable %v, want ollama, gemini", got)
	}
	if len(c.Models()) != 5 {
		t.Errorf("models %v, want the whole chain of 5", c.Models())
	}
	if (&providers.Config{}).Models() != nil {
		t.Error("an empty section has a chain")
	}
}
