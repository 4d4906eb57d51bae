package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/config"
)

// Each mistake a newcomer makes in a config and what botd says about it,
// the line included: problems stop botd, warnings do not.
func TestConfigMistakes(t *testing.T) {
	llm := "llm:\n  providers:\n    openai: {type: openai, api_key: \"${OPENAI_API_KEY}\", base_url: \"${OPENAI_BASE_URL:-https://api.openai.com/v1}\"}\n" +
		"  model: {provider: openai, name: \"${OPENAI_MODEL:-gpt-4.1}\"}\n"
	tests := []struct {
		name, src string
		problems  []string // exactly these, in order
		warning   string   // one warning holds this
	}{
		{"mis-indented key deep in the file",
			"assistant_name: Andy\nchannels:\n  # the web rooms\n   web:\n    enabled: true\n    listen: 127.0.0.1:8080\n\n  telegram:\n    enabled: false\n",
			[]string{`invalid YAML at line 8: did not find expected key: "telegram:"; line 4 is indented by 3 spaces and line 8 by 2 under the same parent (line 2): indent them alike`}, ""},
		{"unquoted @ trigger",
			"assistant_name: Andy\ngroups:\n  - folder: family\n    chat: \"telegram:-100\"\n    trigger: @Andy\n",
			[]string{`invalid YAML at line 5: found character that cannot start any token: "trigger: @Andy"; quote it: trigger: "@Andy" (YAML reads a value starting with @ as syntax)`}, ""},
		{"unquoted @ trigger in a flow mapping", // the hint needs key: value on one line; the line is still right
			"groups:\n  - {folder: family, chat: \"telegram:-100\", trigger: @Andy}\n",
			[]string{`invalid YAML at line 2: found character that cannot start any token: "- {folder: family, chat: \"telegram:-100\", trigger: @Andy}"`}, ""},
		{"tab indentation",
			"groups:\n  - folder: family\n\tchat: \"telegram:-100\"\n",
			[]string{`invalid YAML at line 3: found a tab character that violates indentation: "chat: \"telegram:-100\""; YAML indents with spaces, not tabs`}, ""},
		{"unknown key",
			"assistant_name: Andy\nmedia:\n  ref_tll: 1h\n",
			[]string{"media.ref_tll: unknown key (did you mean ref_ttl?) (line 3)"}, ""},
		{"bad duration",
			"media:\n\n  ref_ttl: soon\n",
			[]string{`media.ref_ttl: invalid duration "soon" (want e.g. 30s, 30m, 24h) (line 3)`}, ""},
		{"missing secret of an enabled network: its section's line",
			"assistant_name: Andy\nchannels:\n  telegram:\n    enabled: true\n",
			[]string{"channels.telegram.token: required when the channel is enabled (line 3)"}, ""},
		{"two mistakes, two lines",
			"groups:\n  - {folder: family, chat: \"telegram:-100\"}\n  - {folder: \"../etc\", chat: \"telegram:-101\"}\nlog_level: loud\n",
			[]string{"log_level: must be one of debug, info, warn, error (line 4)", "groups[1].folder:"}, ""},
		{"chat id no Telegram chat has",
			"groups:\n  - folder: family\n    chat: \"telegram:1234567890x\"\n",
			nil, `groups[0].chat (line 3): "telegram:1234567890x" cannot be a telegram chat: Telegram chat ids are whole numbers`},
		{"trigger without @",
			"groups:\n  - folder: family\n    chat: \"telegram:-100\"\n    trigger: Andy\n",
			nil, `groups[0].trigger (line 4): "Andy" has no @, so botd answers every message that starts with the word Andy; for a mention write trigger: "@Andy"`},
		{"no key: the local server's variable is named",
			llm, nil, "or OPENAI_BASE_URL (and OPENAI_MODEL) for a local OpenAI-compatible server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.src), func(string) (string, bool) { return "", false })
			var ps config.Problems
			if err != nil && !errors.As(err, &ps) {
				t.Fatalf("err %v is not Problems", err)
			}
			if len(ps) != len(tt.problems) {
				t.Fatalf("got %d problem(s), want %d:\n%v", len(ps), len(tt.problems), err)
			}
			for i, want := range tt.problems {
				if got := ps[i].Located(); !strings.HasPrefix(got, want) {
					t.Errorf("problem %d:\n got %s\nwant %s", i, got, want)
				}
			}
			if tt.warning == "" {
				return
			}
			ws := configWarnings(cfg)
			if !slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, tt.warning) }) {
				t.Errorf("no warning holds %q:\n%s", tt.warning, strings.Join(ws, "\n"))
			}
		})
	}
}

// A chat id of the right shape, and a trigger with @, warn about nothing.
func TestConfigGoodGroupsNoWarnings(t *testing.T) {
	src := `groups:
  - {folder: a, chat: "telegram:-1001234567890", trigger: "@Andy"}
  - {folder: b, chat: "whatsapp:120363025@g.us"}
  - {folder: c, chat: "slack:C0123456789"}
  - {folder: d, chat: "discord:112233445566778899"}
  - {folder: e, chat: "matrix:!abcdefgh:example.org"}
`
	cfg, err := config.Parse([]byte(src), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range groupWarnings(cfg) {
		t.Errorf("warned: %s", w)
	}
}
