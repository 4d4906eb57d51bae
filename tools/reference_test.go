package tools_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/botd-dev/botd/tools"
)

// docs/tools.md carries a reference of every tool, generated from the
// registry (tools.All: each Spec's name, MCP definition, who is offered it,
// what the host does with it). TestToolsReference fails while the file's
// generated part differs from what the registry says now; regenerate it with
//
//	go generate ./tools
//
// (or go test ./tools -run TestToolsReference -update).

//go:generate go test -tags goolm -run ^TestToolsReference$ -update .

var updateReference = flag.Bool("update", false, "rewrite the generated tools reference in docs/tools.md")

const (
	referenceBegin = "<!-- BEGIN tools reference: generated from the tool registry by `go generate ./tools`; do not edit -->"
	referenceEnd   = "<!-- END tools reference -->"
)

func toolsDoc(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(file)), "docs", "tools.md")
}

func TestToolsReference(t *testing.T) {
	path := toolsDoc(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, referenceBegin), strings.Index(doc, referenceEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/tools.md lacks the markers of the generated reference:\n%s\n…\n%s", referenceBegin, referenceEnd)
	}
	want := doc[:i] + referenceBegin + "\n\n" + renderReference() + "\n" + doc[j:]
	if want == doc {
		return
	}
	if *updateReference {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/tools.md's tools reference is stale (a tool, argument or description changed): run `go generate ./tools`\n%s",
		firstDifference(doc, want))
}

// TestToolsReferenceNamesEveryTool keeps the generator honest: every
// registered tool and each of its arguments, for the widest offer, appears.
func TestToolsReferenceNamesEveryTool(t *testing.T) {
	ref := renderReference()
	for _, s := range tools.All {
		if !strings.Contains(ref, "### `"+s.Name+"`") {
			t.Errorf("the reference has no heading for %s", s.Name)
		}
		for name := range s.Def(widest).Properties {
			if !strings.Contains(ref, "| `"+name+"` |") {
				t.Errorf("the reference lacks %s's argument %s", s.Name, name)
			}
		}
	}
}

