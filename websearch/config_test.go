package websearch_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/websearch"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       websearch.Config
		paths   []string
		secrets []string // paths whose problem carries an env hint
	}{
		{"off by default", websearch.DefaultConfig(), nil, nil},
		{"off ignores the rest", websearch.Config{BaseURL: "nonsense", PricePerQuery: -1}, nil, nil},
		{"searxng", websearch.Config{Provider: "searxng", BaseURL: "http://127.0.0.1:8888"}, nil, nil},
		{"searxng without base_url", websearch.Config{Provider: "searxng"}, []string{"base_url"}, nil},
		{"searxng with a bad URL", websearch.Config{Provider: "searxng", BaseURL: "127.0.0.1:8888"}, []string{"base_url"}, nil},
		{"brave with its default URL", websearch.Config{Provider: "brave", APIKey: "k"}, nil, nil},
		{"brave without a key", websearch.Config{Provider: "brave"}, []string{"api_key"}, []string{"api_key"}},
		{"brave with a bad URL", websearch.Config{Provider: "brave", APIKey: "k", BaseURL: "ftp://x"}, []string{"base_url"}, nil},
		{"unknown provider", websearch.Config{Provider: "google"}, []string{"provider"}, nil},
		{"provider is case-sensitive", websearch.Config{Provider: "Brave", APIKey: "k"}, []string{"provider"}, nil},
		{"negative price", websearch.Config{Provider: "brave", APIKey: "k", PricePerQuery: -0.1}, []string{"price_per_query"}, nil},
		{"every problem at once", websearch.Config{Provider: "brave", BaseURL: "x", PricePerQuery: -1},
			[]string{"api_key", "base_url", "price_per_query"}, []string{"api_key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := tt.c.Validate()
			var paths, secrets []string
			for _, p := range ps {
				paths = append(paths, p.Path)
				if p.EnvHint != "" {
					secrets = append(secrets, p.Path)
				}
				if p.Msg == "" {
					t.Errorf("problem at %s has no message", p.Path)
				}
			}
			if !slices.Equal(paths, tt.paths) || !slices.Equal(secrets, tt.secrets) {
				t.Errorf("problems %v (secrets %v), want at %v (secrets %v)", ps, secrets, tt.paths, tt.secrets)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name    string
		c       websearch.Config
		enabled bool
		price   float64
	}{
		{"off", websearch.DefaultConfig(), false, 0},
		{"searxng is free", websearch.Config{Provider: "searxng", BaseURL: "http://s"}, true, 0},
		{"searxng with a price of its own", websearch.Config{Provider: "searxng", BaseURL: "http://s", PricePerQuery: 0.001}, true, 0.001},
		{"brave at its list price", websearch.Config{Provider: "brave", APIKey: "k"}, true, websearch.BravePricePerQuery},
		{"brave at the operator's plan", websearch.Config{Provider: "brave", APIKey: "k", PricePerQuery: 0.009}, true, 0.009},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Enabled(); got != tt.enabled {
				t.Errorf("Enabled = %v, want %v", got, tt.enabled)
			}
			if got := tt.c.Price(); got != tt.price {
				t.Errorf("Price = %v, want %v", got, tt.price)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		c        websearch.Config
		provider string
		err      error
	}{
		{"not configured", websearch.Config{}, "", websearch.ErrNotConfigured},
		{"invalid", websearch.Config{Provider: "brave"}, "", settings.Problems{}},
		{"searxng", websearch.Config{Provider: "searxng", BaseURL: "http://127.0.0.1:1"}, "searxng", nil},
		{"brave", websearch.Config{Provider: "brave", APIKey: "k"}, "brave", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := websearch.New(tt.c, nil)
			switch want := tt.err.(type) {
			case nil:
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if s.Provider() != tt.provider {
					t.Errorf("Provider = %q, want %q", s.Provider(), tt.provider)
				}
			case settings.Problems:
				if ps := settings.Of(err); len(ps) == 0 || ps[0].Path != "api_key" {
					t.Errorf("New = %v, want the config's problems", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Errorf("New = %v, want %v", err, want)
				}
			}
		})
	}
}
