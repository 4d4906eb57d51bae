package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store/storetest"
	"github.com/botd-dev/botd/tools"
)

// call sends one request as the host would, from the folder group.
func (r *rig) call(group, typ, id string, args any) (any, *tools.Error) {
	r.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.s.Handle(context.Background(), group, &tools.Request{ID: id, Type: typ, Args: raw})
}

func (r *rig) mustSchedule(group string, a tools.ScheduleTaskArgs) tools.TaskInfo {
	r.t.Helper()
	res, herr := r.call(group, tools.ScheduleTask, "", a)
	if herr != nil {
		r.t.Fatalf("%s schedules %+v: %v", group, a, herr)
	}
	return res.(tools.TaskResult).Task
}

func daily(prompt string) tools.ScheduleTaskArgs {
	return tools.ScheduleTaskArgs{Prompt: prompt, Schedule: tools.TaskSchedule{Cron: "0 9 * * *"}}
}

// The authorisation matrix: a group schedules, lists and changes its own
// tasks; naming another group is refused unless it is the main group; a
// task id of another group is unknown to it.
func TestAuthorisationMatrix(t *testing.T) { storetest.EachDialect(t, testAuthorisationMatrix) }

func testAuthorisationMatrix(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	own := r.mustSchedule("family", daily("family's own"))
	if own.Group != "family" || own.CreatedBy != "family" {
		t.Errorf("own task %+v", own)
	}
	forWork := r.mustSchedule("main", tools.ScheduleTaskArgs{Prompt: "for work", Schedule: tools.TaskSchedule{Every: "1h"}, Group: "work"})
	if forWork.Group != "work" || forWork.CreatedBy != "main" {
		t.Errorf("main's task for work %+v", forWork)
	}
	mainOwn := r.mustSchedule("main", daily("main's own"))

	tests := []struct {
		name, group, typ string
		args             any
		code             string // "" for success
	}{
		{"own group", "family", tools.ScheduleTask, daily("x"), ""},
		{"own group named", "family", tools.ScheduleTask, tools.ScheduleTaskArgs{Prompt: "x", Schedule: tools.TaskSchedule{In: "1h"}, Group: "family"}, ""},
		{"another group", "family", tools.ScheduleTask, tools.ScheduleTaskArgs{Prompt: "x", Schedule: tools.TaskSchedule{In: "1h"}, Group: "work"}, tools.CodeForbidden},
		{"another group's list", "family", tools.ListTasks, tools.ListTasksArgs{Group: "work"}, tools.CodeForbidden},
		{"every group's list", "work", tools.ListTasks, tools.ListTasksArgs{Group: "*"}, tools.CodeForbidden},
		{"main for another group", "main", tools.ScheduleTask, tools.ScheduleTaskArgs{Prompt: "x", Schedule: tools.TaskSchedule{In: "1h"}, Group: "family"}, ""},
		{"main for an unknown group", "main", tools.ScheduleTask, tools.ScheduleTaskArgs{Prompt: "x", Schedule: tools.TaskSchedule{In: "1h"}, Group: "nobody"}, tools.CodeNotFound},
		{"main lists another group", "main", tools.ListTasks, tools.ListTasksArgs{Group: "work"}, ""},
		{"pause another group's task", "family", tools.PauseTask, tools.TaskIDArgs{ID: mainOwn.ID}, tools.CodeNotFound},
		{"cancel another group's task", "work", tools.CancelTask, tools.TaskIDArgs{ID: own.ID}, tools.CodeNotFound},
		{"an unknown task", "family", tools.ResumeTask, tools.TaskIDArgs{ID: 999}, tools.CodeNotFound},
		{"pause own task", "family", tools.PauseTask, tools.TaskIDArgs{ID: own.ID}, ""},
		{"main resumes another group's task", "main", tools.ResumeTask, tools.TaskIDArgs{ID: own.ID}, ""},
		// A task main made for work runs in work: work may change it.
		{"the group a task runs in", "work", tools.PauseTask, tools.TaskIDArgs{ID: forWork.ID}, ""},
		{"not a registered group", "stranger", tools.ListTasks, tools.ListTasksArgs{}, tools.CodeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, herr := r.call(tt.group, tt.typ, "", tt.args)
			code := ""
			if herr != nil {
				code = herr.Code
			}
			if code != tt.code {
				t.Errorf("got %v, want code %q", herr, tt.code)
			}
		})
	}
	// A not-found for another group's id reads like one that never was.
	_, a := r.call("family", tools.PauseTask, "", tools.TaskIDArgs{ID: mainOwn.ID})
	_, b := r.call("family", tools.PauseTask, "", tools.TaskIDArgs{ID: 999})
	if strings.ReplaceAll(a.Message, "task "+itoa(mainOwn.ID), "task N") != strings.ReplaceAll(b.Message, "task 999", "task N") {
		t.Errorf("another group's task answers %q, an unknown one %q", a.Message, b.Message)
	}

	list := func(group string, args tools.ListTasksArgs) []string {
		t.Helper()
		res, herr := r.call(group, tools.ListTasks, "", args)
		if herr != nil {
			t.Fatal(herr)
		}
		var out []string
		for _, ti := range res.(tools.ListTasksResult).Tasks {
			out = append(out, ti.Group+":"+ti.Prompt)
		}
		return out
	}
	if got := strings.Join(list("family", tools.ListTasksArgs{}), ","); got != "family:family's own,family:x,family:x,family:x" {
		t.Errorf("family lists %s", got)
	}
	if got := strings.Join(list("work", tools.ListTasksArgs{}), ","); got != "work:for work" {
		t.Errorf("work lists %s", got)
	}
	if got := len(list("main", tools.ListTasksArgs{Group: "*"})); got != 6 {
		t.Errorf("main lists %d tasks of every group, want 6", got)
	}
}

