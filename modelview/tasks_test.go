package modelview

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/store"
	registry "github.com/botd-dev/botd/tools"
)

func taskServers(t *testing.T) (fam, main *mcpTestClient) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gs, err := groups.NewSet("Andy", []groups.Group{
		{Folder: "family", Chat: "telegram:-1001", RequiresTrigger: true},
		{Folder: "main", Chat: "telegram:42", Main: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := scheduler.New(scheduler.Options{Store: st, Groups: gs, Location: time.UTC,
		Fire: func(context.Context, scheduler.Run) error { return nil }})
	mk := func(folder string, isMain bool) *mcpTestClient {
		srv, err := New(Options{GroupDir: filepath.Join(dir, "groups", folder), Caller: &handlerCaller{h: s, group: folder},
			Main: isMain, Log: testLogger(t), CallTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return &mcpTestClient{t: t, c: connect(t, srv)}
	}
	return mk("family", false), mk("main", true)
}

type mcpTestClient struct {
	t *testing.T
	c *Session
}

func (m *mcpTestClient) call(name string, args map[string]any) (string, bool) {
	m.t.Helper()
	res := callTool(m.t, m.c, name, args)
	texts, _, _ := parts(m.t, res)
	return strings.Join(texts, ""), res.IsError
}

func TestTaskTools(t *testing.T) {
	fam, main := taskServers(t)

	out, isErr := fam.call(registry.ScheduleTask, map[string]any{"prompt": "Remind everyone to pay the rent.",
		"schedule": map[string]any{"cron": "0 10 1 * *"}})
	if isErr || !strings.Contains(out, "Task 1 scheduled in family") || !strings.Contains(out, `cron "0 10 1 * *" (UTC)`) ||
		!strings.Contains(out, "Next run: ") {
		t.Fatalf("schedule_task: %s", out)
	}
	// A schedule written as a string is understood too.
	if out, isErr := fam.call(registry.ScheduleTask, map[string]any{"prompt": "check answers", "schedule": "in: 2h", "context": "isolated"}); isErr ||
		!strings.Contains(out, "context isolated") {
		t.Fatalf("string schedule: %s", out)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"prompt": "x"}, "schedule is required"},
		{map[string]any{"prompt": "x", "schedule": map[string]any{"cron": "0 9 * * 1", "in": "1h"}}, "give exactly one"},
		{map[string]any{"prompt": "x", "schedule": map[string]any{"when": "soon"}}, "unknown key"},
		{map[string]any{"prompt": "x", "schedule": "tomorrow"}, "not understood"},
		{map[string]any{"prompt": "x", "schedule": map[string]any{"every": "10s"}}, "shortest interval is 1m"},
		{map[string]any{"prompt": "x", "schedule": map[string]any{"cron": "0 0 30 2 *"}}, "never fires"},
		{map[string]any{"prompt": "x", "schedule": map[string]any{"in": "1h"}, "group": "main"}, "[forbidden]"},
		{map[string]any{"prompt": " ", "schedule": map[string]any{"in": "1h"}}, "prompt is required"},
		{map[string]any{"prompt": "x", "schedule": map[string]any{"in": "1h"}, "batch": "yes"}, "batch must be true or false"},
	} {
		if out, isErr := fam.call(registry.ScheduleTask, bad.args); !isErr || !strings.Contains(out, bad.want) {
			t.Errorf("%v: %s (error %v), want %q", bad.args, out, isErr, bad.want)
		}
	}
	if out, isErr := main.call(registry.ScheduleTask, map[string]any{"prompt": "Good morning, family!", "schedule": map[string]any{"every": "24h"},
		"group": "family"}); isErr || !strings.Contains(out, "scheduled in family") {
		t.Fatalf("main for family: %s", out)
	}

	out, _ = fam.call(registry.ListTasks, nil)
	for _, want := range []string{"Timezone UTC", "#1 [active] in family", "#2 [active]", "#3 [active] in family: every 24h", "set up by main",
		"prompt: Remind everyone to pay the rent."} {
		if !strings.Contains(out, want) {
			t.Errorf("list_tasks lacks %q:\n%s", want, out)
		}
	}
	if out, _ := main.call(registry.ListTasks, map[string]any{"group": "*"}); strings.Count(out, "\n- #") != 3 {
		t.Errorf("main lists every group:\n%s", out)
	}

	if out, isErr := fam.call(registry.PauseTask, map[string]any{"id": 1}); isErr || !strings.Contains(out, "is now paused") {
		t.Errorf("pause: %s", out)
	}
	if out, isErr := fam.call(registry.ResumeTask, map[string]any{"id": 1}); isErr || !strings.Contains(out, "is now active") {
		t.Errorf("resume: %s", out)
	}
	if out, isErr := fam.call(registry.CancelTask, map[string]any{"id": 2}); isErr || !strings.Contains(out, "is now cancelled") {
		t.Errorf("cancel: %s", out)
	}
	if out, isErr := fam.call(registry.PauseTask, map[string]any{"id": "one"}); !isErr || !strings.Contains(out, "positive integer") {
		t.Errorf("bad id: %s", out)
	}
	if out, isErr := fam.call(registry.PauseTask, map[string]any{"id": 99}); !isErr || !strings.Contains(out, "[not_found]") {
		t.Errorf("unknown id: %s", out)
	}
}

// batch is kept with the task and shown by list_tasks.
func TestBatchTask(t *testing.T) {
	fam, _ := taskServers(t)
	if out, isErr := fam.call(registry.ScheduleTask, map[string]any{"prompt": "weekly digest", "schedule": map[string]any{"every": "168h"}, "batch": true}); isErr ||
		!strings.Contains(out, "batch (answered within hours") {
		t.Fatalf("batch task: %s", out)
	}
	if out, isErr := fam.call(registry.ScheduleTask, map[string]any{"prompt": "rent", "schedule": map[string]any{"in": "1h"}}); isErr {
		t.Fatalf("plain task: %s", out)
	}
	if out, _ := fam.call(registry.ListTasks, nil); !strings.Contains(out, "every 168h") || strings.Count(out, ", batch (") != 1 {
		t.Fatalf("list_tasks should mark the batch task only: %s", out)
	}
}

// Only the main group's server offers the group argument.
func TestTaskToolsOfferGroupToMainOnly(t *testing.T) {
	fam, main := taskServers(t)
	for _, c := range []struct {
		cl   *mcpTestClient
		want bool
	}{{fam, false}, {main, true}} {
		res, err := listTools(c.cl.c)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name != registry.ScheduleTask && tool.Name != registry.ListTasks {
				continue
			}
			if _, has := tool.InputSchema.Properties["group"]; has != c.want {
				t.Errorf("%s offers group: %v, want %v", tool.Name, has, c.want)
			}
		}
	}
}

// After many schedule/cancel pairs, list_tasks as the model reads it holds
// the live task, the newest finished ones, and a line saying how many older
// ones were left out (the scheduler's own test makes 3000 pairs).
func TestListTasksAfterManyCancelled(t *testing.T) {
	fam, _ := taskServers(t)
	if out, isErr := fam.call(registry.ScheduleTask, map[string]any{"prompt": "the one that stays", "schedule": map[string]any{"every": "24h"}}); isErr {
		t.Fatal(out)
	}
	const pairs = 2*scheduler.FinishedListed + 5
	for i := range pairs {
		out, isErr := fam.call(registry.ScheduleTask, map[string]any{"prompt": fmt.Sprintf("reminder %d: %s", i, strings.Repeat("bring the long list ", 10)),
			"schedule": map[string]any{"in": "2h"}})
		if isErr {
			t.Fatal(out)
		}
		if out, isErr := fam.call(registry.CancelTask, map[string]any{"id": i + 2}); isErr {
			t.Fatal(out)
		}
	}
	out, isErr := fam.call(registry.ListTasks, nil)
	t.Logf("list_tasks after %d pairs: %d bytes", pairs, len(out))
	if isErr {
		t.Fatal(out)
	}
	for _, want := range []string{"#1 [active]", fmt.Sprintf("#%d [cancelled]", pairs+1),
		fmt.Sprintf("%d older finished task(s) of the last week are not shown", pairs-scheduler.FinishedListed)} {
		if !strings.Contains(out, want) {
			t.Errorf("list_tasks lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "[cancelled]"); n != scheduler.FinishedListed {
		t.Errorf("%d cancelled tasks listed, want %d", n, scheduler.FinishedListed)
	}
}
