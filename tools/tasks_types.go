package tools

// Scheduled tasks: the MCP tools schedule_task, list_tasks, pause_task,
// resume_task and cancel_task reach the host's scheduler with these
// requests. As everywhere, the asking group is the folder the request was
// found in; Group names the group a task is for, which the host allows
// only to the main group.

// TaskSchedule is exactly one of its fields: a cron expression ("0 9 * *
// 1"), an interval ("30m"), a time (RFC 3339) or a delay from now ("2h").
type TaskSchedule struct {
	Cron  string `json:"cron,omitempty"`
	Every string `json:"every,omitempty"`
	At    string `json:"at,omitempty"`
	In    string `json:"in,omitempty"`
}

// ScheduleTaskArgs asks for a new task.
type ScheduleTaskArgs struct {
	Prompt   string       `json:"prompt"`
	Schedule TaskSchedule `json:"schedule"`
	// Group is the folder the task runs in; empty is the asking group.
	Group string `json:"group,omitempty"`
	// Context is "group" (the default) or "isolated".
	Context string `json:"context,omitempty"`
	// Batch asks for the provider's batch API: half the price, an answer
	// within hours.
	Batch bool `json:"batch,omitempty"`
}

// ListTasksArgs narrows list_tasks: Group (main group only) lists
// another group's tasks, "*" every group's.
type ListTasksArgs struct {
	Group string `json:"group,omitempty"`
}

// TaskIDArgs names a task for pause_task, resume_task and cancel_task.
type TaskIDArgs struct {
	ID int64 `json:"id"`
}

// TaskInfo is one task as the tools show it. Times are formatted in the
// configured timezone with their offset; empty when unset.
type TaskInfo struct {
	ID        int64  `json:"id"`
	Group     string `json:"group"`
	Prompt    string `json:"prompt"`
	Schedule  string `json:"schedule"` // e.g. cron "0 9 * * 1" (Europe/Berlin)
	Context   string `json:"context"`
	Batch     bool   `json:"batch,omitempty"`
	State     string `json:"state"` // active | paused | done | cancelled
	NextRun   string `json:"next_run,omitempty"`
	LastRun   string `json:"last_run,omitempty"`
	LastError string `json:"last_error,omitempty"`
	Failures  int    `json:"failures,omitempty"`
	Runs      int    `json:"runs"`
	Skipped   int    `json:"skipped,omitempty"`
	// Pending: the last run was delivered but not answered yet.
	Pending   bool   `json:"pending,omitempty"`
	CreatedBy string `json:"created_by"`
}

// TaskResult answers schedule_task, pause_task, resume_task and
// cancel_task with the task as it is now.
type TaskResult struct {
	Task     TaskInfo `json:"task"`
	Now      string   `json:"now"`
	Timezone string   `json:"timezone"`
}

// ListTasksResult answers list_tasks.
type ListTasksResult struct {
	Tasks    []TaskInfo `json:"tasks"`
	Now      string     `json:"now"`
	Timezone string     `json:"timezone"`
	// MaxTasks is the cap of active and paused tasks per group.
	MaxTasks int `json:"max_tasks"`
	// FinishedOmitted counts the finished tasks of the last week left out
	// of Tasks, which holds only the newest of them.
	FinishedOmitted int `json:"finished_omitted,omitempty"`
}
