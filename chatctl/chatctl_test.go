package chatctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/access"
	"github.com/botd-dev/botd/agent"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/nokey"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func TestParse(t *testing.T) {
	cases := []struct {
		text, name, args string
		ok               bool
	}{
		{"/status", "status", "", true},
		{"  /STATUS  ", "status", "", true},
		{"/status@botd_test_bot", "status", "", true},
		{"@Andy /status", "status", "", true},
		{"/model openai/gpt-4.1-mini", "model", "openai/gpt-4.1-mini", true},
		{"/model@bot  a/b, c/d ", "model", "a/b, c/d", true},
		{"/usage 7d", "usage", "7d", true},
		{"/start", "help", "", true},
		{"/reset", "new", "", true},
		{"/new", "new", "", true},
		{"/stop", "stop", "", true},
		{"/models", "", "", false},
		{"/stopped", "", "", false},
		{"/approve ABCD-EF23", "", "", false}, // access's
		{"please /status", "", "", false},
		{"@Andy what is /status?", "", "", false},
		{"status", "", "", false},
		{"", "", "", false},
		{"/model " + strings.Repeat("x", 400), "", "", false},
	}
	for _, c := range cases {
		name, args, _, ok := Parse(c.text)
		if name != c.name || args != c.args || ok != c.ok {
			t.Errorf("Parse(%.40q) = %q, %q, %v; want %q, %q, %v", c.text, name, args, ok, c.name, c.args, c.ok)
		}
	}
}

func TestRole(t *testing.T) {
	admins := groups.Group{Folder: "family", Chat: "telegram:-100", Settings: groups.Settings{Admins: []string{"telegram:42"}}}
	open := groups.Group{Folder: "club", Chat: "telegram:-200"}
	cases := []struct {
		name   string
		owners []string
		g      groups.Group
		sender string
		want   groups.Role
	}{
		{"owner", []string{"telegram:1"}, admins, "1", groups.Owner},
		{"admin", []string{"telegram:1"}, admins, "42", groups.Admin},
		{"member", []string{"telegram:1"}, admins, "43", groups.Member},
		{"admin without owners", nil, admins, "42", groups.Admin},
		{"member without owners", nil, admins, "43", groups.Member},
		{"nobody named: everyone", nil, open, "43", groups.Owner},
		{"owners named: a group without admins has members", []string{"telegram:1"}, open, "43", groups.Member},
		{"another network's id is not the admin", nil, groups.Group{Folder: "s", Chat: "slack:C1", Settings: admins.Settings}, "42", groups.Member},
		{"no sender", []string{"telegram:"}, admins, "", groups.Member},
	}
	for _, c := range cases {
		p := &Policy{Access: access.Config{Owners: c.owners}}
		if got := p.Role(&c.g, c.g.Chat, c.sender); got != c.want {
			t.Errorf("%s: Role = %s, want %s", c.name, got, c.want)
		}
	}
}

// models is chatctl.Models over two providers, "a" and "b"; a chain is a
// nokey provider naming its list, so a test can see which one a run got.
type models struct {
	mu     sync.Mutex
	chains int
}

func (m *models) Resolve(name string) (string, error) {
	p, _, ok := strings.Cut(name, "/")
	if !ok || (p != "a" && p != "b") {
		return "", errors.New("unknown model " + name)
	}
	return name, nil
}

func (m *models) Chain(list []string) (llm.Provider, error) {
	m.mu.Lock()
	m.chains++
	m.mu.Unlock()
	return nokey.Provider{Message: strings.Join(list, ",")}, nil
}

func (m *models) Default() string { return "a/default" }

type agentState struct {
	mu              sync.Mutex
	running, queued bool
	stopped, afresh int
	spent, limit    int64
}

func (a *agentState) StopRun(string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		a.stopped++
		a.running = false
		return true
	}
	return false
}
func (a *agentState) GroupState(string) (bool, bool) { return a.running, a.queued }
func (a *agentState) SpentToday(context.Context, *groups.Group) (int64, int64, error) {
	return a.spent, a.limit, nil
}
func (a *agentState) StartAfresh(context.Context, *groups.Group) error { a.afresh++; return nil }

