package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/tools"
)

// What the fixed part of a run's first request costs, measured as the bill
// measures it (textTokens: bytes/4; a tool is its name, description and
// parameters' JSON). `go test ./agent -run TestPromptSectionTokens -v`
// prints the table docs/performance.md quotes.

// Budgets of the fixed system prompt (no memory, no summary, no standing
// instructions) on Telegram: they fail the test when the prompt grows
// back. Raise one only with a reason in the commit.
const (
	promptBudgetWeb   = 560 // web fetch and search configured
	promptBudgetFetch = 600 // fetch only (the default): one line says search is not set up
	promptBudgetNoWeb = 630 // neither: two lines say so
)

// promptSections splits a system prompt at its "# " headings; the part
// before the first heading is the preamble.
func promptSections(sys string) (names []string, tokens map[string]int64) {
	tokens = map[string]int64{}
	name := "preamble"
	var cur strings.Builder
	flush := func() {
		names = append(names, name)
		tokens[name] = textTokens(cur.String())
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(sys, "\n") {
		if strings.HasPrefix(line, "# ") {
			flush()
			name = strings.TrimSpace(line)
		}
		cur.WriteString(line)
	}
	flush()
	return names, tokens
}

func toolTokens(def tools.Def) int64 {
	return textTokens(def.Name + def.Description + string(def.Schema()))
}

func TestPromptSectionTokens(t *testing.T) {
	g := &groups.Group{Folder: "family", Name: "Family", Chat: famChat, Trigger: "@Andy", RequiresTrigger: true}
	for _, tc := range []struct {
		name   string
		web    tools.Internet
		budget int64
	}{
		{"web fetch and search", tools.Internet{Fetch: true, Search: true}, promptBudgetWeb},
		{"fetch only", tools.Internet{Fetch: true}, promptBudgetFetch},
		{"no web", tools.Internet{}, promptBudgetNoWeb},
	} {
		sys := buildSystem("Andy", g, tc.web, recalled{})
		names, secs := promptSections(sys)
		var b strings.Builder
		fmt.Fprintf(&b, "system prompt, %s (%d bytes):\n", tc.name, len(sys))
		for _, n := range names {
			fmt.Fprintf(&b, "  %-24s %5d tokens\n", n, secs[n])
		}
		total := textTokens(sys)
		fmt.Fprintf(&b, "  %-24s %5d tokens (budget %d)", "total", total, tc.budget)
		t.Log(b.String())
		if total > tc.budget {
			t.Errorf("%s: the fixed system prompt is %d tokens, over its budget of %d", tc.name, total, tc.budget)
		}
	}

	// Every tool's schema, for the offer that shows them all to a plain
	// group (every generation model, both web tools).
	offer := tools.Offer{Generate: tools.Generate{Image: true, Speech: true, Video: true}, Internet: tools.Internet{Fetch: true, Search: true}}
	var b strings.Builder
	var all int64
	b.WriteString("tool schemas (name + description + parameters), then the first sentence a lazy index shows:\n")
	for _, s := range tools.For(offer) {
		def := s.Def(offer)
		n := toolTokens(def)
		all += n
		first := tools.FirstSentence(def.Description)
		fmt.Fprintf(&b, "  %-16s %4d tokens  index %3d chars: %s\n", s.Name, n, len(first), first)
	}
	fmt.Fprintf(&b, "  %-16s %4d tokens (%d tools)", "all", all, len(tools.For(offer)))
	t.Log(b.String())

	// What a lazy run (agent/lazy.go) starts with instead: the core
	// tools' schemas and one index line ("name: first sentence") for each
	// other tool, for the default offer (fetch on, no search, no
	// generation) and the widest; load_tools' own schema comes on top.
	for _, o := range []struct {
		name  string
		offer tools.Offer
	}{{"default offer", tools.Offer{Internet: tools.Internet{Fetch: true}}}, {"every tool", offer}} {
		var core, index, eager int64
		for _, s := range tools.For(o.offer) {
			def := s.Def(o.offer)
			eager += toolTokens(def)
			switch s.Name {
			case tools.FetchMedia, tools.SearchMessages, tools.ReadMessages:
				core += toolTokens(def)
			default:
				index += textTokens(s.Name + ": " + tools.FirstSentence(def.Description) + "\n")
			}
		}
		t.Logf("%s: %d tools eager %d tokens; lazy: core schemas %d + index lines %d = %d tokens",
			o.name, len(tools.For(o.offer)), eager, core, index, core+index)
	}
}
