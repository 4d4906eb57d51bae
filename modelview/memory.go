package modelview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/groups"
	registry "github.com/botd-dev/botd/tools"
)

// The memory tools change the memory file of this server's group, or the
// global memory when the server is the main group's. The group is never an
// argument: which folder a call may change is fixed when the server is
// built (Options.GroupDir, Options.GlobalDir, Options.Main), so a chat
// member of one group cannot make the assistant write another's memory.

// errGlobalMainOnly answers a group other than the main one asking for the
// global memory.
const errGlobalMainOnly = "only the main group can change the global memory"

func (t *Session) Remember(_ context.Context, in registry.Args) *registry.Result {
	ws, global, note, refused := t.memoryArgs(registry.Remember, in, "note")
	if refused != nil {
		return refused
	}
	stored, err := ws.Remember(note, time.Now())
	if err != nil {
		return memoryFailure(registry.Remember, err)
	}
	t.log.Info("mcp memory: note added", "global", global, "runes", utf8.RuneCountInString(stored))
	if global {
		return registry.TextResult("remembered in the global memory: " + stored)
	}
	return registry.TextResult("remembered: " + stored)
}

func (t *Session) Forget(_ context.Context, in registry.Args) *registry.Result {
	ws, global, text, refused := t.memoryArgs(registry.Forget, in, "text")
	if refused != nil {
		return refused
	}
	n, err := ws.Forget(text)
	if err != nil {
		return memoryFailure(registry.Forget, err)
	}
	t.log.Info("mcp memory: notes removed", "global", global, "notes", n)
	msg := fmt.Sprintf("forgot %d line", n)
	if n != 1 {
		msg += "s"
	}
	if global {
		msg += " from the global memory"
	}
	return registry.TextResult(msg)
}

// memoryArgs checks a memory tool's arguments, reads its field, and picks
// the memory it may change: the group's own, or the global one for the
// main group only. Any argument besides field and scope is refused, so
// that a model passing e.g. a group name learns that it cannot choose one.
func (t *Session) memoryArgs(tool string, in registry.Args, field string) (ws groups.Workspace, global bool, value string, refused *registry.Result) {
	for k := range in {
		if k != field && k != "scope" {
			return ws, false, "", registry.BadArgs(tool, "unknown argument %q: %s takes %s and scope, and changes only this group's memory "+
				"(or, from the main group, the global one)", k, tool, field)
		}
	}
	scope, _, err := registry.StringArg(in, "scope")
	if err != nil {
		return ws, false, "", registry.BadArgs(tool, "%v", err)
	}
	switch strings.ToLower(strings.TrimSpace(scope)) {
	case "", registry.ScopeGroup:
		ws = t.ws
	case registry.ScopeGlobal:
		if !t.main {
			return ws, false, "", registry.ToolFailure(tool, registry.CodeForbidden, errGlobalMainOnly)
		}
		if t.global.Root == "" {
			return ws, false, "", registry.ToolFailure(tool, registry.CodeForbidden, "this server has no global memory")
		}
		ws, global = t.global, true
	default:
		return ws, false, "", registry.BadArgs(tool, "scope %q: use %q (this group's memory, the default) or %q", scope, registry.ScopeGroup, registry.ScopeGlobal)
	}
	if value, _, err = registry.StringArg(in, field); err != nil {
		return groups.Workspace{}, false, "", registry.BadArgs(tool, "%v", err)
	}
	return ws, global, value, nil
}

// memoryFailure is a tool error for a failed Remember or Forget.
func memoryFailure(tool string, err error) *registry.Result {
	code := registry.CodeInternal
	switch {
	case errors.Is(err, groups.ErrBadMemoryText):
		code = registry.CodeBadRequest
	case errors.Is(err, groups.ErrMemoryFull):
		code = registry.CodeTooLarge
	case errors.Is(err, groups.ErrNoMatch):
		code = registry.CodeNotFound
	}
	return registry.ToolFailure(tool, code, err.Error())
}
