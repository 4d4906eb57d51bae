package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// taskModel is an OpenAI-wire model for scheduled tasks: asked to remind
// someone, it calls schedule_task; handed a due task, it answers with the
// reminder; the marker question gets the marker answer.
type taskModel struct {
	fm  *fakeModel // for its wire helpers
	srv *httptest.Server

	mu       sync.Mutex
	requests []string
}

const plantsAnswer = "Time to water the plants!"

func newTaskModel(t *testing.T) *taskModel {
	m := &taskModel{fm: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *taskModel) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	body := string(b)
	m.mu.Lock()
	m.requests = append(m.requests, body)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fresh := newText(b)
	switch {
	case strings.Contains(body, markerQuestion):
		m.fm.text(w, markerAnswer)
	case strings.Contains(body, `"tool_call_id"`):
		m.fm.text(w, "Done, I will remind you.")
	case strings.Contains(fresh, "Scheduled task #") && strings.Contains(fresh, "water the plants"):
		m.fm.text(w, plantsAnswer)
	case strings.Contains(fresh, "remind us in 3 seconds"):
		m.fm.toolCall(w, "schedule_task", `{"prompt":"Remind the family to water the plants.","schedule":{"in":"3s"}}`)
	default:
		m.fm.text(w, "?")
	}
}

func (m *taskModel) Requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.requests...)
}

func newTaskRig(t *testing.T) (*agentRig, *taskModel) {
	t.Helper()
	r := &agentRig{dir: t.TempDir(), tg: telegramtest.New(t)}
	r.proxy = newStallProxy(t, r.tg.URL())
	m := newTaskModel(t)
	cfg := strings.Replace(agentConfig, "log_level: debug\n", "log_level: debug\ntimezone: Europe/Berlin\nagent: {lazy_tools: false} # the model calls schedule_task at once\n", 1)
	writeFile(t, filepath.Join(r.dir, "botd.yaml"), fmt.Sprintf(cfg, telegramtest.Token, r.proxy.srv.URL, "openai", m.srv.URL+"/v1", "gpt-4.1"))
	return r, m
}

// askMarker asks the marker question and waits for its answer: the
// group's runs are serial, so anything owed before it has been sent.
func askMarker(t *testing.T, r *agentRig, msgID int) {
	t.Helper()
	r.tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), msgID, "@Andy "+markerQuestion))
	testwait.Within(t, 60*time.Second, "len(r.answers(markerAnswer)) > 0", func() bool { return len(r.answers(markerAnswer)) > 0 })
}

// schedule_task with in: 3s through `botd mcp --group` (the IPC path of an
// external MCP client): the fake model's answer to the task arrives in
// the fake Telegram chat, once.
func TestScheduledTaskThroughMCPEndToEnd(t *testing.T) {
	r, model := newTaskRig(t)
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "scheduler running")
	c := mcpStdio(t, r.dir, "botd.yaml", "family")

	res := callTool(t, c, "schedule_task", map[string]any{"prompt": "Remind the family to water the plants.",
		"schedule": map[string]any{"in": "3s"}})
	if out := resultText(res); res.IsError || !strings.Contains(out, "Task 1 scheduled in family") || !strings.Contains(out, "CE") {
		t.Fatalf("schedule_task: %s", out)
	}
	// Another group's name is refused from a group's own server.
	if res := callTool(t, c, "schedule_task", map[string]any{"prompt": "x", "schedule": map[string]any{"in": "1h"}, "group": "other"}); !res.IsError ||
		!strings.Contains(resultText(res), "[forbidden]") {
		t.Errorf("naming another group: %s", resultText(res))
	}
	testwait.Within(t, 60*time.Second, "len(r.answers(plantsAnswer)) > 0", func() bool { return len(r.answers(plantsAnswer)) > 0 })
	host.waitLog(t, "scheduler: task run delivered")
	askMarker(t, r, 2)
	if n := len(r.answers(plantsAnswer)); n != 1 {
		t.Errorf("the task's answer arrived %d times, want 1", n)
	}
	var asked int
	for _, req := range model.Requests() {
		if strings.Contains(newText([]byte(req)), "Scheduled task #1") {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("the model was handed the task %d times, want 1", asked)
	}
	out := resultText(callTool(t, c, "list_tasks", nil))
	if !strings.Contains(out, "#1 [done]") || !strings.Contains(out, "1 run(s)") || !strings.Contains(out, "Timezone Europe/Berlin") {
		t.Errorf("list_tasks after the run:\n%s", out)
	}
	host.stop(t)
}

// "@Andy remind us in 3 seconds ...": the built-in agent calls
// schedule_task in-process, and 3 s later the reminder is posted once.
func TestAssistantSchedulesATaskEndToEnd(t *testing.T) {
	r, _ := newTaskRig(t)
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "scheduler running")
	r.tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), 1,
		"@Andy remind us in 3 seconds to water the plants"))
	testwait.Within(t, 60*time.Second, "len(r.answers(\"Done, I will remind you.\")) > 0", func() bool { return len(r.answers("Done, I will remind you.")) > 0 })
	testwait.Within(t, 60*time.Second, "len(r.answers(plantsAnswer)) > 0", func() bool { return len(r.answers(plantsAnswer)) > 0 })
	askMarker(t, r, 2)
	if n := len(r.answers(plantsAnswer)); n != 1 {
		t.Errorf("the reminder arrived %d times, want 1", n)
	}
	logs := host.Logs()
	if !strings.Contains(logs, "scheduler: task scheduled") || !strings.Contains(logs, "by=family") {
		t.Errorf("no log of the task being scheduled:\n%s", logs)
	}
	host.stop(t)
	if _, err := os.Stat(filepath.Join(r.dir, "data", "botd.db")); err != nil {
		t.Fatal(err)
	}
}
