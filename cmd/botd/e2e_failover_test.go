package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/pgtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// failoverConfig is one instance of two sharing a Postgres database, a
// Telegram bot and the groups' folders; each has its own data_dir.
// Telegram and the model are reached through taps of the instance's own
// (taps in front of one fake each), so the test knows who sent what.
const failoverConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: %q
log_level: debug
# this test's scripted model calls tools at once; lazy offering: e2e_lazytools_test.go
agent: {lazy_tools: false}
database: {driver: postgres, dsn: %q, instance_id: %s}
channels:
  telegram:
    enabled: true
    token: %q
    api_url: %q
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: %q}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// foToken is what the failover test counts: a question (Q001) or a
// scheduled task's prompt (T001). Answers name them in lower case, so an
// answer in the conversation never counts as a question.
var foToken = regexp.MustCompile(`\b[QT]\d{3}\b`)

// The note the first question asks the assistant to remember; the
// standby's prompt must carry it after the failover.
const foNote = "The gate code is GATE-4711"

// foRequest is one request the failover model saw.
type foRequest struct {
	inst   string // alpha | beta: the path prefix of the instance's base_url
	system string
	fresh  string // the user turns less what is marked answered
	tool   bool   // a tool result is in it
}

// foModel is an OpenAI-wire model for both instances: asked to remember
// something it calls remember, and otherwise it answers "ANS q001 t001"
// naming every question and task token not yet answered in the
// conversation, so each answer says which it covers. A hold makes one
// instance's request about one token wait until released.
type foModel struct {
	srv  *httptest.Server
	wire *fakeModel // its SSE helpers

	mu       sync.Mutex
	requests []foRequest
	hold     *foHold
}

type foHold struct {
	inst, token string
	arrived     chan struct{}
	release     chan struct{}
	came, freed sync.Once
}

func newFoModel(t *testing.T) *foModel {
	m := &foModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() {
		m.mu.Lock()
		if h := m.hold; h != nil {
			h.freed.Do(func() { close(h.release) })
		}
		m.mu.Unlock()
		m.srv.Close()
	})
	return m
}

func (m *foModel) baseURL(inst string) string { return m.srv.URL + "/" + inst + "/v1" }

func (m *foModel) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	inst, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	req := foRequest{inst: inst, system: readChat(raw).System, fresh: newText(raw), tool: bytes.Contains(raw, []byte(`"tool_call_id"`))}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	h := m.hold
	m.mu.Unlock()
	if h != nil && h.inst == inst && strings.Contains(req.fresh, h.token) {
		h.came.Do(func() { close(h.arrived) })
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if !req.tool && strings.Contains(req.fresh, "remember that") {
		m.wire.toolCall(w, "remember", fmt.Sprintf(`{"note":%q}`, foNote))
		return
	}
	var toks []string
	for _, tok := range foToken.FindAllString(req.fresh, -1) {
		if tok = strings.ToLower(tok); !slices.Contains(toks, tok) {
			toks = append(toks, tok)
		}
	}
	sort.Strings(toks)
	m.wire.text(w, "ANS "+strings.Join(toks, " "))
}

// holdNext makes inst's next request about token wait: arrived closes
// when it came, release lets it be answered.
func (m *foModel) holdNext(inst, token string) (arrived <-chan struct{}, release func()) {
	h := &foHold{inst: inst, token: token, arrived: make(chan struct{}), release: make(chan struct{})}
	m.mu.Lock()
	m.hold = h
	m.mu.Unlock()
	return h.arrived, func() { h.freed.Do(func() { close(h.release) }) }
}

func (m *foModel) Requests() []foRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// tgTap sits between one instance and the fake Bot API and records every
// call it made (the method) and the ids of the messages it sent.
type tgTap struct {
	srv *httptest.Server

	mu    sync.Mutex
	calls []tapCall
}

type tapCall struct {
	at     time.Time
	method string // lower case: sendmessage, getupdates, ...
	msgID  int    // the message a sendMessage made
}

