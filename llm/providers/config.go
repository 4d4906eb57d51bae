package providers

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/llm/uploads"
)

// Config is the llm: section of botd's config file: the providers, the
// model runs start with and its fallbacks, and how media reach a model.
type Config struct {
	Providers map[string]Provider `yaml:"providers"`
	Model     Model               `yaml:"model"`
	Fallback  []Model             `yaml:"fallback"`
	Files     Files               `yaml:"files"`
}

// Files is how media reach a model: inline up to UploadOverBytes, and
// above it through the provider's files API, uploaded once per provider.
type Files struct {
	// Upload false keeps every media file inline (nothing is stored at
	// the provider).
	Upload          bool  `yaml:"upload"`
	UploadOverBytes int64 `yaml:"upload_over_bytes"`
	// Keep is how long an upload botd no longer refers to stays at the
	// provider before it is deleted there.
	Keep settings.Duration `yaml:"keep"`
}

// Provider is one entry of llm.providers.
type Provider struct {
	Type    string `yaml:"type"` // anthropic | openai | gemini
	APIKey  string `yaml:"api_key"`
	BaseURL string `yaml:"base_url"`
	// CacheTTL is how long the provider keeps the prompt prefix every run
	// shares (system prompt and tools): 5m (default) or 1h (Anthropic
	// only; writes cost 2× input instead of 1.25×, worth it when a group's
	// runs are minutes to an hour apart).
	CacheTTL string `yaml:"cache_ttl"`
}

// Model is llm.model or an entry of llm.fallback.
type Model struct {
	Provider    string `yaml:"provider"`
	Name        string `yaml:"name"`
	MaxTokens   int    `yaml:"max_tokens"`
	MaxAttempts int    `yaml:"max_attempts"`
	// Capabilities overrides what the known-model table says the model
	// can take; unset fields keep the table's answer.
	Capabilities ModelCapabilities `yaml:"capabilities"`
}

// ModelCapabilities are per-model overrides; nil means "as known".
type ModelCapabilities struct {
	Vision    *bool `yaml:"vision"`
	Audio     *bool `yaml:"audio"`
	Video     *bool `yaml:"video"`
	Documents *bool `yaml:"documents"`
}

// DefaultConfig is the llm: section of an empty file.
func DefaultConfig() Config {
	return Config{
		Model: Model{MaxTokens: 4096},
		Files: Files{Upload: true, UploadOverBytes: uploads.DefaultUploadOver, Keep: settings.Duration(uploads.DefaultKeep)},
	}
}

// Validate reports every structural problem, located by key paths under
// llm. Missing API keys are not problems: a provider may be unused, and
// [Config.UsableModels] leaves out what cannot work.
func (c *Config) Validate() error {
	var ps settings.Problems
	for name, p := range c.Providers {
		path := "llm.providers." + name
		if !slices.Contains(Types, p.Type) {
			ps.Add(path+".type", "must be one of %s", strings.Join(Types, ", "))
		}
		ps.CheckURL(path+".base_url", p.BaseURL)
		switch p.CacheTTL {
		case "", "5m":
		case "1h":
			if p.Type != "anthropic" {
				ps.Add(path+".cache_ttl", "1h is Anthropic's; %s caches prompts by itself", p.Type)
			}
		default:
			ps.Add(path+".cache_ttl", "must be 5m or 1h")
		}
	}
	checkModel := func(path string, m Model) {
		if m.Provider == "" {
			ps.Add(path+".provider", "must name a provider of llm.providers")
		} else if _, ok := c.Providers[m.Provider]; !ok {
			ps.Add(path+".provider", "unknown provider %q (not under llm.providers)", m.Provider)
		}
		if m.Name == "" {
			ps.Add(path+".name", "must not be empty")
		}
		if m.MaxTokens < 0 {
			ps.Add(path+".max_tokens", "must not be negative")
		}
		if m.MaxAttempts < 0 {
			ps.Add(path+".max_attempts", "must not be negative")
		}
	}
	if c.Model != (Model{MaxTokens: c.Model.MaxTokens}) || len(c.Fallback) > 0 {
		checkModel("llm.model", c.Model)
	}
	for i, m := range c.Fallback {
		checkModel("llm.fallback["+strconv.Itoa(i)+"]", m)
	}
	if c.Files.UploadOverBytes < 0 {
		ps.Add("llm.files.upload_over_bytes", "must not be negative")
	}
	if c.Files.Keep.D() < time.Hour {
		ps.Add("llm.files.keep", "must be at least 1h (a run refers to its files for minutes)")
	}
	return ps.Err()
}

// Models is the fallback chain as configured: llm.model, then
// llm.fallback, each entry in order.
func (c *Config) Models() []Model {
	if c.Model.Provider == "" && c.Model.Name == "" && len(c.Fallback) == 0 {
		return nil
	}
	return append([]Model{c.Model}, c.Fallback...)
}

// UsableModels is the chain without the entries that cannot work: a
// provider with no API key (unless it is a server that needs none). The
// first usable entry is the model runs start with, so a config that lists
// Anthropic, OpenAI and Gemini runs on whichever key is set.
func (c *Config) UsableModels() []Model {
	var out []Model
	for _, m := range c.Models() {
		if p, ok := c.Providers[m.Provider]; ok && m.Name != "" && (p.APIKey != "" || p.Keyless()) {
			out = append(out, m)
		}
	}
	return out
}

// Keyless reports an OpenAI-compatible server other than OpenAI's own
// (Ollama, vLLM on a home server), which may run without a key.
func (p Provider) Keyless() bool {
	if p.Type != "openai" || p.BaseURL == "" {
		return false
	}
	u, err := url.Parse(p.BaseURL)
	return err == nil && u.Hostname() != "api.openai.com" && u.Hostname() != "api.deepseek.com"
}