type rig struct {
	cmds  *Commands
	ch    *chantest.Channel
	ag    *agentState
	ms    *models
	now   time.Time
	group groups.Group
}

func newRig(t *testing.T, c store.Config, cfg access.Config) *rig {
	t.Helper()
	st := storetest.Open(t, c)
	r := &rig{ch: chantest.New("telegram"), ag: &agentState{}, ms: &models{}, now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := &Policy{DB: st.DB, Access: cfg, Models: r.ms, Log: log, Now: func() time.Time { return r.now }}
	r.cmds = &Commands{Policy: p, Agent: r.ag, Store: st, AssistantName: "Andy", Location: time.UTC, Log: log,
		Channel: func(string) (channels.Channel, bool) { return r.ch, true }}
	r.group = groups.Group{Folder: "family", Chat: "telegram:-100", Settings: groups.Settings{Admins: []string{"telegram:42"},
		Model: []string{"b/config"}, Prompt: "Be brief.", Language: "German", Tools: []string{"fetch_url"}, MaxCostPerDay: 0.5}}
	return r
}

// say has sender write text and returns botd's reply ("" for none) and
// whether the message was a command.
func (r *rig) say(sender, text string) (string, bool) {
	before := len(r.ch.Sent())
	in := channels.Inbound{ChatID: "telegram:-100", ID: "m", SenderID: sender, Text: text, IsGroup: true}
	ok := r.cmds.Intercept(context.Background(), in, &r.group)
	sent := r.ch.Sent()
	if len(sent) == before {
		return "", ok
	}
	return sent[len(sent)-1].Text, ok
}

func TestCommands(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		r := newRig(t, c, access.Config{})
		ctx := context.Background()

		if _, ok := r.say("43", "@Andy what is the weather?"); ok {
			t.Fatal("a question was taken for a command")
		}
		in := channels.Inbound{ChatID: "telegram:-100", SenderID: "43", Text: "/status"}
		if r.cmds.Intercept(ctx, in, nil) {
			t.Error("a command in a chat no group registers was answered (pairing is access's)")
		}
		other := channels.Inbound{ChatID: "telegram:-100", SenderID: "43", Text: "/status@other_bot"}
		if r.cmds.Intercept(ctx, other, &r.group) {
			t.Error("a command addressed to another bot was answered")
		}
		if other.Mentioned = true; !r.cmds.Intercept(ctx, other, &r.group) {
			t.Error("a command addressed to this bot by name was not answered")
		}
		for _, in := range []channels.Inbound{{FromMe: true}, {IsBot: true}, {Edit: true}} {
			in.ChatID, in.SenderID, in.Text = "telegram:-100", "43", "/status"
			if r.cmds.Intercept(ctx, in, &r.group) {
				t.Errorf("%+v was answered", in)
			}
		}

		r.ag.spent, r.ag.limit, r.ag.running = 12_345_678, 50_000_000, true
		st, _ := r.say("43", "/status")
		for _, want := range []string{"Model: b/config (from the config)", "Tools: only fetch_url (from the config)",
			"Language: German (from the config)", "Standing instructions: set in the config", "You are: a member",
			"Spent today: $0.1235 of $0.5000", "Now: writing an answer"} {
			if !strings.Contains(st, want) {
				t.Errorf("/status = %q, want %q", st, want)
			}
		}
		if got, _ := r.say("43", "/stop"); got != "Stopped." || r.ag.stopped != 1 {
			t.Errorf("/stop = %q (stopped %d)", got, r.ag.stopped)
		}
		if got, _ := r.say("43", "/stop"); !strings.Contains(got, "not writing") {
			t.Errorf("/stop with nothing running = %q", got)
		}
		if got, _ := r.say("43", "/new"); !strings.Contains(got, "afresh") || r.ag.afresh != 1 {
			t.Errorf("/new = %q (afresh %d)", got, r.ag.afresh)
		}

		if got, _ := r.say("43", "/model a/x"); !strings.Contains(got, "Only an admin") {
			t.Errorf("a member's /model = %q", got)
		}
		if got, _ := r.say("42", "/model z/x"); !strings.HasPrefix(got, "Not changed: unknown model z/x") {
			t.Errorf("an unknown model = %q", got)
		}
		if got, _ := r.say("42", "/model a/1,a/2,a/3,a/4,a/5"); !strings.Contains(got, "at most three fallbacks") {
			t.Errorf("five models = %q", got)
		}
		got, _ := r.say("42", "/model a/x, b/y")
		if !strings.Contains(got, "a/x, then b/y (set in the chat by telegram:42 on 28 Nov 12:00)") {
			t.Errorf("an admin's /model = %q", got)
		}
		run := r.cmds.Policy.Run(ctx, &r.group)
		if run.Model != "x" || run.LLM.(nokey.Provider).Message != "a/x,b/y" {
			t.Errorf("the next run's model = %q over %v, want x over a/x,b/y", run.Model, run.LLM)
		}
		if run.Prompt != "Be brief." || run.Language != "German" || len(run.Tools) != 1 || run.MaxCostPerDay != 50_000_000 {
			t.Errorf("the run's settings = %+v", run)
		}
		restarted := &Policy{DB: r.cmds.Policy.DB, Models: r.ms, Log: r.cmds.Log}
		if list, source, o := restarted.Model(ctx, &r.group); source != "chat" || len(list) != 2 || o.By != "telegram:42" {
			t.Errorf("after a restart the model is %q from %q by %q; want the chat's, kept", list, source, o.By)
		}
		r.cmds.Policy.Run(ctx, &r.group)
		if r.ms.chains != 1 {
			t.Errorf("%d chains built for one list, want 1 (cached)", r.ms.chains)
		}
		if got, _ := r.say("43", "/model"); !strings.Contains(got, "a/x, then b/y (set in the chat") {
			t.Errorf("a member's /model without a name = %q", got)
		}
		if got, _ := r.say("42", "/model default"); !strings.Contains(got, "b/config (from the config)") {
			t.Errorf("/model default = %q", got)
		}
		r.group.Settings.Model = nil
		if run := r.cmds.Policy.Run(ctx, &r.group); run.LLM != nil || run.Model != "" {
			t.Errorf("a group without a model of its own got %+v, want the agent's", run)
		}
		if got, _ := r.say("43", "/status"); !strings.Contains(got, "a/default (botd's default)") {
			t.Errorf("/status without a model of the group's = %q", got)
		}

		if got, _ := r.say("43", "/usage"); !strings.HasPrefix(got, "Today: $0.0000 over 0 model calls") {
			t.Errorf("/usage = %q", got)
		}
		if got, _ := r.say("43", "/usage"); strings.Contains(got, "Input:") {
			t.Errorf("/usage before any run says where input went: %q", got)
		}
		for i, sp := range []*store.TokenSplit{nil, {Prompt: 600, Tools: 600, Conversation: 1500, Media: 300}, {Prompt: 600, Tools: 600, Conversation: 1500, Media: 300}} {
			run := store.AgentRun{ID: fmt.Sprint("run-", i), Folder: r.group.Folder, Started: r.now.Add(-time.Hour), Split: sp}
			if sp != nil {
				run.InputTokens = sp.Total()
			}
			if err := r.cmds.Store.SaveRun(ctx, run, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := r.say("43", "/usage"); !strings.Contains(got, "\nInput: 6.0k tokens: fixed prompt 20 %, tools 20 %, conversation 50 %, media 10 % (1 earlier runs not counted)") {
			t.Errorf("/usage after two split runs and an older one = %q", got)
		}
		if got, _ := r.say("43", "/usage forever"); !strings.HasPrefix(got, "Usage:") {
			t.Errorf("/usage forever = %q", got)
		}
		if help, _ := r.say("43", "/help"); !strings.Contains(help, "/model [name]") || !strings.Contains(help, "/deny CODE") {
			t.Errorf("/help = %q", help)
		}
	})
}

// access.per_sender_per_hour: the limit's runs start, the next one gets
// one reply, later ones none, an hour later one starts again; owners and
// other senders are not held up.
func TestAdmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		r := newRig(t, c, access.Config{PerSenderPerHour: 2, Owners: []string{"telegram:1"}})
		ctx := context.Background()
		admit := func(sender string) (bool, string) {
			before := len(r.ch.Sent())
			ok := r.cmds.Admit(ctx, channels.Inbound{ChatID: "telegram:-100", ID: "m", SenderID: sender}, &r.group)
			if sent := r.ch.Sent(); len(sent) > before {
				return ok, sent[len(sent)-1].Text
			}
			return ok, ""
		}
		for i := range 2 {
			if ok, said := admit("43"); !ok || said != "" {
				t.Fatalf("run %d: admitted %v, said %q", i+1, ok, said)
			}
		}
		if ok, said := admit("43"); ok || !strings.Contains(said, "2 times in the last hour") {
			t.Fatalf("the run past the limit: admitted %v, said %q", ok, said)
		}
		if ok, said := admit("43"); ok || said != "" {
			t.Fatalf("the next: admitted %v, said %q; want refused in silence", ok, said)
		}
		if ok, _ := admit("44"); !ok {
			t.Error("another sender was held up")
		}
		for range 5 {
			if ok, _ := admit("1"); !ok {
				t.Fatal("an owner was limited")
			}
		}
		r.now = r.now.Add(time.Hour + time.Second)
		if ok, said := admit("43"); !ok || said != "" {
			t.Errorf("an hour later: admitted %v, said %q", ok, said)
		}
		var n int
		r.cmds.Policy.DB.QueryRow(`SELECT COUNT(*) FROM sender_runs WHERE sender = 'telegram:43'`).Scan(&n)
		if n != 1 {
			t.Errorf("%d rows kept for the sender after the hour, want 1 (older ones dropped)", n)
		}
		// A reload that names the sender an owner lifts the limit.
		r.cmds.Policy.SetAccess(access.Config{PerSenderPerHour: 2, Owners: []string{"telegram:43"}})
		for range 4 {
			if ok, _ := admit("43"); !ok {
				t.Fatal("after the reload the new owner was limited")
			}
		}
		if got := r.cmds.Policy.Role(&r.group, "telegram:-100", "43"); got != groups.Owner {
			t.Errorf("after the reload the role is %s, want owner", got)
		}
	})
}