func firstDifference(have, want string) string {
	hl, wl := strings.Split(have, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(hl) || k < len(wl); k++ {
		var h, w string
		if k < len(hl) {
			h = hl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if h != w {
			return fmt.Sprintf("first difference at line %d:\n  file:      %q\n  generated: %q", k+1, h, w)
		}
	}
	return ""
}

// widest is the offer that shows every tool and argument: the main group's
// server with a global memory, every generation model and both web tools.
var widest = tools.Offer{
	Main: true, GlobalMemory: true,
	Generate: tools.Generate{Image: true, Speech: true, Video: true},
	Internet: tools.Internet{Fetch: true, Search: true},
}

// offerings names what turns a tool on, for a tool not every server shows.
var offerings = []struct {
	offer tools.Offer
	when  string
}{
	{tools.Offer{Generate: tools.Generate{Image: true}}, "`media.generation.image` is set"},
	{tools.Offer{Generate: tools.Generate{Speech: true}}, "`media.generation.speech` is set"},
	{tools.Offer{Generate: tools.Generate{Video: true}}, "`media.generation.video` is set"},
	{tools.Offer{Internet: tools.Internet{Fetch: true}}, "`internet.fetch.enabled` is true (the default)"},
	{tools.Offer{Internet: tools.Internet{Search: true}}, "`internet.search.provider` is set"},
	{tools.Offer{Main: true}, "the server is the main group's"},
}

func offeredWhen(s tools.Spec) string {
	if s.Offered == nil || s.Offered(tools.Offer{}) {
		return "always"
	}
	var when []string
	for _, o := range offerings {
		if s.Offered(o.offer) {
			when = append(when, o.when)
		}
	}
	if len(when) == 0 {
		return "never with the offers the reference knows (add one to offerings in tools/reference_test.go)"
	}
	return "when " + strings.Join(when, " or ")
}

// argumentsOnlyFor names the offer under which an argument appears that a
// plain group's server does not show.
func argumentsOnlyFor(s tools.Spec, name string) string {
	if _, ok := s.Def(tools.Offer{Generate: widest.Generate, Internet: widest.Internet}).Properties[name]; ok {
		return ""
	}
	if _, ok := s.Def(tools.Offer{Main: true, Generate: widest.Generate, Internet: widest.Internet}).Properties[name]; ok {
		return "main group only"
	}
	return "main group with a global memory only"
}

func renderReference() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d tools, in the registry's order. Arguments marked *main group only* are shown to the main group's "+
		"server alone; a tool offered only *when* a key is set is absent from every other server.\n\n", len(tools.All))
	for _, s := range tools.All {
		def := s.Def(widest)
		fmt.Fprintf(&b, "### `%s`\n\n", s.Name)
		fmt.Fprintf(&b, "%s\n\n", oneLine(def.Description))
		fmt.Fprintf(&b, "- Offered: %s.\n", offeredWhen(s))
		fmt.Fprintf(&b, "- Answered by: %s.\n", answeredBy(s))
		fmt.Fprintf(&b, "- Hints: %s.\n", hintsOf(def.Hints))
		if s.Dials != "" {
			fmt.Fprintf(&b, "- `%s` is opened only when a person in the chat posted it or a result showed it "+
				"([security](security.md#what-botd-refuses)).\n", s.Dials)
		}
		if s.Widens != nil {
			b.WriteString("- Once a run has read strangers' words, a call that would outlive the run or reach past its group " +
				"is refused until a person confirms it with the code botd gives ([security](security.md#what-botd-refuses)).\n")
		}
		b.WriteString("\n")
		props := def.Properties
		if len(props) == 0 {
			b.WriteString("No arguments.\n\n")
			continue
		}
		b.WriteString("| argument | type | required | description |\n|---|---|---|---|\n")
		for _, name := range argumentOrder(def) {
			p, _ := props[name].(map[string]any)
			desc := describe(p)
			if only := argumentsOnlyFor(s, name); only != "" {
				desc = "*" + only + ".* " + desc
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, typeOf(p), yesNo(contains(def.Required, name)), desc)
			if sub, ok := p["properties"].(map[string]any); ok {
				keys := make([]string, 0, len(sub))
				for k := range sub {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					sp, _ := sub[k].(map[string]any)
					fmt.Fprintf(&b, "| `%s.%s` | %s | | %s |\n", name, k, typeOf(sp), describe(sp))
				}
			}
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// argumentOrder is the required arguments in the schema's order, then the
// others alphabetically.
func argumentOrder(def tools.Def) []string {
	out := append([]string(nil), def.Required...)
	var rest []string
	for name := range def.Properties {
		if !contains(out, name) {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func answeredBy(s tools.Spec) string {
	var parts []string
	switch s.Service {
	case tools.Local:
		parts = append(parts, "the tool session itself, in the group folder (no host request)")
	default:
		parts = append(parts, fmt.Sprintf("the host's %s service", s.Service))
	}
	if s.Service != tools.Local {
		if s.Repeatable {
			parts = append(parts, "carried out again after a crash")
		} else {
			parts = append(parts, "never repeated after a crash (answered `send_unknown`)")
		}
		if s.Standby {
			parts = append(parts, "answered by a standby instance")
		} else {
			parts = append(parts, "refused by a standby instance (`standby`)")
		}
	}
	return strings.Join(parts, "; ")
}

func hintsOf(h tools.Hints) string {
	var out []string
	say := func(p bool, name string) {
		if p {
			out = append(out, name)
		}
	}
	say(h.ReadOnly, "read-only")
	say(h.Destructive, "destructive")
	say(h.Idempotent, "idempotent")
	say(h.OpenWorld, "open world")
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func typeOf(p map[string]any) string {
	t, _ := p["type"].(string)
	if t == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			if it, ok := items["type"].(string); ok {
				return "array of " + it
			}
		}
	}
	return t
}

// describe is an argument's description with its bounds.
func describe(p map[string]any) string {
	desc, _ := p["description"].(string)
	var bounds []string
	if e, ok := p["enum"]; ok {
		bounds = append(bounds, "one of "+joinValues(e))
	}
	if r := rangeOf(p, "minLength", "maxLength"); r != "" {
		bounds = append(bounds, r+" characters")
	}
	if r := rangeOf(p, "minimum", "maximum"); r != "" {
		bounds = append(bounds, r)
	}
	if r := rangeOf(p, "minItems", "maxItems"); r != "" {
		bounds = append(bounds, r+" items")
	}
	if v, ok := p["default"]; ok {
		bounds = append(bounds, fmt.Sprintf("default %v", v))
	}
	out := oneLine(desc)
	if len(bounds) > 0 {
		out = strings.TrimSpace(out + " (" + strings.Join(bounds, "; ") + ")")
	}
	return out
}

// rangeOf says the bounds lo and hi of p: "1–128", "at most 32".
func rangeOf(p map[string]any, lo, hi string) string {
	l, hasL := p[lo]
	h, hasH := p[hi]
	switch {
	case hasL && hasH:
		return fmt.Sprintf("%v–%v", l, h)
	case hasH:
		return fmt.Sprintf("at most %v", h)
	case hasL:
		return fmt.Sprintf("at least %v", l)
	}
	return ""
}

func joinValues(e any) string {
	var vs []string
	switch e := e.(type) {
	case []string:
		for _, v := range e {
			vs = append(vs, "`"+v+"`")
		}
	case []any:
		for _, v := range e {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
	default:
		return fmt.Sprint(e)
	}
	return strings.Join(vs, ", ")
}

// oneLine makes text fit a markdown table cell: one line, pipes escaped.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
