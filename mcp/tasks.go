package mcp

import (
	"context"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/ipc"
	registry "github.com/botd-dev/botd/tools"
)

// Scheduled tasks: the tools turn into IPC requests that the host's
// scheduler answers; which tasks a call may see and change is decided
// there, by the group the request comes from.

func (t *tools) scheduleTask(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.ScheduleTaskArgs
	var err error
	if a.Prompt, err = requiredArg(req, "prompt", "prompt is required: what to do when the task runs"); err == nil {
		a.Schedule, err = scheduleArg(req.GetArguments()["schedule"])
	}
	if err == nil {
		err = readStrings(req, into{"context", &a.Context}, into{"group", &a.Group})
	}
	if err == nil {
		a.Batch, err = boolArg(req, "batch", false)
	}
	if err != nil {
		return badArgs(registry.ScheduleTask, "%v", err), nil
	}
	var res ipc.TaskResult
	if err := t.call(ctx, ipc.TypeScheduleTask, a, &res); err != nil {
		return toolError(registry.ScheduleTask, err), nil
	}
	return mcpgo.NewToolResultText(fmt.Sprintf("Task %d scheduled in %s: %s, context %s%s. Next run: %s (now: %s).",
		res.Task.ID, res.Task.Group, res.Task.Schedule, res.Task.Context, batchNote(res.Task.Batch), res.Task.NextRun, res.Now)), nil
}

const scheduleForms = `give an object with one key: {"cron": "0 9 * * 1"}, {"every": "30m"}, {"at": "2026-12-01T09:00:00+01:00"} or {"in": "2h"}`

// scheduleArg reads the schedule object. A model that writes a string
// ("every 30m", "cron: 0 9 * * 1") is understood too; the host checks
// the values either way.
func scheduleArg(v any) (ipc.TaskSchedule, error) {
	var ts ipc.TaskSchedule
	switch s := v.(type) {
	case nil:
		return ts, fmt.Errorf("schedule is required: %s", scheduleForms)
	case map[string]any:
		for k, val := range s {
			str, ok := val.(string)
			if !ok {
				return ts, fmt.Errorf("schedule.%s must be a string: %s", k, scheduleForms)
			}
			switch k {
			case "cron":
				ts.Cron = str
			case "every":
				ts.Every = str
			case "at":
				ts.At = str
			case "in":
				ts.In = str
			default:
				return ts, fmt.Errorf("schedule has an unknown key %q: %s", k, scheduleForms)
			}
		}
		return ts, nil
	case string:
		kind, expr, ok := strings.Cut(strings.TrimSpace(s), " ")
		kind = strings.TrimSuffix(strings.ToLower(kind), ":")
		if i := strings.IndexByte(kind, ':'); i > 0 && !ok { // "every:30m"
			kind, expr, ok = kind[:i], kind[i+1:], true
		}
		expr = strings.TrimSpace(expr)
		if ok {
			switch kind {
			case "cron":
				return ipc.TaskSchedule{Cron: expr}, nil
			case "every":
				return ipc.TaskSchedule{Every: expr}, nil
			case "at":
				return ipc.TaskSchedule{At: expr}, nil
			case "in":
				return ipc.TaskSchedule{In: expr}, nil
			}
		}
		return ts, fmt.Errorf("schedule %q is not understood: %s", oneLine(s, 100), scheduleForms)
	}
	return ts, fmt.Errorf("schedule must be an object: %s", scheduleForms)
}

func (t *tools) listTasks(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	var a ipc.ListTasksArgs
	if err := readStrings(req, into{"group", &a.Group}); err != nil {
		return badArgs(registry.ListTasks, "%v", err), nil
	}
	var res ipc.ListTasksResult
	if err := t.call(ctx, ipc.TypeListTasks, a, &res); err != nil {
		return toolError(registry.ListTasks, err), nil
	}
	return mcpgo.NewToolResultText(formatTasks(res)), nil
}

// formatTasks writes one line per task. The prompt was dictated by a
// chat member: kept on its line and short.
func formatTasks(res ipc.ListTasksResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Timezone %s; now %s. At most %d active or paused tasks per group.\n", res.Timezone, res.Now, res.MaxTasks)
	if len(res.Tasks) == 0 {
		b.WriteString("No scheduled tasks.\n")
		return b.String()
	}
	for _, ti := range res.Tasks {
		fmt.Fprintf(&b, "- #%d [%s] in %s: %s, context %s%s", ti.ID, ti.State, ti.Group, oneLine(ti.Schedule, 120), ti.Context, batchNote(ti.Batch))
		if ti.NextRun != "" {
			fmt.Fprintf(&b, "; next run %s", ti.NextRun)
		}
		if ti.LastRun != "" {
			fmt.Fprintf(&b, "; last run %s", ti.LastRun)
			if ti.Pending {
				b.WriteString(" (not answered yet)")
			}
		}
		fmt.Fprintf(&b, "; %d run(s)", ti.Runs)
		if ti.Skipped > 0 {
			fmt.Fprintf(&b, ", %d skipped", ti.Skipped)
		}
		if ti.Failures > 0 {
			fmt.Fprintf(&b, ", %d failed deliveries", ti.Failures)
		}
		if ti.LastError != "" {
			fmt.Fprintf(&b, "; last problem: %s", oneLine(ti.LastError, 300))
		}
		if ti.CreatedBy != ti.Group {
			fmt.Fprintf(&b, "; set up by %s", ti.CreatedBy)
		}
		fmt.Fprintf(&b, " — prompt: %s\n", oneLine(ti.Prompt, 300))
	}
	if res.FinishedOmitted > 0 {
		fmt.Fprintf(&b, "%d older finished task(s) of the last week are not shown (only the newest finished ones are).\n", res.FinishedOmitted)
	}
	return b.String()
}

// changeTask is pause_task, resume_task and cancel_task: the tool's name
// is its request type.
func (t *tools) changeTask(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	tool := req.Params.Name
	id, ok := intArg(req.GetArguments()["id"])
	if !ok || id < 1 {
		return badArgs(tool, "id must be a task id (a positive integer) from list_tasks"), nil
	}
	var res ipc.TaskResult
	if err := t.call(ctx, tool, ipc.TaskIDArgs{ID: int64(id)}, &res); err != nil {
		return toolError(tool, err), nil
	}
	ti := res.Task
	text := fmt.Sprintf("Task %d in %s is now %s (%s)", ti.ID, ti.Group, ti.State, ti.Schedule)
	if ti.NextRun != "" && ti.State == "active" {
		text += "; next run " + ti.NextRun
	}
	return mcpgo.NewToolResultText(text + "."), nil
}

func batchNote(batch bool) string {
	if batch {
		return ", batch (answered within hours, at the batch price)"
	}
	return ""
}
