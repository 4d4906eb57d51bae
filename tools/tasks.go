package tools

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/ipc"
)

// Scheduled tasks: the host's scheduler answers them, and decides there
// which tasks a call may see and change, by the group the request comes
// from. The group argument is offered only by the main group's server
// (the host refuses it from any other). All are Repeatable: pause, resume
// and cancel set a state, and schedule_task is keyed by the request id,
// so a replay returns the task the first attempt made.

// TasksHost is what the host's scheduler answers (scheduler.Scheduler).
type TasksHost interface {
	ServeSchedule(ctx context.Context, caller *groups.Group, reqID string, a ipc.ScheduleTaskArgs) (ipc.TaskResult, *ipc.Error)
	ServeList(ctx context.Context, caller *groups.Group, a ipc.ListTasksArgs) (ipc.ListTasksResult, *ipc.Error)
	ServeChange(ctx context.Context, caller *groups.Group, typ string, id int64) (ipc.TaskResult, *ipc.Error)
}

// Tool names of scheduled tasks.
const (
	ScheduleTask = ipc.TypeScheduleTask
	ListTasks    = ipc.TypeListTasks
	PauseTask    = ipc.TypePauseTask
	ResumeTask   = ipc.TypeResumeTask
	CancelTask   = ipc.TypeCancelTask
)

// MaxTaskPrompt matches the scheduler's cap, so a model hears it before
// the round trip.
const MaxTaskPrompt = 4000

var scheduleTask = Spec{
	Name: ScheduleTask, Service: Tasks, Repeatable: true,
	Host: serve(func(s TasksHost, ctx context.Context, g *groups.Group, req *ipc.Request, a ipc.ScheduleTaskArgs) (ipc.TaskResult, *ipc.Error) {
		return s.ServeSchedule(ctx, g, req.ID, a)
	}),
	Def: func(o Offer) mcpgo.Tool {
		str := func(desc string) map[string]any {
			return map[string]any{"type": "string", "description": desc, "minLength": 1, "maxLength": 200}
		}
		opts := []mcpgo.ToolOption{
			mcpgo.WithDescription("Schedule a task: at the time given, the prompt is handed to you as a message in this " +
				"group and your reply is posted to the group's chat (you may fetch media, send files or schedule more then). " +
				"Use it when someone asks for something later or regularly: \"every Monday at 9 summarise last week's " +
				"photos\", \"remind us on the 1st to pay rent\", \"in two hours check whether anyone answered\". Write the " +
				"prompt as the instruction to carry out then, with every detail needed (who asked, what for). schedule is an " +
				"object with exactly one key: {\"cron\": \"0 9 * * 1\"} (minute hour day-of-month month day-of-week, in the " +
				"timezone list_tasks shows), {\"every\": \"30m\"} (an interval, at least 1m), {\"at\": " +
				"\"2026-12-01T09:00:00+01:00\"} (once, RFC 3339) or {\"in\": \"2h\"} (once, after a delay). Answers the " +
				"task id and its next run."),
			annotate(hints{}),
			requiredText("prompt", "What to do when the task runs, e.g. \"Remind everyone to pay the rent to Anna.\"", MaxTaskPrompt),
			mcpgo.WithObject("schedule",
				mcpgo.Required(),
				mcpgo.Description("When to run: exactly one of cron, every, at, in."),
				mcpgo.Properties(map[string]any{
					"cron":  str("Cron expression, five fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1\" (Mondays 9:00), \"0 10 1 * *\" (the 1st at 10:00)."),
					"every": str("Interval between runs, e.g. \"30m\", \"6h\", \"24h\"; at least 1m."),
					"at":    str("One run at this time, RFC 3339, e.g. \"2026-12-01T09:00:00+01:00\"."),
					"in":    str("One run after this delay from now, e.g. \"10m\", \"2h\", \"48h\"."),
				}),
				mcpgo.MinProperties(1), mcpgo.MaxProperties(1), mcpgo.AdditionalProperties(false)),
			mcpgo.WithString("context",
				mcpgo.Description("\"group\" (default): the run sees the group's memory and recent messages. \"isolated\": "+
					"it sees the prompt alone."),
				mcpgo.Enum("group", "isolated")),
			mcpgo.WithBoolean("batch",
				mcpgo.Description("true: run through the provider's batch API at about half the price; the answer comes "+
					"within hours, not at the scheduled minute. Only for work nobody waits for (a weekly digest, a report); "+
					"never for reminders.")),
		}
		if o.Main {
			opts = append(opts, optionalText("group", "The folder of the group the task runs in (its answer goes to that group's chat); "+
				"default this group. Only this group (the main one) may name another.", 64))
		}
		return mcpgo.NewTool(ScheduleTask, opts...)
	},
}

var listTasks = Spec{
	Name: ListTasks, Service: Tasks, Repeatable: true,
	Host: bind(TasksHost.ServeList),
	Def: func(o Offer) mcpgo.Tool {
		opts := []mcpgo.ToolOption{
			mcpgo.WithDescription("List this group's scheduled tasks: id, state (active, paused, done, cancelled), schedule, " +
				"next and last run, failures and skipped runs with the reason, and the prompt; also the timezone schedules " +
				"use and the current time there."),
			annotate(hints{readOnly: true}),
		}
		if o.Main {
			opts = append(opts, optionalText("group", "Another group's folder, or \"*\" for every group; default this group.", 64))
		}
		return mcpgo.NewTool(ListTasks, opts...)
	},
}

var (
	pauseTask = taskChange(PauseTask, "Pause a scheduled task of this group: it does not run until resume_task. "+
		"Runs that fall in the pause are not made up for.")
	resumeTask = taskChange(ResumeTask, "Resume a paused task: it runs again from its next scheduled time.")
	cancelTask = taskChange(CancelTask, "Cancel a scheduled task for good (use it when someone asks to stop a reminder "+
		"or recurring job).")
)

// taskChange is pause_task, resume_task or cancel_task: one task id.
func taskChange(name, desc string) Spec {
	return Spec{
		Name: name, Service: Tasks, Repeatable: true,
		Host: serve(func(s TasksHost, ctx context.Context, g *groups.Group, req *ipc.Request, a ipc.TaskIDArgs) (ipc.TaskResult, *ipc.Error) {
			return s.ServeChange(ctx, g, req.Type, a.ID)
		}),
		Def: func(Offer) mcpgo.Tool {
			return mcpgo.NewTool(name,
				mcpgo.WithDescription(desc),
				annotate(hints{destructive: name == CancelTask, idempotent: true}),
				mcpgo.WithInteger("id", mcpgo.Required(), mcpgo.Description("The task id, from schedule_task or list_tasks."), mcpgo.Min(1)),
			)
		},
	}
}
