package tools

import (
	"strings"
)

// What a tool's result and call mean for what a run may do afterwards
// (DESIGN: what strangers wrote never widens what a run may do). Each
// Spec says where its result's words come from (Origin), which argument
// is an address botd dials (Dials), and which calls reach beyond the
// group's own chat and memory (Widens). The in-process agent enforces it
// per run (agent's guard); the registry only declares it, so a new tool
// says it in its one file.

// Origin is who wrote the words a tool's result carries.
type Origin int

const (
	// OriginBotd: botd's own state (a task list, a delivery receipt).
	// Addresses in it are not offered to fetch_url: it may echo what the
	// model wrote.
	OriginBotd Origin = iota
	// OriginPeople: what the chat's members wrote (list_media's captions).
	// Its addresses may be opened; it taints nothing.
	OriginPeople
	// OriginStrangers: words nobody in the chat vouches for — a web page, a
	// search result, a shared document's text, a transcript, an image.
	// Reading it taints the run; the addresses it shows may be opened
	// (they are the page's links), exactly as shown.
	OriginStrangers
)

// Widening reasons a tainted run is refused.
const (
	WidenTask   = "schedule work that runs later without a person asking"
	WidenGlobal = "change the global memory every group's assistant is shown"
	// WidenMemory: the group's memory is in every later run's prompt, a
	// run the taint does not follow: a planted note would be an
	// instruction that outlives the page.
	WidenMemory = "change the memory every later answer in this group is shown"
	WidenGroup  = "act on another group"
)

// Call is one call of a tool as a run's guard sees it.
type Call struct {
	// Folder is the group the run is for.
	Folder string
	// Args are the model's arguments.
	Args map[string]any
	// OwnTask reports whether task id is one of Folder's own tasks; nil
	// when unknown (the call is then taken to reach another group).
	OwnTask func(id int64) bool
}

// otherGroup reports a group argument that names a group other than the
// caller's own ("*" included).
func (c Call) otherGroup() bool {
	g, _ := c.Args["group"].(string)
	g = strings.TrimSpace(g)
	return g != "" && g != c.Folder
}

func widenSchedule(c Call) string {
	if c.otherGroup() {
		return WidenGroup
	}
	// A one-off task too: its run is started by the prompt the model
	// wrote, not by a person, and so would not carry this run's taint.
	return WidenTask
}

func widenMemory(c Call) string {
	if s, _ := c.Args["scope"].(string); strings.TrimSpace(s) == ScopeGlobal {
		return WidenGlobal
	}
	return WidenMemory
}

func widenTaskChange(c Call) string {
	id, ok := IntArg(c.Args["id"])
	if !ok || id < 1 {
		return "" // the tool refuses it itself
	}
	if c.OwnTask != nil && c.OwnTask(int64(id)) {
		return ""
	}
	return WidenGroup
}

// Dialled is the address a call of s asks botd to fetch, and whether it
// has one.
func (s *Spec) Dialled(args map[string]any) (string, bool) {
	if s.Dials == "" {
		return "", false
	}
	u, ok := args[s.Dials].(string)
	return strings.TrimSpace(u), ok
}
