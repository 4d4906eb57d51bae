package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/config"
)

const planBase = `
data_dir: ./data
log_level: info
channels:
  telegram: {enabled: true, token: "111:old"}
llm:
  providers:
    chat: {type: openai, api_key: k1, base_url: "http://127.0.0.1:1/v1"}
    voice: {type: openai, api_key: k2, base_url: "http://127.0.0.1:2/v1"}
  model: {provider: chat, name: gpt-4.1}
media:
  transcription: {provider: voice, model: whisper-1}
groups:
  - {folder: family, chat: "telegram:-100"}
`

// planReload sorts what changed into what a reload puts in force and what
// waits for a restart: a token, the data folder and the listen address
// wait; groups, access, the model and the limits do not; a provider the
// media services use is both (the chain takes it, they do not); a change
// waiting for a restart is named again at the next reload, until botd
// restarts.
func TestPlanReload(t *testing.T) {
	parse := func(s string) *config.Config {
		t.Helper()
		c, err := config.Parse([]byte(s), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
		return c
	}
	edit := func(pairs ...string) *config.Config {
		t.Helper()
		s := planBase
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				t.Fatalf("%q not in the config", pairs[i])
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return parse(s)
	}
	started := parse(planBase)
	for _, tc := range []struct {
		name          string
		next          *config.Config
		live, restart []string
	}{
		{"nothing", parse(planBase), nil, nil},
		{"a trigger and an owner", edit(`chat: "telegram:-100"}`, `chat: "telegram:-100", trigger: "@Bob"}`, "data_dir: ./data\n", "data_dir: ./data\naccess: {owners: [\"telegram:1\"]}\n"),
			[]string{"groups[0].trigger", "access.owners"}, nil},
		{"the model and limits", edit("name: gpt-4.1", "name: gpt-5", "data_dir: ./data\n", "data_dir: ./data\nagent: {max_cost_per_day: 2, max_iterations: 3, context: {messages: 5}}\n"),
			[]string{"llm.model.name", "agent.max_iterations", "agent.context.messages", "agent.max_cost_per_day"}, nil},
		{"the log level", edit("log_level: info", "log_level: debug"), []string{"log_level"}, nil},
		{"a token, the data folder and ops", edit(`"111:old"`, `"111:new"`, "data_dir: ./data\n", "data_dir: ./other\nops: {listen: \"127.0.0.1:9\"}\n"),
			nil, []string{"data_dir", "channels.telegram.token", "ops.listen"}},
		{"a key the media services use too", edit("api_key: k2", "api_key: k3"),
			[]string{"llm.providers.voice.api_key"}, []string{"llm.providers.voice.api_key"}},
		{"the chain's key only", edit("api_key: k1", "api_key: k9"), []string{"llm.providers.chat.api_key"}, nil},
		{"a download's timeouts and its size", edit("media:\n", "media:\n  download_timeout: 20m\n  download_idle_timeout: 2m\n  max_download_bytes: 50000000\n"),
			[]string{"media.download_timeout", "media.download_idle_timeout"}, []string{"media.max_download_bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planReload(started, started, tc.next)
			if !slices.Equal(p.live, tc.live) || !slices.Equal(p.restart, tc.restart) {
				t.Errorf("live %q restart %q; want live %q restart %q", p.live, p.restart, tc.live, tc.restart)
			}
		})
	}
	// Applied once, a live change is not named again; one waiting for a
	// restart is.
	next := edit(`"111:old"`, `"111:new"`, "name: gpt-4.1", "name: gpt-5")
	p := planReload(started, next, next)
	if len(p.live) != 0 || !slices.Equal(p.restart, []string{"channels.telegram.token"}) {
		t.Errorf("the second reload of the same file: live %q restart %q", p.live, p.restart)
	}
}
