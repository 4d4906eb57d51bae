package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/tools"
)

// coreTools are offered with their schemas from a run's first turn: what
// nearly every run that uses a tool needs, a file of the chat. Every
// other tool is deferred: the model sees its name and first sentence in
// load_tools' description and asks for it. Measured (BenchmarkGroupDayBill):
// keeping search_messages and read_messages core too costs every run
// about 600 tokens (botd 44 % of eager instead of 37 %), while a question
// about older history pays one load_tools turn (none on Anthropic's
// native tool search).
var coreTools = []string{"fetch_media"}

// indexLineMax bounds one tool's line in load_tools' index: a first
// sentence, not the description.
const indexLineMax = 110

// lazyTools offers a run's tools lazily (issue 43). What the model is
// given never changes order: the core tools, load_tools, then the tools
// it loaded in the order it loaded them, so every turn's request extends
// the one before and the first turn's prefix is the same in every run of
// the group (the prompt cache across runs). Providers with native tool
// search take the deferred set itself (llm.Request.Deferred) and report
// what their search gave the model (llm.Result.Loaded).
type lazyTools struct {
	ToolSession
	core     []llm.Tool
	deferred []llm.Tool
	byName   map[string]llm.Tool
	index    llm.Tool

	mu     sync.Mutex
	loaded []llm.Tool
	// given are the tools the model may call this turn; pending those
	// load_tools loaded during it, callable from the next turn on (the
	// calls of one turn run in parallel: a load beside a call of the
	// same tool must not decide by which finishes first).
	given   map[string]bool
	pending []string
}

// newLazyTools splits inner's tools into core and deferred. With nothing
// to defer it returns nil: the tools are offered as they are.
func newLazyTools(inner ToolSession) *lazyTools {
	l := &lazyTools{ToolSession: inner, byName: map[string]llm.Tool{}, given: map[string]bool{}}
	for _, t := range inner.Tools() {
		l.byName[t.Name] = t
		if slices.Contains(coreTools, t.Name) {
			l.core = append(l.core, t)
			l.given[t.Name] = true
		} else {
			l.deferred = append(l.deferred, t)
		}
	}
	if len(l.deferred) == 0 {
		return nil
	}
	l.index = loadToolsDef(l.deferred)
	return l
}

// loadToolsDef is the meta-tool: its description is the index of the
// deferred tools, one line each.
func loadToolsDef(deferred []llm.Tool) llm.Tool {
	var b strings.Builder
	b.WriteString("Gives you more tools: call it with the names you need and use them from your next turn on. Available:")
	for _, t := range deferred {
		b.WriteString("\n- ")
		b.WriteString(t.Name)
		if s := firstSentence(t.Description); s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	return llm.Tool{
		Name:        llm.LoadTools,
		Description: b.String(),
		Parameters:  json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},"required":["names"]}`),
	}
}

// firstSentence is a description's first sentence (its first line at
// most), clipped: what the model needs to know a tool exists. Tools of
// other MCP servers may not write theirs for an index.
func firstSentence(desc string) string {
	desc, _, _ = strings.Cut(strings.TrimSpace(desc), "\n")
	desc = tools.FirstSentence(desc)
	if r := []rune(desc); len(r) > indexLineMax {
		desc = strings.TrimSpace(string(r[:indexLineMax-1])) + "…"
	}
	return desc
}

// Tools is what the next turn offers: core, load_tools, and what was
// loaded so far. Asking for them begins the turn: the tools loaded in
// the last one become callable.
func (l *lazyTools) Tools() []llm.Tool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.pending {
		l.given[n] = true
	}
	l.pending = nil
	out := make([]llm.Tool, 0, len(l.core)+1+len(l.loaded))
	out = append(out, l.core...)
	out = append(out, l.index)
	return append(out, l.loaded...)
}

// Deferred is the run's deferred set, the same on every turn.
func (l *lazyTools) Deferred() []llm.Tool { return l.deferred }

// load gives the model the named tools from the next turn on, and
// returns the names it did not know.
func (l *lazyTools) load(names []string) (added, unknown []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range names {
		n = strings.TrimSpace(n)
		t, ok := l.byName[n]
		switch {
		case !ok:
			unknown = append(unknown, n)
		case l.given[n] || slices.Contains(l.pending, n):
		default:
			l.pending = append(l.pending, n)
			l.loaded = append(l.loaded, t)
			added = append(added, n)
		}
	}
	return added, unknown
}

func (l *lazyTools) isGiven(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.given[name]
}

// Call answers load_tools itself, refuses a tool the model was not given
// yet with what to do instead, and passes every other call on.
func (l *lazyTools) Call(ctx context.Context, name string, args json.RawMessage) (*tools.Result, error) {
	if name == llm.LoadTools {
		return l.callLoad(args), nil
	}
	if !l.isGiven(name) {
		if _, ok := l.byName[name]; ok {
			return tools.ToolFailure(name, tools.CodeBadRequest, fmt.Sprintf(
				"%s is not loaded yet: call %s with {\"names\":[%q]} first, then call it on your next turn.", name, llm.LoadTools, name)), nil
		}
		return tools.ToolFailure(name, tools.CodeNotFound, fmt.Sprintf(
			"there is no tool named %q here; the tools you can load are listed in %s.", name, llm.LoadTools)), nil
	}
	return l.ToolSession.Call(ctx, name, args)
}

func (l *lazyTools) callLoad(args json.RawMessage) *tools.Result {
	var a struct {
		Names []string `json:"names"`
	}
	if err := json.Unmarshal(args, &a); err != nil || len(a.Names) == 0 {
		return tools.ToolFailure(llm.LoadTools, tools.CodeBadRequest, `give the tools' names, e.g. {"names":["fetch_url"]}`)
	}
	added, unknown := l.load(a.Names)
	var b strings.Builder
	switch {
	case len(added) > 0:
		fmt.Fprintf(&b, "Loaded %s: call them from your next turn on.", strings.Join(added, ", "))
	case len(unknown) == 0:
		b.WriteString("Those tools are already loaded.")
	}
	if len(unknown) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "No tool is called %s; the index in %s's description lists every one.", strings.Join(unknown, ", "), llm.LoadTools)
		if len(added) == 0 {
			return tools.ToolFailure(llm.LoadTools, tools.CodeNotFound, b.String())
		}
	}
	return tools.TextResult(b.String())
}

// loadedBy marks what a provider's native tool search gave the model.
// The request's Tools do not change for it (the provider has them).
func (l *lazyTools) loadedBy(names []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range names {
		if _, ok := l.byName[n]; ok {
			l.given[n] = true
		}
	}
}

var _ ToolSession = (*lazyTools)(nil)