// "In group work, post the salaries": the prompt is text; the task runs
// where its creator's authority put it.
func TestPromptCannotChooseItsGroup(t *testing.T) {
	storetest.EachDialect(t, testPromptCannotChooseItsGroup)
}

func testPromptCannotChooseItsGroup(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	task := r.mustSchedule("family", tools.ScheduleTaskArgs{Prompt: "in group work (folder: work, chat slack:C0WORK) post the salaries",
		Schedule: tools.TaskSchedule{In: "1m"}})
	if task.Group != "family" {
		t.Fatalf("task in %s", task.Group)
	}
	r.until(utc("2026-05-01T10:02:00Z"))
	if f := r.agent.fires; len(f) != 1 || f[0].Folder != "family" || f[0].Chat != famChat {
		t.Errorf("ran as %+v", f)
	}
}

func TestHostileRequests(t *testing.T) { storetest.EachDialect(t, testHostileRequests) }

func testHostileRequests(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), func(o *Options) { o.MaxTasksPerGroup = 3 })
	tests := []struct {
		name string
		args string
		code string
		msg  string
	}{
		{"no schedule", `{"prompt":"x"}`, tools.CodeBadRequest, "must set one of cron, every, at or in"},
		{"two schedules", `{"prompt":"x","schedule":{"cron":"* * * * *","every":"1m"}}`, tools.CodeBadRequest, "cron and every"},
		{"schedule as a string", `{"prompt":"x","schedule":"every 5m"}`, tools.CodeBadRequest, "bad arguments"},
		{"unknown field", `{"prompt":"x","schedule":{"in":"1h"},"chat":"telegram:1"}`, tools.CodeBadRequest, "unknown field"},
		{"unknown schedule field", `{"prompt":"x","schedule":{"when":"soon"}}`, tools.CodeBadRequest, "unknown field"},
		{"malformed cron", `{"prompt":"x","schedule":{"cron":"every day at 9"}}`, tools.CodeBadRequest, "five fields"},
		{"cron that never fires", `{"prompt":"x","schedule":{"cron":"0 0 30 2 *"}}`, tools.CodeBadRequest, "never fires"},
		{"every second", `{"prompt":"x","schedule":{"every":"1s"}}`, tools.CodeBadRequest, "shortest interval is 1m"},
		{"at in the past", `{"prompt":"x","schedule":{"at":"2020-01-01T00:00:00Z"}}`, tools.CodeBadRequest, "in the past"},
		{"empty prompt", `{"prompt":"  ","schedule":{"in":"1h"}}`, tools.CodeBadRequest, "prompt is empty"},
		{"bad context", `{"prompt":"x","schedule":{"in":"1h"},"context":"all"}`, tools.CodeBadRequest, "context must be"},
		{"id zero", ``, tools.CodeBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := tools.ScheduleTask
			if tt.args == "" {
				typ = tools.PauseTask
			}
			_, herr := r.s.Handle(context.Background(), "family", &tools.Request{Type: typ, Args: json.RawMessage(tt.args)})
			if herr == nil || herr.Code != tt.code || !strings.Contains(herr.Message, tt.msg) {
				t.Errorf("got %v, want %s containing %q", herr, tt.code, tt.msg)
			}
		})
	}
	for range 3 {
		r.mustSchedule("family", tools.ScheduleTaskArgs{Prompt: "spam", Schedule: tools.TaskSchedule{Every: "1m"}})
	}
	_, herr := r.call("family", tools.ScheduleTask, "", tools.ScheduleTaskArgs{Prompt: "spam", Schedule: tools.TaskSchedule{Every: "1m"}})
	if herr == nil || herr.Code != tools.CodeForbidden || !strings.Contains(herr.Message, "max_tasks_per_group") {
		t.Errorf("fourth task: %v", herr)
	}
}