// A flood of commands in one chat is answered up to MaxRepliesPerMinute;
// the rest are carried out unanswered (never the model's) — a /stop
// still stops — and a minute later they are answered again. Another chat
// is not held up.
func TestCommandFlood(t *testing.T) {
	r := newRig(t, storetest.Config(t, sqldialect.SQLite), access.Config{})
	for i := range MaxRepliesPerMinute + 5 {
		if _, ok := r.say("43", "/help"); !ok {
			t.Fatalf("command %d was not taken", i)
		}
	}
	if n := len(r.ch.Sent()); n != MaxRepliesPerMinute {
		t.Fatalf("%d replies to a flood, want %d", n, MaxRepliesPerMinute)
	}
	r.ag.running = true
	if got, ok := r.say("42", "/stop"); !ok || got != "" || r.ag.stopped != 1 {
		t.Errorf("/stop during the flood: taken %v, said %q, stopped %d; want stopped unanswered", ok, got, r.ag.stopped)
	}
	other := channels.Inbound{ChatID: "telegram:-200", SenderID: "43", Text: "/help"}
	if !r.cmds.Intercept(context.Background(), other, &r.group) || len(r.ch.Sent()) != MaxRepliesPerMinute+1 {
		t.Error("another chat's command was not answered during the flood")
	}
	r.now = r.now.Add(time.Minute)
	if got, _ := r.say("43", "/help"); got == "" {
		t.Error("a minute later the command was not answered")
	}
}

