package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/botd-dev/botd/groups"
)

// Scheduled tasks: the host's scheduler answers them, and decides there
// which tasks a call may see and change, by the group the request comes
// from. The group argument is offered only by the main group's server
// (the host refuses it from any other). All are Repeatable: pause, resume
// and cancel set a state, and schedule_task is keyed by the request id,
// so a replay returns the task the first attempt made.

// TasksHost is what the host's scheduler answers (scheduler.Scheduler).
type TasksHost interface {
	ServeSchedule(ctx context.Context, caller *groups.Group, reqID string, a ScheduleTaskArgs) (TaskResult, *Error)
	ServeList(ctx context.Context, caller *groups.Group, a ListTasksArgs) (ListTasksResult, *Error)
	ServeChange(ctx context.Context, caller *groups.Group, typ string, id int64) (TaskResult, *Error)
}

// Tool names of scheduled tasks.
const (
	ScheduleTask = "schedule_task"
	ListTasks    = "list_tasks"
	PauseTask    = "pause_task"
	ResumeTask   = "resume_task"
	CancelTask   = "cancel_task"
)

// MaxTaskPrompt matches the scheduler's cap, so a model hears it before
// the round trip.
const MaxTaskPrompt = 4000

var scheduleTask = Spec{
	Name: ScheduleTask, Service: Tasks, Repeatable: true, MCP: scheduleTaskMCP, Widens: widenSchedule, Needs: NeedsAdmin,
	Host: serve(func(s TasksHost, ctx context.Context, g *groups.Group, req *Request, a ScheduleTaskArgs) (TaskResult, *Error) {
		return s.ServeSchedule(ctx, g, req.ID, a)
	}),
	Def: func(o Offer) Def {
		str := func(desc string) map[string]any {
			return map[string]any{"type": "string", "description": desc, "minLength": 1, "maxLength": 200}
		}
		opts := []defOption{
			withDescription("Schedule a prompt to run later or regularly, such as a reminder or a weekly summary. " +
				"At the time given, the prompt is handed to you as a message in this " +
				"group and your reply is posted to the group's chat (you may fetch media, send files or schedule more then). " +
				"Use it when someone asks for something later or regularly: \"every Monday at 9 summarise last week's " +
				"photos\", \"remind us on the 1st to pay rent\", \"in two hours check whether anyone answered\". Write the " +
				"prompt as the instruction to carry out then, with every detail needed (who asked, what for). schedule is an " +
				"object with exactly one key: {\"cron\": \"0 9 * * 1\"} (minute hour day-of-month month day-of-week, in the " +
				"timezone list_tasks shows), {\"every\": \"30m\"} (an interval, at least 1m), {\"at\": " +
				"\"2026-12-01T09:00:00+01:00\"} (once, RFC 3339) or {\"in\": \"2h\"} (once, after a delay). Answers the " +
				"task id and its next run."),
			annotate(Hints{}),
			requiredText("prompt", "What to do when the task runs, e.g. \"Remind everyone to pay the rent to Anna.\"", MaxTaskPrompt),
			withObject("schedule",
				required(),
				description("When to run: exactly one of cron, every, at, in."),
				properties(map[string]any{
					"cron":  str("Cron expression, five fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1\" (Mondays 9:00), \"0 10 1 * *\" (the 1st at 10:00)."),
					"every": str("Interval between runs, e.g. \"30m\", \"6h\", \"24h\"; at least 1m."),
					"at":    str("One run at this time, RFC 3339, e.g. \"2026-12-01T09:00:00+01:00\"."),
					"in":    str("One run after this delay from now, e.g. \"10m\", \"2h\", \"48h\"."),
				}),
				minProperties(1), maxProperties(1), additionalProperties(false)),
			withString("context",
				description("\"group\" (default): the run sees the group's memory and recent messages. \"isolated\": "+
					"it sees the prompt alone."),
				enum("group", "isolated")),
			withBoolean("batch",
				description("true: run through the provider's batch API at about half the price; the answer comes "+
					"within hours, not at the scheduled minute. Only for work nobody waits for (a weekly digest, a report); "+
					"never for reminders.")),
		}
		if o.Main {
			opts = append(opts, optionalText("group", "The folder of the group the task runs in (its answer goes to that group's chat); "+
				"default this group. Only this group (the main one) may name another.", 64))
		}
		return newDef(ScheduleTask, opts...)
	},
}

var listTasks = Spec{
	Name: ListTasks, Service: Tasks, Repeatable: true, Standby: true, MCP: listTasksMCP,
	Host: bind(TasksHost.ServeList),
	Def: func(o Offer) Def {
		opts := []defOption{
			withDescription("List this group's scheduled tasks with their ids, states, schedules and next runs. " +
				"Each comes with its state (active, paused, done, cancelled), schedule, next and last run, failures and " +
				"skipped runs with the reason, and the prompt; also the timezone schedules use and the current time there."),
			annotate(Hints{ReadOnly: true}),
		}
		if o.Main {
			opts = append(opts, optionalText("group", "Another group's folder, or \"*\" for every group; default this group.", 64))
		}
		return newDef(ListTasks, opts...)
	},
}

var (
	pauseTask = taskChange(PauseTask, "Pause a scheduled task of this group: it does not run until resume_task. "+
		"Runs that fall in the pause are not made up for.")
	resumeTask = taskChange(ResumeTask, "Resume a paused task: it runs again from its next scheduled time.")
	cancelTask = taskChange(CancelTask, "Cancel a scheduled task for good, when someone asks to stop a reminder "+
		"or recurring job.")
)

