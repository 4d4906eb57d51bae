package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels/matrix"
	"github.com/botd-dev/botd/config"
)

func runCLI(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return runCLIPath(t, dir, "/usr/bin:/bin", args...)
}

// runCLIPath runs botd with path as its PATH (and nothing else of this
// environment), combined output and exit code.
func runCLIPath(t *testing.T, dir, path string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(botdBin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestCLI(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	example := filepath.Join(filepath.Dir(file), "..", "..", "config.example.yaml")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "three.yaml"), `
media: {ref_ttl: soon}
channels: {telegram: {enabled: false, tokne: x}}
groups: [{folder: "../etc", chat: "telegram:1"}]
`)
	// The example config runs (its web room needs no key): see
	// TestFreshConfigRunsWithoutAKey.
	writeFile(t, filepath.Join(dir, "empty.yaml"), "")
	writeFile(t, filepath.Join(dir, "nollm.yaml"), `
channels:
  telegram: {enabled: true, token: "1:x"}
llm:
  providers: {anthropic: {type: anthropic, api_key: "${ANTHROPIC_API_KEY}"}}
  model: {provider: anthropic, name: claude-sonnet-4-5}
`)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no args", nil, 2, []string{"Usage:", "botd run", "botd mcp", "botd config check", "botd media", "botd whatsapp login", "botd version"}},
		{"version", []string{"version"}, 0, []string{"botd "}},
		{"run help", []string{"run", "--help"}, 0, []string{"Usage: botd run", "-config"}},
		{"mcp help", []string{"mcp", "--help"}, 0, []string{"Usage: botd mcp", "-group", "-http"}},
		{"config help", []string{"config", "--help"}, 0, []string{"botd config check"}},
		{"config check help", []string{"config", "check", "--help"}, 0, []string{"Usage: botd config check"}},
		{"whatsapp help", []string{"whatsapp", "--help"}, 0, []string{"botd whatsapp login", "-phone"}},
		{"media help", []string{"media", "--help"}, 0, []string{"Usage: botd media [usage]", "media.max_disk_bytes"}},
		{"media prune help", []string{"media", "prune", "--help"}, 0, []string{"Usage: botd media prune", "-group", "-older-than"}},
		{"media unknown", []string{"media", "shred"}, 2, []string{`unknown media command "shred"`, "botd media prune"}},
		{"media before any run", []string{"media", "--config", example}, 1, []string{"no media yet", "botd.db does not exist"}},
		{"media prune bad age", []string{"media", "prune", "--older-than", "7 days", "--config", example}, 2, []string{"invalid age"}},
		{"usage help", []string{"usage", "--help"}, 0, []string{"Usage: botd usage", "-group", "-since", "-runs"}},
		{"usage before any run", []string{"usage", "--config", example}, 1, []string{"no usage yet"}},
		{"usage bad since", []string{"usage", "--since", "last week", "--config", example}, 2, []string{"neither an age"}},
		{"usage bad runs", []string{"usage", "--runs", "-1", "--config", example}, 2, []string{"--runs: -1 is not between 0 and 1000"}},
		{"usage unknown group", []string{"usage", "--group", "nope", "--config", example}, 2, []string{`no group "nope"`, "main, family"}},
		{"chats help", []string{"chats", "--help"}, 0, []string{"Usage: botd chats list | approve CODE", "-folder", "-name"}},
		{"chats without a verb", []string{"chats", "--config", example}, 2, []string{"want one of: chats list"}},
		{"chats approve without a code", []string{"chats", "approve", "--config", example}, 2, []string{"want one of"}},
		{"chats folder without approve", []string{"chats", "deny", "ABCD-EF23", "--folder", "x", "--config", example}, 2, []string{"--folder and --name go with approve"}},
		{"chats before any run", []string{"chats", "list", "--config", example}, 1, []string{"botd has not run here"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`}},
		{"example config passes with no env", []string{"config", "check", "--config", example}, 0, []string{"OK",
			"warning: llm: no model can answer", "ANTHROPIC_API_KEY"}},
		{"three mistakes", []string{"config", "check", "--config", "three.yaml"}, 1, []string{"3 problem(s)",
			"media.ref_ttl: invalid duration", "channels.telegram.tokne: unknown key", "groups[0].folder:"}},
		{"missing config", []string{"config", "check", "--config", "nope.yaml"}, 1, []string{"nope.yaml"}},
		{"run without channel or model", []string{"run", "--config", "empty.yaml"}, 1, []string{"cannot run",
			"channels.web.enabled", "TELEGRAM_BOT_TOKEN", "no LLM model is configured"}},
		{"run without LLM key", []string{"run", "--config", "nollm.yaml"}, 1, []string{"ANTHROPIC_API_KEY"}},
		{"mcp needs a mode", []string{"mcp", "--config", example}, 2, []string{"--group FOLDER (repeatable) or --http [ADDR]"}},
		{"mcp unknown group", []string{"mcp", "--group", "nope", "--config", example}, 1, []string{`unknown group "nope"`}},
		{"mcp http without tokens", []string{"mcp", "--http", "127.0.0.1:0", "--config", example}, 1, []string{"mcp.http.tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runCLI(t, dir, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if out, _ := runCLI(t, dir, "run", "--config", "nollm.yaml"); strings.Contains(out, "no channel is enabled") {
		t.Errorf("telegram is enabled, yet: %s", out)
	}
}

// A Matrix config on a build without encryption is warned that encrypted
// rooms will be refused; on one with it, not.
func TestMatrixCryptoWarning(t *testing.T) {
	cfg := config.Defaults()
	cfg.Channels.Network(matrix.Name).(*matrix.Config).Enabled = true
	warned := slices.ContainsFunc(configWarnings(cfg), func(w string) bool {
		return strings.Contains(w, "channels.matrix") && strings.Contains(w, "-tags goolm")
	})
	if warned == matrix.CryptoBuilt {
		t.Errorf("built with encryption %v, warned %v", matrix.CryptoBuilt, warned)
	}
	cfg.Channels.Network(matrix.Name).(*matrix.Config).Enabled = false
	if slices.ContainsFunc(configWarnings(cfg), func(w string) bool { return strings.Contains(w, "channels.matrix") }) {
		t.Error("warned about Matrix while it is off")
	}
}