// What a triggering message costs with access.per_sender_per_hour set
// (the count, the insert, the sweep of the sender's older rows).
func BenchmarkAdmit(b *testing.B) {
	st := storetest.Open(b, storetest.Config(b, sqldialect.SQLite))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	p := &Policy{DB: st.DB, Access: access.Config{PerSenderPerHour: 1 << 30}, Models: &models{}, Log: log,
		Now: func() time.Time { now = now.Add(time.Second); return now }}
	c := &Commands{Policy: p, Log: log, Channel: func(string) (channels.Channel, bool) { return nil, false }}
	g := groups.Group{Folder: "family", Chat: "telegram:-100"}
	in := channels.Inbound{ChatID: "telegram:-100", SenderID: "43"}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if !c.Admit(ctx, in, &g) {
			b.Fatal("refused")
		}
	}
}

// What a run's settings cost once the group's override was read.
func BenchmarkPolicyRun(b *testing.B) {
	st := storetest.Open(b, storetest.Config(b, sqldialect.SQLite))
	p := &Policy{DB: st.DB, Models: &models{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	g := groups.Group{Folder: "family", Chat: "telegram:-100", Settings: groups.Settings{Model: []string{"a/x", "b/y"}}}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if p.Run(ctx, &g).LLM == nil {
			b.Fatal("no chain")
		}
	}
}

// A model set on the dashboard is validated as /model's, reaches the
// group's next run, is shown with its source by Settings and /status,
// and goes back to the config's on reset.
func TestDashboardModel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		r := newRig(t, c, access.Config{})
		ctx := context.Background()
		p := r.cmds.Policy
		var no Refusal
		if err := p.ChangeModel(ctx, &r.group, "z/x", ByDashboard); !errors.As(err, &no) || no.Error() != "unknown model z/x" {
			t.Errorf("an unknown model from the dashboard: %v, want the refusal /model says", err)
		}
		if err := p.ChangeModel(ctx, &r.group, "a/1,a/2,a/3,a/4,a/5", ByDashboard); !errors.As(err, &no) {
			t.Errorf("five models from the dashboard: %v, want a refusal", err)
		}
		if run := p.Run(ctx, &r.group); run.Model != "config" {
			t.Errorf("a refused change reached the run: model %q", run.Model)
		}
		if err := p.ChangeModel(ctx, &r.group, "a/dash, b/y", ByDashboard); err != nil {
			t.Fatal(err)
		}
		run := p.Run(ctx, &r.group)
		if run.Model != "dash" || run.LLM.(nokey.Provider).Message != "a/dash,b/y" {
			t.Errorf("the next run's model = %q over %v, want dash over a/dash,b/y", run.Model, run.LLM)
		}
		restarted := &Policy{DB: p.DB, Models: r.ms, Log: p.Log}
		if run := restarted.Run(ctx, &r.group); run.Model != "dash" {
			t.Errorf("after a restart the run's model = %q, want the dashboard's", run.Model)
		}
		set := p.Settings(ctx, &r.group, time.UTC)
		want := map[string][2]string{"model": {"a/dash, b/y", "dashboard"}, "prompt": {"Be brief.", "config"},
			"tools": {"fetch_url", "config"}, "max_cost_per_day": {"$0.50", "config"}, "language": {"German", "config"},
			"admins": {"telegram:42", "config"}}
		for _, s := range set {
			if w := want[s.Name]; s.Value != w[0] || s.Source != w[1] {
				t.Errorf("setting %s = %q from %q, want %q from %q", s.Name, s.Value, s.Source, w[0], w[1])
			}
			delete(want, s.Name)
		}
		if len(want) > 0 {
			t.Errorf("settings missing: %v", want)
		}
		if st, _ := r.say("43", "/status"); !strings.Contains(st, "Model: a/dash, then b/y (set on the dashboard on 28 Nov 12:00)") {
			t.Errorf("/status = %q", st)
		}
		r.say("42", "/model a/chat")
		if s := p.Settings(ctx, &r.group, time.UTC)[0]; s.Source != "chat: telegram:42, 28 Nov 12:00" {
			t.Errorf("a chat's override shows as from %q", s.Source)
		}
		if err := p.ChangeModel(ctx, &r.group, "", ByDashboard); err != nil {
			t.Fatal(err)
		}
		if s := p.Settings(ctx, &r.group, time.UTC)[0]; s.Value != "b/config" || s.Source != "config" || s.Overridden {
			t.Errorf("after a reset the model is %+v, want the config's", s)
		}
	})
}

