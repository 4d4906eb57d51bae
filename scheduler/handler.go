package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/tools"
)

var (
	_ tools.Handler   = (*Scheduler)(nil)
	_ tools.TasksHost = (*Scheduler)(nil)
)

// Handle answers the task requests of group (the folder the request came
// from, or the group of an in-process caller): an tools.Handler for the
// task types. Authorisation lives here, in one place:
//
//   - a group schedules, lists and changes the tasks that run in it;
//   - the main group may name any registered group, and change any task;
//   - another group naming a group not its own is refused (forbidden),
//     and a task id of another group answers like one that does not
//     exist, so ids are no oracle.
//
// Which group a task runs in is this decision alone: a prompt that says
// "in group X do ..." is text the task's run reads, in its own group.
// Which method answers which request is the tool registry's (tools.Serve).
func (s *Scheduler) Handle(ctx context.Context, group string, req *tools.Request) (result any, herr *tools.Error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("scheduler: handler panicked", "group", group, "type", req.Type, "panic", p)
			result, herr = nil, tools.Errorf(tools.CodeInternal, "the host failed handling %s", req.Type)
		}
	}()
	caller, ok := s.opts.Groups.ByFolder(group)
	if !ok {
		return nil, tools.Errorf(tools.CodeForbidden, "%q is not a registered group", group)
	}
	return tools.Serve(ctx, tools.Tasks, s, caller, req)
}

// target is the group a request is for: the caller's own, or for the
// main group the one it names.
func (s *Scheduler) target(caller *groups.Group, named string) (string, *tools.Error) {
	named = strings.TrimSpace(named)
	if named == "" || named == caller.Folder {
		return caller.Folder, nil
	}
	if !caller.Main {
		return "", tools.Errorf(tools.CodeForbidden, "this group (%s) can only schedule and see its own tasks; leave group out", caller.Folder)
	}
	if _, ok := s.opts.Groups.ByFolder(named); !ok {
		return "", tools.Errorf(tools.CodeNotFound, "no registered group %q; the groups are: %s", named, strings.Join(s.folders(), ", "))
	}
	return named, nil
}

func (s *Scheduler) folders() []string {
	var out []string
	for _, g := range s.opts.Groups.All() {
		out = append(out, g.Folder)
	}
	slices.Sort(out)
	return out
}

// ServeSchedule is schedule_task.
func (s *Scheduler) ServeSchedule(ctx context.Context, caller *groups.Group, reqID string, a tools.ScheduleTaskArgs) (tools.TaskResult, *tools.Error) {
	folder, herr := s.target(caller, a.Group)
	if herr != nil {
		return tools.TaskResult{}, herr
	}
	kind, expr, err := pickSchedule(a.Schedule)
	if err != nil {
		return tools.TaskResult{}, tools.Errorf(tools.CodeBadRequest, "%v", err)
	}
	t, err := s.Schedule(ctx, NewTask{Folder: folder, CreatedBy: caller.Folder, Prompt: a.Prompt, Kind: kind, Expr: expr,
		Context: a.Context, Batch: a.Batch, RequestID: reqID})
	if err != nil {
		return tools.TaskResult{}, taskError(err)
	}
	return s.result(ctx, t), nil
}

// pickSchedule takes the one schedule field that is set.
func pickSchedule(ts tools.TaskSchedule) (kind, expr string, err error) {
	var set []string
	for _, f := range []struct{ kind, v string }{{KindCron, ts.Cron}, {KindEvery, ts.Every}, {KindAt, ts.At}, {KindIn, ts.In}} {
		if strings.TrimSpace(f.v) != "" {
			set = append(set, f.kind)
			kind, expr = f.kind, f.v
		}
	}
	switch len(set) {
	case 0:
		return "", "", errors.New(`schedule must set one of cron, every, at or in, e.g. {"cron": "0 9 * * 1"}, {"every": "30m"}, ` +
			`{"at": "2026-12-01T09:00:00+01:00"} or {"in": "2h"}`)
	case 1:
		return kind, expr, nil
	}
	return "", "", fmt.Errorf("schedule sets %s: give exactly one", strings.Join(set, " and "))
}

