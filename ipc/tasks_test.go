package ipc_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/tools"
)

// The task requests reach the handler through the files like any other,
// with the folder as the group; one interrupted by a crash is carried
// out again at the next start (the scheduler keys schedule_task by its
// request id), never answered send_unknown.
func TestTaskRequestsReachTheHandler(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data", "ipc")
	fam := ipc.GroupLayout(root, "fam")
	must(t, fam.Ensure())
	writeRequest(t, fam.Processing(), "t1", tools.ScheduleTask,
		tools.ScheduleTaskArgs{Prompt: "remind us", Schedule: tools.TaskSchedule{In: "2h"}}, time.Now())
	h := &funcHandler{fn: func(ctx context.Context, group string, req *tools.Request) (any, *tools.Error) {
		return tools.TaskResult{Task: tools.TaskInfo{ID: 7, Group: group}}, nil
	}}
	r := &rig{root: root, h: h, log: &logRec{}}
	r.start(t, ipc.HostOptions{}, "fam")
	if resp := response(t, fam, "t1"); !resp.OK {
		t.Fatalf("interrupted schedule_task: %+v", resp)
	}
	c := r.client(t, "fam")
	for _, typ := range []string{tools.ListTasks, tools.PauseTask, tools.ResumeTask, tools.CancelTask} {
		var res tools.TaskResult
		if err := c.Call(guard(t), typ, tools.TaskIDArgs{ID: 7}, &res); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if res.Task.Group != "fam" {
			t.Errorf("%s: handler saw group %q", typ, res.Task.Group)
		}
	}
	r.stop()
	var types []string
	for _, c := range h.Calls() {
		types = append(types, c.Type)
	}
	sort.Strings(types)
	if got := strings.Join(types, ","); got != "cancel_task,list_tasks,pause_task,resume_task,schedule_task" {
		t.Errorf("handled %s", got)
	}
}

func TestTaskTypesAreIdempotent(t *testing.T) {
	types := ipc.Types(tools.IPCTypes())
	for _, typ := range []string{tools.ScheduleTask, tools.ListTasks, tools.PauseTask, tools.ResumeTask, tools.CancelTask} {
		spec, ok := tools.Lookup(typ)
		if !ok || spec.Service != tools.Tasks || !types.Repeatable(typ) {
			t.Errorf("%s: registered %v, repeatable %v", typ, ok, types.Repeatable(typ))
		}
	}
	if spec, _ := tools.Lookup(tools.SendMessage); spec.Service == tools.Tasks || types.Repeatable(tools.SendMessage) {
		t.Error("send_message counted as a task request or repeatable")
	}
}
