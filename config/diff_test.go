package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Changed names each key whose value differs, by its config path, and
// nothing else: a token's change shows as its path, never its value.
func TestChanged(t *testing.T) {
	base := `
data_dir: ./data
channels:
  telegram: {enabled: true, token: "111:old"}
llm:
  providers:
    fake: {type: openai, api_key: k1, base_url: "http://127.0.0.1:1/v1"}
  model: {provider: fake, name: gpt-4.1}
agent: {max_cost_per_day: 1}
access: {owners: ["telegram:1"]}
groups:
  - {folder: family, chat: "telegram:-100"}
  - {folder: club, chat: "telegram:-200", trigger: "@Andy"}
`
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"nothing", "data_dir: ./data\n", "data_dir: ./data\n", nil},
		{"a trigger", `trigger: "@Andy"`, `trigger: "@Bob"`, []string{"groups[1].trigger"}},
		{"a group added", "groups:\n", "groups:\n  - {folder: new, chat: \"telegram:-300\"}\n", []string{"groups"}},
		{"the model", "name: gpt-4.1", "name: gpt-5", []string{"llm.model.name"}},
		{"a provider's key", "api_key: k1", "api_key: k2", []string{"llm.providers.fake.api_key"}},
		{"a token", `token: "111:old"`, `token: "111:new"`, []string{"channels.telegram.token"}},
		{"a limit and the data folder", "max_cost_per_day: 1}\n", "max_cost_per_day: 2, max_iterations: 3}\ndata_dir: ./elsewhere\n",
			[]string{"data_dir", "agent.max_iterations", "agent.max_cost_per_day"}},
		{"an owner", `owners: ["telegram:1"]`, `owners: ["telegram:1", "telegram:2"]`, []string{"access.owners"}},
		{"a section's default written out", "agent: {max_cost_per_day: 1}", "agent: {max_cost_per_day: 1, max_iterations: 12}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := func(s string) *Config {
				t.Helper()
				c, err := Parse([]byte(s), func(string) (string, bool) { return "", false })
				if err != nil {
					t.Fatalf("parse: %v\n%s", err, s)
				}
				return c
			}
			from := base
			to := replaceOnce(t, base, tc.from, tc.to)
			if tc.name == "a limit and the data folder" {
				to = replaceOnce(t, replaceOnce(t, base, "data_dir: ./data\n", ""), tc.from, tc.to)
			}
			got := Changed(parse(from), parse(to))
			if !slices.Equal(sortedCopy(got), sortedCopy(tc.want)) {
				t.Errorf("Changed = %q, want %q", got, tc.want)
			}
		})
	}
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	i := strings.Index(s, old)
	if i < 0 {
		t.Fatalf("%q not in the config", old)
	}
	return s[:i] + new + s[i+len(old):]
}

func sortedCopy(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// BenchmarkChanged diffs the annotated example config against a copy
// with one group's trigger changed: what a reload spends finding what
// changed.
func BenchmarkChanged(b *testing.B) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		b.Fatal(err)
	}
	env := func(string) (string, bool) { return "", false }
	old, _ := Parse(data, env)
	next, _ := Parse(data, env)
	if old == nil || next == nil {
		b.Fatal("the example config did not parse")
	}
	next.AckReaction = "✅"
	b.ReportAllocs()
	for b.Loop() {
		if len(Changed(old, next)) != 1 {
			b.Fatal("want one change")
		}
	}
}
