package tools

import (
	"fmt"

	"github.com/botd-dev/botd/groups"
)

// The memory tools are Local: the MCP server changes the memory file of
// the group folder it serves, or the global memory when it is the main
// group's. The group is never an argument; the scope argument is offered
// only with Offer.GlobalMemory (another server takes scope "group" too,
// but refuses "global").

// Tool names of the memory tools.
const (
	Remember = "remember"
	Forget   = "forget"
)

// Memory scopes.
const (
	ScopeGroup  = "group"
	ScopeGlobal = "global"
)

var remember = Spec{
	Name: Remember, Service: Local, MCP: Env.Remember, Widens: widenMemory, Needs: needsMemory,
	Def: func(o Offer) Def {
		return newDef(Remember,
			withDescription(fmt.Sprintf("Save a note in the group's long-term memory when someone asks you to remember something. "+
				"You are shown the memory at the start of every later conversation in this group. Use it also to keep a "+
				"lasting fact the group will expect you to know (a name, a preference, a birthday, a recurring plan). "+
				"One short fact per note, written so it makes sense on its own later; it is stored on one line with "+
				"today's date. Never store passwords, codes, keys or other secrets, nor anything a person would not want "+
				"the whole group to read. The memory holds %d KiB: when it is full, forget outdated notes first. To "+
				"correct a note, forget the old one and remember the new one.", groups.MaxMemoryBytes>>10)),
			annotate(Hints{}),
			requiredText("note", "The fact to remember, e.g. \"Alice is vegetarian\".", groups.MaxNoteRunes),
			scopeOption(o.GlobalMemory),
		)
	},
}

var forget = Spec{
	Name: Forget, Service: Local, MCP: Env.Forget, Widens: widenMemory, Needs: needsMemory,
	Def: func(o Offer) Def {
		return newDef(Forget,
			withDescription("Remove notes from the group's memory when someone asks you to forget something. "+
				"Every note containing the text (case-insensitive) is deleted. Use it also when a note is wrong or "+
				"outdated, or to make room when the memory is full. Give a distinctive part of the note, so that only the "+
				"notes meant are removed; headings and text the owners wrote outside the notes are never removed. Answers "+
				"how many notes were removed."),
			annotate(Hints{Destructive: true, Idempotent: true}),
			withString("text",
				required(),
				description(fmt.Sprintf("Text the notes to remove contain, at least %d characters, e.g. \"vegetarian\".",
					groups.MinForgetRunes)),
				minLength(groups.MinForgetRunes), maxLength(groups.MaxNoteRunes)),
			scopeOption(o.GlobalMemory),
		)
	},
}

// scopeOption is the scope argument, offered only by the main group's
// server when there is a global memory.
func scopeOption(global bool) defOption {
	if !global {
		return func(*Def) {}
	}
	return withString("scope",
		description(`"group" (the default): this group's memory. "global": the memory every group's `+
			"assistant is shown, for facts that hold for everyone; only this group (the main one) can change it."),
		enum(ScopeGroup, ScopeGlobal))
}

// needsMemory: the group's memory is any member's to write; the global
// memory every group reads only an owner's.
func needsMemory(c Call) groups.Role {
	if scope, _ := c.Args["scope"].(string); scope == ScopeGlobal {
		return groups.Owner
	}
	return groups.Member
}