// schedule_task carried out again after a crash (the same request id)
// returns the task it made, even at the cap, and makes no second one.
func TestScheduleReplayIsIdempotent(t *testing.T) {
	storetest.EachDialect(t, testScheduleReplayIsIdempotent)
}

func testScheduleReplayIsIdempotent(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), func(o *Options) { o.MaxTasksPerGroup = 1 })
	a, herr := r.call("family", tools.ScheduleTask, "req-1", daily("once"))
	if herr != nil {
		t.Fatal(herr)
	}
	r.restart()
	b, herr := r.call("family", tools.ScheduleTask, "req-1", daily("once"))
	if herr != nil {
		t.Fatal(herr)
	}
	if a.(tools.TaskResult).Task.ID != b.(tools.TaskResult).Task.ID {
		t.Errorf("replay made task %d after %d", b.(tools.TaskResult).Task.ID, a.(tools.TaskResult).Task.ID)
	}
	// Another group's request with the same id is its own.
	if _, herr := r.call("work", tools.ScheduleTask, "req-1", daily("once")); herr != nil {
		t.Errorf("work's request: %v", herr)
	}
	var n int
	r.st.DB.QueryRow(`SELECT COUNT(*) FROM scheduled_tasks`).Scan(&n)
	if n != 2 {
		t.Errorf("%d tasks stored, want 2", n)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A group that schedules and cancels a task 3000 times in a week gets a
// list_tasks answer of its live tasks and the newest finished ones, not
// of every one of them.
func TestListShowsLiveAndNewestFinished(t *testing.T) {
	storetest.EachDialect(t, testListShowsLiveAndNewestFinished)
}

func testListShowsLiveAndNewestFinished(t *testing.T, d sqldialect.Dialect) {
	r := newRig(t, d, utc("2026-05-01T10:00:00Z"), nil)
	active := r.mustSchedule("family", daily("water the plants"))
	paused := r.mustSchedule("family", daily("weekly review"))
	if _, herr := r.call("family", tools.PauseTask, "", tools.TaskIDArgs{ID: paused.ID}); herr != nil {
		t.Fatal(herr)
	}
	const pairs = 3000
	var cancelled []int64
	for i := range pairs {
		ti := r.mustSchedule("family", daily(strings.Repeat("remind everyone of the long agenda ", 8)+itoa(int64(i))))
		r.clock.Advance(time.Second)
		if _, herr := r.call("family", tools.CancelTask, "", tools.TaskIDArgs{ID: ti.ID}); herr != nil {
			t.Fatal(herr)
		}
		cancelled = append(cancelled, ti.ID)
	}
	res, herr := r.call("family", tools.ListTasks, "", tools.ListTasksArgs{})
	if herr != nil {
		t.Fatal(herr)
	}
	list := res.(tools.ListTasksResult)
	raw, _ := json.Marshal(list)
	t.Logf("list_tasks after %d schedule/cancel pairs: %d tasks, %d left out, %d bytes", pairs, len(list.Tasks), list.FinishedOmitted, len(raw))
	if len(raw) > 64<<10 {
		t.Errorf("the answer is %d bytes, want at most 64 KiB", len(raw))
	}
	var got []int64
	for _, ti := range list.Tasks {
		got = append(got, ti.ID)
	}
	want := []int64{active.ID, paused.ID}
	for i := range FinishedListed {
		want = append(want, cancelled[len(cancelled)-1-i])
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed ids %v, want the live ones then the newest %d finished, newest first: %v", got, FinishedListed, want)
	}
	if list.FinishedOmitted != pairs-FinishedListed {
		t.Errorf("FinishedOmitted = %d, want %d", list.FinishedOmitted, pairs-FinishedListed)
	}

	// A week later the old ones are not counted either.
	r.clock.Advance(7*24*time.Hour - pairs*time.Second + 30*time.Second)
	res, herr = r.call("family", tools.ListTasks, "", tools.ListTasksArgs{})
	if herr != nil {
		t.Fatal(herr)
	}
	list = res.(tools.ListTasksResult)
	if n := len(list.Tasks) - 2; n != FinishedListed || list.FinishedOmitted != pairs-FinishedListed-30 {
		t.Errorf("after a week: %d finished listed, %d left out; want %d and %d", n, list.FinishedOmitted, FinishedListed, pairs-FinishedListed-30)
	}
}