func newTgTap(t *testing.T, target string) *tgTap {
	u, _ := url.Parse(target)
	tap := &tgTap{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // killed and frozen clients drop their polls
	rp.ModifyResponse = func(resp *http.Response) error {
		c := tapCall{at: time.Now(), method: strings.ToLower(filepath.Base(resp.Request.URL.Path))}
		if c.method == "sendmessage" {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			var env struct {
				Result models.Message `json:"result"`
			}
			if err == nil && json.Unmarshal(b, &env) == nil {
				c.msgID = env.Result.ID
			}
		}
		tap.mu.Lock()
		tap.calls = append(tap.calls, c)
		tap.mu.Unlock()
		return nil
	}
	tap.srv = httptest.NewServer(rp)
	t.Cleanup(tap.srv.Close)
	return tap
}

// since is the calls after the first n.
func (tap *tgTap) since(n int) []tapCall {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return slices.Clone(tap.calls[n:])
}

func (tap *tgTap) count() int {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return len(tap.calls)
}

// chatVisible is a call a chat member could see: anything but reading
// (getUpdates, getMe, getFile, ...).
func chatVisible(method string) bool {
	return strings.HasPrefix(method, "send") || strings.HasPrefix(method, "edit") || strings.HasPrefix(method, "delete") ||
		strings.HasPrefix(method, "set")
}

// foAnswer is one message the bot sent to the group, as it shows now.
type foAnswer struct {
	by   string // alpha | beta
	id   int
	text string
}

// TestFailoverWithTelegramAndAModel runs two real `botd run` on one
// Postgres with the fake Telegram and a fake model: the active answers;
// killed, the standby takes over and answers what came meanwhile once,
// runs a task that fell due meanwhile once and knows what the killed one
// was told to remember (shared groups_dir); restarted, the first stands
// by and sends nothing; and an active frozen past its lease in the middle
// of a run (SIGSTOP, then SIGCONT after the other took over) sends
// nothing. Every question is answered exactly once across both.
func TestFailoverWithTelegramAndAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the lease to lapse twice (about 2 minutes)")
	}
	dsn := pgtest.DSN(t)
	tg := telegramtest.New(t)
	model := newFoModel(t)
	groupsDir := t.TempDir()
	dirs, taps := map[string]string{}, map[string]*tgTap{}
	for _, id := range []string{"alpha", "beta"} {
		dirs[id] = t.TempDir()
		taps[id] = newTgTap(t, tg.URL())
		writeFile(t, filepath.Join(dirs[id], "botd.yaml"),
			fmt.Sprintf(failoverConfig, groupsDir, dsn, id, telegramtest.Token, taps[id].srv.URL, model.baseURL(id)))
	}
	start := func(id string) *proc {
		t.Helper()
		p := startBotd(t, dirs[id], "run", "--config", "botd.yaml")
		p.waitLog(t, "taking the lease")
		return p
	}
	status := func(want ...string) {
		t.Helper()
		out, code := runCLI(t, dirs["alpha"], "status", "--config", "botd.yaml")
		if code != 0 {
			t.Fatalf("botd status: exit %d:\n%s", code, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("botd status lacks %q:\n%s", w, out)
			}
		}
	}
	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	msgID := 0
	ask := func(text string) {
		msgID++
		tg.Enqueue(telegramtest.Text(group, ann, msgID, "@Andy "+text))
	}
	// answers is what the bot sent to the group, each message as it shows
	// now (a live answer is begun and then edited), by who sent it.
	answers := func() []foAnswer {
		by := map[int]string{}
		for id, tap := range taps {
			for _, c := range tap.since(0) {
				if c.method == "sendmessage" {
					by[c.msgID] = id
				}
			}
		}
		var out []foAnswer
		for _, s := range tg.Sent() {
			if s.Method != "sendMessage" || s.ChatID != -100 {
				continue
			}
			text, _, _ := tg.Shown(-100, s.MessageID)
			out = append(out, foAnswer{by: by[s.MessageID], id: s.MessageID, text: text})
		}
		return out
	}
	covering := func(tok string) []foAnswer {
		var out []foAnswer
		for _, a := range answers() {
			if f := strings.Fields(a.text); len(f) > 0 && f[0] == "ANS" && slices.Contains(f[1:], tok) {
				out = append(out, a)
			}
		}
		return out
	}
	// waitAnswer waits for the first answer covering tok, and for the tap
	// it went through to have seen the fake's reply (which the fake
	// records a moment before the tap does).
	waitAnswer := func(tok string) foAnswer {
		t.Helper()
		testwait.Within(t, 2*time.Minute, "an answer covering "+tok, func() bool {
			got := covering(tok)
			return len(got) > 0 && got[0].by != ""
		})
		return covering(tok)[0]
	}

	// 1. alpha active, beta standing by.
	a := start("alpha")
	a.waitLog(t, "botd running")
	status("database: postgres", "active: alpha", "epoch: 1")
	b := start("beta")

	// 2, 3. alpha answers, and remembers a note in the shared groups_dir.
	ask("Q001 please remember that the gate code is 4711")
	if got := waitAnswer("q001"); got.by != "alpha" {
		t.Fatalf("q001 answered by %q, want alpha", got.by)
	}
	mem, err := os.ReadFile(filepath.Join(groupsDir, "family", "MEMORY.md"))
	if err != nil || !strings.Contains(string(mem), foNote) {
		t.Fatalf("the note is not in the shared groups_dir's family/MEMORY.md (%v):\n%s", err, mem)
	}
	if calls := taps["beta"].since(0); len(calls) != 0 {
		t.Fatalf("the standby called the Bot API: %v", calls)
	}
	if strings.Contains(b.Logs(), "botd running") {
		t.Fatalf("beta served while alpha held the lease:\n%s", b.Logs())
	}

	// 4. A task due in the failover window: after alpha's SIGKILL, before
	// beta can take over (the lease lapses 30 s after alpha's last
	// renewal, at most 10 s before the kill, so at least 20 s after it).
	const taskIn = 12 * time.Second
	c := mcpStdio(t, dirs["alpha"], "botd.yaml", "family")
	scheduled := time.Now()
	res := callTool(t, c, "schedule_task", map[string]any{"prompt": "T001 remind the family to water the plants",
		"schedule": map[string]any{"in": taskIn.String()}})
	if out := resultText(res); res.IsError || !strings.Contains(out, "Task 1 scheduled in family") {
		t.Fatalf("schedule_task: %s", out)
	}
	c.Close()

	// 5. SIGKILL alpha; a question comes while nobody holds the lease.
	killed := time.Now()
	a.kill()
	if killed.After(scheduled.Add(taskIn)) {
		t.Fatalf("set-up: alpha was killed %v after scheduling the task, after it fell due", killed.Sub(scheduled))
	}
	ask("Q002 are you still there?")
	got := waitAnswer("q002")
	if got.by != "beta" {
		t.Fatalf("q002 answered by %q, want beta", got.by)
	}
	var firstSend, q002Sent time.Time
	for _, c := range taps["beta"].since(0) {
		if c.method == "sendmessage" && firstSend.IsZero() {
			firstSend = c.at
		}
		if c.method == "sendmessage" && c.msgID == got.id {
			q002Sent = c.at
		}
	}
	t.Logf("failover: beta's first answer reached Telegram %v after alpha's SIGKILL, its answer to q002 %v after it",
		firstSend.Sub(killed).Round(100*time.Millisecond), q002Sent.Sub(killed).Round(100*time.Millisecond))
	// The issue asks for the question asked meanwhile to be answered
	// within 60 s; the lease's own timings make it about 30.
	if q002Sent.Sub(killed) > 60*time.Second {
		t.Errorf("beta answered q002 %v after the kill, more than the 60 s asked for", q002Sent.Sub(killed))
	}
	status("active: beta", "epoch: 2")

	// The task fell due in the window and beta ran it, once.
	if got := waitAnswer("t001"); got.by != "beta" {
		t.Fatalf("t001 answered by %q, want beta", got.by)
	}
	if n := strings.Count(a.Logs(), "scheduler: task run delivered"); n != 0 {
		t.Fatalf("alpha delivered the task before its kill:\n%s", a.Logs())
	}
	if n := strings.Count(b.Logs(), "scheduler: task run delivered"); n != 1 {
		t.Fatalf("beta delivered the task %d times:\n%s", n, b.Logs())
	}
	due := logField(t, b, "scheduler: task run delivered", "due")
	running := logField(t, b, "botd running", "time")
	if !due.After(killed) || !due.Before(running) {
		t.Errorf("the task was due %s, not between alpha's kill %s and beta's start %s",
			due.Format(time.StampMilli), killed.Format(time.StampMilli), running.Format(time.StampMilli))
	}
	t.Logf("task due %v after the kill, beta active %v after it", due.Sub(killed).Round(100*time.Millisecond),
		running.Sub(killed).Round(100*time.Millisecond))

	// The note alpha saved reached beta's prompt.
	var betaSaw bool
	for _, r := range model.Requests() {
		if r.inst == "beta" && strings.Contains(r.system, "GATE-4711") {
			betaSaw = true
		}
	}
	if !betaSaw {
		t.Errorf("beta's prompts lack the note alpha saved in the shared groups_dir")
	}

	// 6. Restarted, alpha stands by: beta answers, alpha calls nothing.
	a = start("alpha")
	aFrom := taps["alpha"].count()
	aReqs := len(model.Requests())
	ask("Q003 who answers now?")
	if got := waitAnswer("q003"); got.by != "beta" {
		t.Fatalf("q003 answered by %q, want beta", got.by)
	}
	status("active: beta", "epoch: 2")
	if calls := taps["alpha"].since(aFrom); len(calls) != 0 {
		t.Fatalf("alpha, standing by, called the Bot API: %v", calls)
	}
	for _, r := range model.Requests()[aReqs:] {
		if r.inst == "alpha" {
			t.Fatalf("alpha, standing by, asked the model: %q", r.fresh)
		}
	}
	if strings.Contains(a.Logs(), "botd running") {
		t.Fatalf("restarted alpha serves while beta holds the lease:\n%s", a.Logs())
	}

	// 7. beta frozen in the middle of a run: its model request about q004
	// is held, beta stopped, the answer then written to its socket.
	arrived, release := model.holdNext("beta", "Q004")
	ask("Q004 what if you freeze?")
	select {
	case <-arrived:
	case <-time.After(2 * time.Minute):
		t.Fatal("beta did not ask the model about q004")
	}
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, time.Minute, "beta stopped", func() bool { return procState(b.cmd.Process.Pid) == "T" })
	release()
	frozen := time.Now()
	testwait.Within(t, 2*time.Minute, "alpha active", func() bool { return strings.Contains(a.Logs(), "botd running") })
	t.Logf("alpha active %v after beta froze", time.Since(frozen).Round(100*time.Millisecond))
	status("active: alpha", "epoch: 3")
	// beta never answered q004, so its cursor stayed before it: alpha
	// answers it.
	if got := waitAnswer("q004"); got.by != "alpha" {
		t.Fatalf("q004 answered by %q, want alpha", got.by)
	}
	ask("Q005 and now?")
	if got := waitAnswer("q005"); got.by != "alpha" {
		t.Fatalf("q005 answered by %q, want alpha", got.by)
	}

	bFrom := taps["beta"].count()
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("beta went on after its lease was taken:\n%s", b.Logs())
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(b.Logs(), "the lease was lost") {
		t.Fatalf("thawed beta: exit %d:\n%s", code, b.Logs())
	}
	after := taps["beta"].since(bFrom)
	for _, c := range after {
		if chatVisible(c.method) {
			t.Errorf("thawed beta called %s", c.method)
		}
	}
	var methods []string
	for _, c := range after {
		methods = append(methods, c.method)
	}
	t.Logf("thawed beta's calls to the Bot API: %v; what it logged of its run:", methods)
	for _, line := range strings.Split(b.Logs(), "\n") {
		if strings.Contains(line, "not shown") || strings.Contains(line, "fenced") || strings.Contains(line, "live answer") ||
			strings.Contains(line, "lease:") {
			t.Logf("  %s", line)
		}
	}
	status("active: alpha", "epoch: 3")

	// A last question to alpha: the group's runs are serial and each
	// first delivers what the outbox owes, so a late or doubled answer
	// would have come before this one.
	ask("Q006 anything else?")
	waitAnswer("q006")

	// Every question and the task answered exactly once, across both.
	for _, tok := range []string{"q001", "q002", "q003", "q004", "q005", "q006", "t001"} {
		if got := covering(tok); len(got) != 1 {
			t.Errorf("%s covered by %d answers, want 1: %v", tok, len(got), got)
		}
	}
	for _, ans := range answers() {
		if !strings.HasPrefix(ans.text, "ANS q") && !strings.HasPrefix(ans.text, "ANS t") {
			t.Errorf("unexpected message in the group: %+v", ans)
		}
	}
	var taskAsked int
	for _, r := range model.Requests() {
		if strings.Contains(r.fresh, "T001") {
			taskAsked++
		}
	}
	if taskAsked != 1 {
		t.Errorf("the model was handed the task %d times, want 1", taskAsked)
	}
	if t.Failed() {
		t.Logf("sent: %v", tg.Sent())
	}
	a.stop(t)
}

// procState is the state letter of a process (R, S, T for stopped...).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state ...: comm may hold spaces, so read after the ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+3 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// logField reads a time field (time=, due=) of the first log line of p
// holding msg.
func logField(t *testing.T, p *proc, msg, field string) time.Time {
	t.Helper()
	for _, line := range strings.Split(p.Logs(), "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		m := regexp.MustCompile(`(?:^| )` + field + `=(\S+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no %s= in %q", field, line)
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("%s= in %q: %v", field, line, err)
		}
		return at
	}
	t.Fatalf("no log line holds %q", msg)
	return time.Time{}
}