// taskChange is pause_task, resume_task or cancel_task: one task id.
func taskChange(name, desc string) Spec {
	return Spec{
		Name: name, Service: Tasks, Repeatable: true, MCP: changeTaskMCP(name), Widens: widenTaskChange, Needs: NeedsAdmin,
		Host: serve(func(s TasksHost, ctx context.Context, g *groups.Group, req *Request, a TaskIDArgs) (TaskResult, *Error) {
			return s.ServeChange(ctx, g, req.Type, a.ID)
		}),
		Def: func(Offer) Def {
			return newDef(name,
				withDescription(desc),
				annotate(Hints{Destructive: name == CancelTask, Idempotent: true}),
				withInteger("id", required(), description("The task id, from schedule_task or list_tasks."), minimum(1)),
			)
		},
	}
}

func scheduleTaskMCP(e Env, ctx context.Context, in Args) *Result {
	var a ScheduleTaskArgs
	var err error
	if a.Prompt, err = requiredArg(in, "prompt", "prompt is required: what to do when the task runs"); err == nil {
		a.Schedule, err = scheduleArg(in["schedule"])
	}
	if err == nil {
		err = readStrings(in, into{"context", &a.Context}, into{"group", &a.Group})
	}
	if err == nil {
		a.Batch, err = boolArg(in, "batch", false)
	}
	if err != nil {
		return BadArgs(ScheduleTask, "%v", err)
	}
	var res TaskResult
	if err := e.Call(ctx, ScheduleTask, a, &res); err != nil {
		return ToolError(ScheduleTask, err)
	}
	return TextResult(fmt.Sprintf("Task %d scheduled in %s: %s, context %s%s. Next run: %s (now: %s).",
		res.Task.ID, res.Task.Group, res.Task.Schedule, res.Task.Context, batchNote(res.Task.Batch), res.Task.NextRun, res.Now))
}

const scheduleForms = `give an object with one key: {"cron": "0 9 * * 1"}, {"every": "30m"}, {"at": "2026-12-01T09:00:00+01:00"} or {"in": "2h"}`

// scheduleArg reads the schedule object. A model that writes a string
// ("every 30m", "cron: 0 9 * * 1") is understood too; the host checks
// the values either way.
func scheduleArg(v any) (TaskSchedule, error) {
	var ts TaskSchedule
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
				return TaskSchedule{Cron: expr}, nil
			case "every":
				return TaskSchedule{Every: expr}, nil
			case "at":
				return TaskSchedule{At: expr}, nil
			case "in":
				return TaskSchedule{In: expr}, nil
			}
		}
		return ts, fmt.Errorf("schedule %q is not understood: %s", OneLine(s, 100), scheduleForms)
	}
	return ts, fmt.Errorf("schedule must be an object: %s", scheduleForms)
}

func listTasksMCP(e Env, ctx context.Context, in Args) *Result {
	var a ListTasksArgs
	if err := readStrings(in, into{"group", &a.Group}); err != nil {
		return BadArgs(ListTasks, "%v", err)
	}
	var res ListTasksResult
	if err := e.Call(ctx, ListTasks, a, &res); err != nil {
		return ToolError(ListTasks, err)
	}
	return TextResult(formatTasks(res))
}

// formatTasks writes one line per task. The prompt was dictated by a
// chat member: kept on its line and short.
func formatTasks(res ListTasksResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Timezone %s; now %s. At most %d active or paused tasks per group.\n", res.Timezone, res.Now, res.MaxTasks)
	if len(res.Tasks) == 0 {
		b.WriteString("No scheduled tasks.\n")
		return b.String()
	}
	for _, ti := range res.Tasks {
		fmt.Fprintf(&b, "- #%d [%s] in %s: %s, context %s%s", ti.ID, ti.State, ti.Group, OneLine(ti.Schedule, 120), ti.Context, batchNote(ti.Batch))
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
			fmt.Fprintf(&b, "; last problem: %s", OneLine(ti.LastError, 300))
		}
		if ti.CreatedBy != ti.Group {
			fmt.Fprintf(&b, "; set up by %s", ti.CreatedBy)
		}
		fmt.Fprintf(&b, " — prompt: %s\n", OneLine(ti.Prompt, 300))
	}
	if res.FinishedOmitted > 0 {
		fmt.Fprintf(&b, "%d older finished task(s) of the last week are not shown (only the newest finished ones are).\n", res.FinishedOmitted)
	}
	return b.String()
}

// changeTaskMCP is the model half of pause_task, resume_task and
// cancel_task: the tool's name is its request type.
func changeTaskMCP(tool string) ModelHandler {
	return func(e Env, ctx context.Context, in Args) *Result { return changeTask(e, ctx, tool, in) }
}

func changeTask(e Env, ctx context.Context, tool string, in Args) *Result {
	id, ok := IntArg(in["id"])
	if !ok || id < 1 {
		return BadArgs(tool, "id must be a task id (a positive integer) from list_tasks")
	}
	var res TaskResult
	if err := e.Call(ctx, tool, TaskIDArgs{ID: int64(id)}, &res); err != nil {
		return ToolError(tool, err)
	}
	ti := res.Task
	text := fmt.Sprintf("Task %d in %s is now %s (%s)", ti.ID, ti.Group, ti.State, ti.Schedule)
	if ti.NextRun != "" && ti.State == "active" {
		text += "; next run " + ti.NextRun
	}
	return TextResult(text + ".")
}

func batchNote(batch bool) string {
	if batch {
		return ", batch (answered within hours, at the batch price)"
	}
	return ""
}