// ServeList is list_tasks.
func (s *Scheduler) ServeList(ctx context.Context, caller *groups.Group, a tools.ListTasksArgs) (tools.ListTasksResult, *tools.Error) {
	folder := ""
	if a.Group != "*" || !caller.Main {
		var herr *tools.Error
		if folder, herr = s.target(caller, a.Group); herr != nil {
			return tools.ListTasksResult{}, herr
		}
	}
	tasks, omitted, err := s.List(ctx, folder)
	if err != nil {
		return tools.ListTasksResult{}, taskError(err)
	}
	res := tools.ListTasksResult{Tasks: []tools.TaskInfo{}, Now: FormatTime(s.now(), s.opts.Location), Timezone: zoneName(s.opts.Location),
		MaxTasks: s.opts.MaxTasksPerGroup, FinishedOmitted: omitted}
	for _, t := range tasks {
		res.Tasks = append(res.Tasks, s.info(ctx, t))
	}
	return res, nil
}

// ServeChange is pause_task, resume_task or cancel_task (typ).
func (s *Scheduler) ServeChange(ctx context.Context, caller *groups.Group, typ string, id int64) (tools.TaskResult, *tools.Error) {
	if id <= 0 {
		return tools.TaskResult{}, tools.Errorf(tools.CodeBadRequest, "id must be a task id from list_tasks")
	}
	t, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && t.Folder != caller.Folder && !caller.Main) {
		// Another group's task is not this group's to know of: the
		// same answer as for an id that never was.
		return tools.TaskResult{}, taskError(fmt.Errorf("task %d: %w", id, ErrNotFound))
	}
	if err != nil {
		return tools.TaskResult{}, taskError(err)
	}
	switch typ {
	case tools.PauseTask:
		t, err = s.Pause(ctx, id)
	case tools.ResumeTask:
		t, err = s.Resume(ctx, id)
	default:
		t, err = s.Cancel(ctx, id)
	}
	if err != nil {
		return tools.TaskResult{}, taskError(err)
	}
	return s.result(ctx, t), nil
}

func (s *Scheduler) result(ctx context.Context, t Task) tools.TaskResult {
	return tools.TaskResult{Task: s.info(ctx, t), Now: FormatTime(s.now(), s.opts.Location), Timezone: zoneName(s.opts.Location)}
}

// info is a task as the tools show it.
func (s *Scheduler) info(ctx context.Context, t Task) tools.TaskInfo {
	loc := s.opts.Location
	in := tools.TaskInfo{ID: t.ID, Group: t.Folder, Prompt: t.Prompt, Context: t.Context, Batch: t.Batch, State: t.State, LastError: t.LastError,
		Failures: t.Failures, Runs: t.Runs, Skipped: t.Skipped, CreatedBy: t.CreatedBy}
	if sched, err := Load(t.Kind, t.Spec, loc); err == nil {
		in.Schedule = sched.Describe()
	} else {
		in.Schedule = t.Kind + " " + t.Spec
	}
	if t.State == StateActive || t.State == StatePaused {
		in.NextRun = FormatTime(t.NextRun, loc)
	}
	if !t.LastRun.IsZero() {
		in.LastRun = FormatTime(t.LastRun, loc)
		if r, ok, err := s.lastRun(ctx, t.ID); err == nil && ok {
			if done, err := s.handled(ctx, t.Folder, r.Chat, r.MessageID); err == nil {
				in.Pending = !done
			}
		}
	}
	return in
}

func taskError(err error) *tools.Error {
	switch {
	case errors.Is(err, ErrNotFound):
		return tools.Errorf(tools.CodeNotFound, "%v in this group; list_tasks shows the ids", err)
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrState):
		return tools.Errorf(tools.CodeBadRequest, "%v", err)
	case errors.Is(err, ErrLimit):
		return tools.Errorf(tools.CodeForbidden, "%v", err)
	}
	return tools.Errorf(tools.CodeInternal, "%v", err)
}