// The standing instructions and the tool allow-list set on the dashboard
// are checked as config check checks groups[].prompt and groups[].tools,
// reach the group's next run, show with their source in Settings and
// /status, and go back to the config's on reset; other settings are
// refused.
func TestDashboardPromptAndTools(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		r := newRig(t, c, access.Config{})
		ctx := context.Background()
		p := r.cmds.Policy
		p.CheckTool = agent.Config{}.CheckTool
		for _, tc := range []struct{ name, value, said string }{
			{"tools", "fetch_url, no_such_tool", `unknown tool "no_such_tool" (botd's own by name`},
			{"tools", "x__y", `unknown tool "x__y"`},
			{"prompt", strings.Repeat("é", groups.MaxPrompt), "the standing instructions are 8000 bytes; at most 4000."},
			{"language", "French", `"language" cannot be changed here`},
			{"admins", "telegram:1", `"admins" cannot be changed here`},
		} {
			var no Refusal
			if err := p.Change(ctx, &r.group, tc.name, tc.value, ByDashboard); !errors.As(err, &no) || !strings.Contains(no.Error(), tc.said) {
				t.Errorf("%s = %q: %v, want a refusal saying %q", tc.name, tc.value, err, tc.said)
			}
		}
		if run := p.Run(ctx, &r.group); run.Prompt != "Be brief." || !slices.Equal(run.Tools, []string{"fetch_url"}) || run.Language != "German" {
			t.Errorf("refused changes reached the run: %+v", run)
		}
		if err := p.Change(ctx, &r.group, "prompt", "  Speak like a pirate.\r\nKeep it short.  ", ByDashboard); err != nil {
			t.Fatal(err)
		}
		if err := p.Change(ctx, &r.group, "tools", "web_search,fetch_url fetch_url", ByDashboard); err != nil {
			t.Fatal(err)
		}
		run := p.Run(ctx, &r.group)
		if run.Prompt != "Speak like a pirate.\nKeep it short." || !slices.Equal(run.Tools, []string{"web_search", "fetch_url"}) {
			t.Errorf("the next run's prompt %q, tools %q; want the dashboard's", run.Prompt, run.Tools)
		}
		restarted := &Policy{DB: p.DB, Models: r.ms, Log: p.Log}
		if run := restarted.Run(ctx, &r.group); run.Prompt != "Speak like a pirate.\nKeep it short." || len(run.Tools) != 2 {
			t.Errorf("after a restart the run has prompt %q, tools %q; want the dashboard's, kept", run.Prompt, run.Tools)
		}
		for _, s := range p.Settings(ctx, &r.group, time.UTC) {
			if (s.Name == "prompt" || s.Name == "tools") && (s.Source != "dashboard" || !s.Overridden || !s.Changeable) {
				t.Errorf("setting %+v, want from the dashboard", s)
			}
		}
		st, _ := r.say("43", "/status")
		for _, want := range []string{"Tools: only web_search, fetch_url (set on the dashboard on 28 Nov 12:00)",
			"Standing instructions: set on the dashboard on 28 Nov 12:00"} {
			if !strings.Contains(st, want) {
				t.Errorf("/status = %q, want %q", st, want)
			}
		}
		for _, name := range []string{"prompt", "tools"} {
			if err := p.Change(ctx, &r.group, name, "", ByDashboard); err != nil {
				t.Fatal(err)
			}
		}
		if run := p.Run(ctx, &r.group); run.Prompt != "Be brief." || !slices.Equal(run.Tools, []string{"fetch_url"}) {
			t.Errorf("after a reset the run has prompt %q, tools %q; want the config's", run.Prompt, run.Tools)
		}
	})
}
