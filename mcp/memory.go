package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
)

// The memory tools change the memory file of this server's group, or the
// global memory when the server is the main group's. The group is never an
// argument: which folder a call may change is fixed when the server is
// built (Options.GroupDir, Options.GlobalDir, Options.Main), so a chat
// member of one group cannot make the assistant write another's memory.

// Memory scopes.
const (
	scopeGroup  = "group"
	scopeGlobal = "global"
)

// errGlobalMainOnly answers a group other than the main one asking for the
// global memory.
const errGlobalMainOnly = "only the main group can change the global memory"

// scopeOption is the scope argument, offered only by the main group's
// server: another group's server takes scope "group" too, but refuses
// "global" with errGlobalMainOnly.
func scopeOption(global bool) mcpgo.ToolOption {
	if !global {
		return func(*mcpgo.Tool) {}
	}
	return mcpgo.WithString("scope",
		mcpgo.Description(`"group" (the default): this group's memory. "global": the memory every group's `+
			"assistant is shown, for facts that hold for everyone; only this group (the main one) can change it."),
		mcpgo.Enum(scopeGroup, scopeGlobal))
}

// rememberTool is remember; global adds the scope argument.
func rememberTool(global bool) mcpgo.Tool {
	return mcpgo.NewTool(ToolRemember,
		mcpgo.WithDescription(fmt.Sprintf("Save a note in the group's long-term memory, which you are shown at the start "+
			"of every later conversation in this group. Use it when someone asks you to remember something (a name, a "+
			"preference, a birthday, a recurring plan), or to keep a lasting fact the group will expect you to know. "+
			"One short fact per note, written so it makes sense on its own later; it is stored on one line with "+
			"today's date. Never store passwords, codes, keys or other secrets, nor anything a person would not want "+
			"the whole group to read. The memory holds %d KiB: when it is full, forget outdated notes first. To "+
			"correct a note, forget the old one and remember the new one.", groups.MaxMemoryBytes>>10)),
		mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
		mcpgo.WithString("note",
			mcpgo.Required(),
			mcpgo.Description("The fact to remember, e.g. \"Alice is vegetarian\"."),
			mcpgo.MinLength(1), mcpgo.MaxLength(groups.MaxNoteRunes)),
		scopeOption(global),
	)
}

// forgetTool is forget; global adds the scope argument.
func forgetTool(global bool) mcpgo.Tool {
	return mcpgo.NewTool(ToolForget,
		mcpgo.WithDescription("Remove notes from the group's memory: every note containing the text (case-insensitive) "+
			"is deleted. Use it when someone asks you to forget something, when a note is wrong or outdated, or to "+
			"make room when the memory is full. Give a distinctive part of the note, so that only the notes meant "+
			"are removed; headings and text the owners wrote outside the notes are never removed. Answers how many "+
			"notes were removed."),
		mcpgo.WithDestructiveHintAnnotation(true),
		mcpgo.WithIdempotentHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
		mcpgo.WithString("text",
			mcpgo.Required(),
			mcpgo.Description(fmt.Sprintf("Text the notes to remove contain, at least %d characters, e.g. \"vegetarian\".",
				groups.MinForgetRunes)),
			mcpgo.MinLength(groups.MinForgetRunes), mcpgo.MaxLength(groups.MaxNoteRunes)),
		scopeOption(global),
	)
}

func (t *tools) remember(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	ws, global, refused := t.memoryArgs(ToolRemember, req, "note")
	if refused != nil {
		return refused, nil
	}
	note, _, err := stringArg(req, "note")
	if err != nil {
		return badArgs(ToolRemember, "%v", err), nil
	}
	stored, err := ws.Remember(note, time.Now())
	if err != nil {
		return memoryFailure(ToolRemember, err), nil
	}
	t.log.Info("mcp memory: note added", "global", global, "runes", utf8.RuneCountInString(stored))
	if global {
		return mcpgo.NewToolResultText("remembered in the global memory: " + stored), nil
	}
	return mcpgo.NewToolResultText("remembered: " + stored), nil
}

func (t *tools) forget(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	ws, global, refused := t.memoryArgs(ToolForget, req, "text")
	if refused != nil {
		return refused, nil
	}
	text, _, err := stringArg(req, "text")
	if err != nil {
		return badArgs(ToolForget, "%v", err), nil
	}
	n, err := ws.Forget(text)
	if err != nil {
		return memoryFailure(ToolForget, err), nil
	}
	t.log.Info("mcp memory: notes removed", "global", global, "notes", n)
	msg := fmt.Sprintf("forgot %d line", n)
	if n != 1 {
		msg += "s"
	}
	if global {
		msg += " from the global memory"
	}
	return mcpgo.NewToolResultText(msg), nil
}

// memoryArgs checks a memory tool's arguments and picks the memory it may
// change: the group's own, or the global one for the main group only. Any
// argument besides field and scope is refused, so that a model passing
// e.g. a group name learns that it cannot choose one.
func (t *tools) memoryArgs(tool string, req mcpgo.CallToolRequest, field string) (ws groups.Workspace, global bool, refused *mcpgo.CallToolResult) {
	for k := range req.GetArguments() {
		if k != field && k != "scope" {
			return ws, false, badArgs(tool, "unknown argument %q: %s takes %s and scope, and changes only this group's memory "+
				"(or, from the main group, the global one)", k, tool, field)
		}
	}
	scope, _, err := stringArg(req, "scope")
	if err != nil {
		return ws, false, badArgs(tool, "%v", err)
	}
	switch strings.ToLower(strings.TrimSpace(scope)) {
	case "", scopeGroup:
		return t.ws, false, nil
	case scopeGlobal:
		if !t.main {
			return ws, false, toolFailure(tool, ipc.CodeForbidden, errGlobalMainOnly)
		}
		if t.global.Root == "" {
			return ws, false, toolFailure(tool, ipc.CodeForbidden, "this server has no global memory")
		}
		return t.global, true, nil
	default:
		return ws, false, badArgs(tool, "scope %q: use %q (this group's memory, the default) or %q", scope, scopeGroup, scopeGlobal)
	}
}

// memoryFailure is a tool error for a failed Remember or Forget.
func memoryFailure(tool string, err error) *mcpgo.CallToolResult {
	code := ipc.CodeInternal
	switch {
	case errors.Is(err, groups.ErrBadMemoryText):
		code = ipc.CodeBadRequest
	case errors.Is(err, groups.ErrMemoryFull):
		code = ipc.CodeTooLarge
	case errors.Is(err, groups.ErrNoMatch):
		code = ipc.CodeNotFound
	}
	return toolFailure(tool, code, err.Error())
}
