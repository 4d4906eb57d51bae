package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels/web"
)

// The example config is what `make run` starts with: the web room of the
// main group, and the first provider whose key is set.
func TestExampleConfigPicksTheFirstProviderWithAKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      string // provider/model of the first usable model; "" for none
		wantBase  string
		wantSetup []string
	}{
		{name: "no environment", want: "",
			wantSetup: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENAI_BASE_URL (and OPENAI_MODEL)"}},
		{name: "anthropic", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, want: "anthropic/claude-sonnet-4-5", wantBase: "https://api.anthropic.com"},
		{name: "openai only", env: map[string]string{"OPENAI_API_KEY": "sk"}, want: "openai/gpt-4.1", wantBase: "https://api.openai.com/v1"},
		{name: "gemini only", env: map[string]string{"GEMINI_API_KEY": "g"}, want: "gemini/gemini-2.5-flash", wantBase: "https://generativelanguage.googleapis.com"},
		{name: "anthropic wins over gemini", env: map[string]string{"GEMINI_API_KEY": "g", "ANTHROPIC_API_KEY": "a"}, want: "anthropic/claude-sonnet-4-5"},
		{name: "local server, no key", env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_MODEL": "llama3.2"},
			want: "openai/llama3.2", wantBase: "http://127.0.0.1:11434/v1"},
		{name: "proxy for anthropic", env: map[string]string{"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "http://proxy:8080"},
			want: "anthropic/claude-sonnet-4-5", wantBase: "http://proxy:8080"},
		{name: "empty key is no key", env: map[string]string{"ANTHROPIC_API_KEY": ""}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(data, envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			w := cfg.Channels.Network(web.Name).(*web.Config)
			if !w.Enabled || w.Listen != "127.0.0.1:8080" {
				t.Fatalf("web channel %+v", w)
			}
			if g := cfg.Groups[0]; g.Chat != "web:main" || !g.Main {
				t.Fatalf("first group %+v, want the main web room", g)
			}
			if r := cfg.RunReadiness(); len(r) != 0 {
				t.Fatalf("readiness %v: the web channel must run without a key", r)
			}
			ms := cfg.LLM.UsableModels()
			got := ""
			if len(ms) > 0 {
				got = ms[0].Provider + "/" + ms[0].Name
				if tc.wantBase != "" && cfg.LLM.Providers[ms[0].Provider].BaseURL != tc.wantBase {
					t.Errorf("base url %s", cfg.LLM.Providers[ms[0].Provider].BaseURL)
				}
			}
			if got != tc.want {
				t.Fatalf("first usable model %q, want %q", got, tc.want)
			}
			if (cfg.MissingLLM() == "") != (tc.want != "") {
				t.Errorf("MissingLLM %q", cfg.MissingLLM())
			}
			setup := cfg.LLMSetup()
			for _, w := range tc.wantSetup {
				if !strings.Contains(setup, w) {
					t.Errorf("setup %q lacks %q", setup, w)
				}
			}
		})
	}
}

func TestRunReadinessWithoutWeb(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"nothing enabled", "", []string{"channels.web.enabled", "TELEGRAM_BOT_TOKEN", "no LLM model is configured"}},
		{"telegram without a key", `channels: {telegram: {enabled: true, token: t}}
llm:
  providers: {anthropic: {type: anthropic, api_key: "${ANTHROPIC_API_KEY}"}, gemini: {type: gemini, api_key: "${GEMINI_API_KEY}"}}
  model: {provider: anthropic, name: claude}
  fallback: [{provider: gemini, name: gemini-2.5-flash}]
`, []string{"ANTHROPIC_API_KEY", "GEMINI_API_KEY"}},
		{"web without a key", `channels: {web: {enabled: true}}
llm:
  providers: {anthropic: {type: anthropic, api_key: "${ANTHROPIC_API_KEY}"}}
  model: {provider: anthropic, name: claude}
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(cfg.RunReadiness(), "\n")
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("readiness %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("readiness %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestWebProblems(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{`channels: {web: {enabled: true, listen: "0.0.0.0:8080"}}`, "channels.web.listen: \"0.0.0.0:8080\" is reachable from other machines"},
		{`channels: {web: {enabled: true, listen: "8080"}}`, "channels.web.listen: must be host:port"},
		{`groups: [{folder: a, chat: "web:../etc"}]`, "groups[0].chat: \"../etc\" is not a valid web room name"},
		{`channels: {web: {allow_remote: "yes"}}`, "channels.web.allow_remote: expected true or false"},
	} {
		_, err := Parse([]byte(tc.yaml), noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := Parse([]byte(`channels: {web: {enabled: true, listen: "0.0.0.0:8080", allow_remote: true}}`), noEnv); err != nil {
		t.Errorf("allow_remote did not allow: %v", err)
	}
}
