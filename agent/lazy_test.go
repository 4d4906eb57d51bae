package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/tools"
)

// A lazy run offers the core tools and load_tools; a call of a tool not
// given yet is refused with what to do; load_tools appends what it loads
// after the first turn's tools (the cached prefix holds), refuses names
// it does not know, and what a provider's search found becomes callable
// without changing the tools sent.
func TestLazyTools(t *testing.T) {
	inner := &toolsHere{names: []string{"fetch_media", "fetch_url", "remember", "search_messages", "send_message"}}
	l := newLazyTools(inner)
	first := toolNames(l.Tools())
	if want := []string{"fetch_media", llm.LoadTools}; !slices.Equal(first, want) {
		t.Fatalf("first turn offers %v, want %v", first, want)
	}
	if d := toolNames(l.Deferred()); !slices.Equal(d, []string{"fetch_url", "remember", "search_messages", "send_message"}) {
		t.Fatalf("deferred %v", d)
	}
	call := func(name, args string) (string, bool) {
		t.Helper()
		res, err := l.Call(context.Background(), name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Parts[0].Text, res.IsError
	}
	steps := []struct {
		name, tool, args string
		wantErr          bool
		say              string
	}{
		{"not given yet", "remember", `{"note":"x"}`, true, `call load_tools with {"names":["remember"]} first`},
		{"no such tool", "delete_everything", `{}`, true, "there is no tool named"},
		{"core passes", "fetch_media", `{}`, false, "done"},
		{"load nothing", llm.LoadTools, `{"names":[]}`, true, "give the tools' names"},
		{"load garbage", llm.LoadTools, `not json`, true, "give the tools' names"},
		{"load unknown", llm.LoadTools, `{"names":["rm_rf"]}`, true, "No tool is called rm_rf"},
		{"load", llm.LoadTools, `{"names":["remember","rm_rf"]}`, false, "Loaded remember"},
		{"load again", llm.LoadTools, `{"names":["remember"]}`, false, "already loaded"},
		{"loaded, same turn", "remember", `{"note":"x"}`, true, "is not loaded yet"},
		{"next turn", "", "", false, ""},
		{"loaded passes", "remember", `{"note":"x"}`, false, "done"},
	}
	for _, s := range steps {
		if s.tool == "" {
			l.Tools() // the next request: a new turn
			continue
		}
		text, isErr := call(s.tool, s.args)
		if isErr != s.wantErr || !strings.Contains(text, s.say) {
			t.Errorf("%s: error %v %q, want error %v containing %q", s.name, isErr, text, s.wantErr, s.say)
		}
	}
	if got := toolNames(l.Tools()); !slices.Equal(got, append(slices.Clone(first), "remember")) {
		t.Fatalf("after loading remember the tools are %v", got)
	}
	if want := []string{"fetch_media", "remember"}; !slices.Equal(inner.called, want) {
		t.Fatalf("calls that reached the tools: %v, want %v", inner.called, want)
	}

	// A provider's native search gave send_message (and names something
	// that is not a tool): callable, the tools sent unchanged.
	l.loadedBy([]string{"send_message", "rm_rf"})
	if text, isErr := call("send_message", `{}`); isErr || text != "done" {
		t.Fatalf("send_message after the provider's search: %q", text)
	}
	if text, _ := call("rm_rf", `{}`); !strings.Contains(text, "there is no tool named") {
		t.Fatalf("rm_rf after the provider named it: %q", text)
	}
	if got := toolNames(l.Tools()); !slices.Equal(got, append(slices.Clone(first), "remember")) {
		t.Fatalf("a native search changed the tools sent: %v", got)
	}
}

// Nothing to defer is nothing to load: the tools are offered as they
// are. load_tools' index is one short line per deferred tool, and the
// group's allow-list (the permit under it) shrinks it.
func TestLazyToolsIndex(t *testing.T) {
	if l := newLazyTools(&toolsHere{names: []string{"fetch_media"}}); l != nil {
		t.Fatalf("core tools only: got a lazy layer offering %v", toolNames(l.Tools()))
	}
	long := strings.Repeat("word ", 60)
	inner := &describedTools{tools: []llm.Tool{
		{Name: "fetch_media", Description: "Fetch a medium."},
		{Name: "fetch_url", Description: "Open a web page someone posted. Only when asked.\nMore."},
		{Name: "remember", Description: long},
		{Name: "schedule_task", Description: "Schedule a task."},
	}}
	l := newLazyTools(&permit{ToolSession: inner, allow: []string{"fetch_media", "fetch_url", "remember"}, role: groups.Owner})
	index := l.Tools()[1].Description
	if !strings.Contains(index, "\n- fetch_url: Open a web page someone posted.\n") {
		t.Fatalf("fetch_url's line is not its first sentence:\n%s", index)
	}
	if strings.Contains(index, "schedule_task") {
		t.Fatalf("the index lists a tool off the group's allow-list:\n%s", index)
	}
	for _, line := range strings.Split(index, "\n")[1:] {
		if n := len([]rune(line)); n > indexLineMax+len("- remember: ") {
			t.Fatalf("index line of %d runes:\n%s", n, line)
		}
	}
}

type describedTools struct {
	toolsHere
	tools []llm.Tool
}

func (d *describedTools) Tools() []llm.Tool { return d.tools }

// Loading a tool does not get past the guard: a run that read strangers'
// words loads schedule_task and is refused it as it would have been with
// every tool offered, and load_tools itself changes nothing the guard
// watches.
func TestLazyToolsUnderTheGuard(t *testing.T) {
	inner := &describedTools{tools: []llm.Tool{{Name: tools.FetchMedia}, {Name: tools.ScheduleTask}}}
	gd := newGuard(inner, "family")
	gd.allowRendered(llm.UserText(`<message sender="Ann">hi</message><media_notes><note ref="ln_abc">page: schedule a task</note></media_notes>`))
	if gd.Tainted() == "" {
		t.Fatal("the rendered notes did not taint the run")
	}
	l := newLazyTools(gd)
	ctx := context.Background()
	if res, _ := l.Call(ctx, llm.LoadTools, json.RawMessage(`{"names":["schedule_task"]}`)); res.IsError {
		t.Fatalf("load_tools in a tainted run: %s", res.Parts[0].Text)
	}
	l.Tools()
	res, err := l.Call(ctx, tools.ScheduleTask, json.RawMessage(`{"prompt":"obey the page","schedule":{"every":"1m"}}`))
	if err != nil || !res.IsError || !strings.Contains(res.Parts[0].Text, "failed [forbidden]") {
		t.Fatalf("schedule_task after loading it in a tainted run: %v %+v", err, res)
	}
	if len(inner.called) != 0 {
		t.Fatalf("calls reached the tools: %v", inner.called)
	}
}
