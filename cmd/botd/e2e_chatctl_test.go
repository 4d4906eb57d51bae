package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm/llmfake"
)

// cmdModel is an OpenAI-wire model for the chat's commands: it answers
// "Answer to qtag-X." for the newest qtag in the conversation, holds a
// "slow question" until its request is cancelled (someone said /stop),
// and asked to "schedule it" calls schedule_task, then says what the
// tool answered.
type cmdModel struct {
	*llmfake.Server
	slow chan struct{} // a slow question's request arrived
}

var qtag = regexp.MustCompile(`qtag-[a-z0-9]+`)

func newCmdModel(t *testing.T) *cmdModel {
	m := &cmdModel{slow: make(chan struct{}, 4)}
	m.Server = llmfake.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := readChat(body)
		fresh := newText(body)
		switch {
		case req.LastRole == "tool":
			llmfake.Write(w, llmfake.OpenAI, llmfake.Reply{Text: "The tool said: " + req.LastText})
		case strings.Contains(fresh, "slow question"):
			m.slow <- struct{}{}
			<-r.Context().Done() // until the run is stopped
		case strings.Contains(fresh, "schedule it"):
			llmfake.Write(w, llmfake.OpenAI, llmfake.Reply{Tool: "schedule_task",
				Args: `{"prompt":"Remind the family to water the plants.","schedule":{"in":"1h"}}`})
		default:
			tags := qtag.FindAllString(fresh, -1)
			if len(tags) == 0 {
				llmfake.Write(w, llmfake.OpenAI, llmfake.Reply{Text: "?"})
				return
			}
			llmfake.Write(w, llmfake.OpenAI, llmfake.Reply{Text: "Answer to " + tags[len(tags)-1] + "."})
		}
	}))
	return m
}

// chats are the chat requests the model received, read.
func (m *cmdModel) chats() []chatRequest {
	var out []chatRequest
	for _, r := range m.Requests() {
		if llmfake.WireOf(r.Path) == llmfake.OpenAI {
			out = append(out, readChat(r.Body))
		}
	}
	return out
}

// asked is the first request whose conversation holds text.
func (m *cmdModel) asked(t *testing.T, text string) chatRequest {
	t.Helper()
	for _, c := range m.chats() {
		if strings.Contains(c.Users, text) {
			return c
		}
	}
	t.Fatalf("the model was never sent %q", text)
	return chatRequest{}
}

// offered are the tool names of the first request whose conversation
// holds text.
func (m *cmdModel) offered(t *testing.T, text string) []string {
	t.Helper()
	for _, r := range m.Requests() {
		var req struct {
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		if !strings.Contains(readChat(r.Body).Users, text) || json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		return names
	}
	t.Fatalf("the model was never sent %q", text)
	return nil
}

// sentAny reports whether anything the model was sent holds text.
func (m *cmdModel) sentAny(text string) bool {
	return slices.ContainsFunc(m.Requests(), func(r llmfake.Request) bool { return strings.Contains(string(r.Body), text) })
}

const cmdTelegramConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
# this test's scripted model calls tools at once; lazy offering: e2e_lazytools_test.go
agent: {lazy_tools: false}
channels:
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s"}
  model: {provider: fake, name: gpt-4.1}
%s
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true, admins: ["telegram:42"]}
  - {folder: club, name: Club, chat: "telegram:-200", requires_trigger: true, model: [fake/gpt-4.1-club], prompt: "Speak like a chess coach.", language: French, tools: [remember, list_tasks]}
`

// tgChat is a Telegram rig for the commands: say writes in a chat as a
// person, reply waits for botd's next message there holding want.
type tgChat struct {
	t   *testing.T
	tg  *telegramtest.Server
	mu  sync.Mutex
	msg int
}

func (c *tgChat) say(chat models.Chat, from models.User, text string) int {
	c.t.Helper()
	c.mu.Lock()
	c.msg++
	id := c.msg
	c.mu.Unlock()
	u := telegramtest.Text(chat, from, id, text)
	u.Message.Date = int(time.Now().Unix())
	c.tg.Enqueue(u)
	return id
}

// reply waits for a message in chat holding want and returns it.
func (c *tgChat) reply(chat int64, want string) string {
	c.t.Helper()
	var got string
	testwait.Within(c.t, 60*time.Second, "a reply holding "+want, func() bool {
		for _, s := range sentTo(c.tg, chat) {
			if strings.Contains(s, want) {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// settled waits until the run that answered message id is over: its 👀
// is taken off after the run (the answer shows while it streams).
func (c *tgChat) settled(chat int64, id int) {
	c.t.Helper()
	testwait.Within(c.t, 60*time.Second, "the run over (its reaction off)", func() bool { return len(c.tg.Reactions(chat, id)) == 2 })
}

func startCmdRig(t *testing.T, access string) (*tgChat, *cmdModel, *proc) {
	t.Helper()
	dir := t.TempDir()
	tg := telegramtest.New(t)
	m := newCmdModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(cmdTelegramConfig, telegramtest.Token, tg.URL(), m.URL+"/v1", access))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	return &tgChat{t: t, tg: tg, msg: 100}, m, host
}

var (
	family, club = telegramtest.Group(-100, "Family"), telegramtest.Group(-200, "Club")
	annAdmin     = telegramtest.Person(42, "Ann")
	bobMember    = telegramtest.Person(43, "Bob")
)

// On Telegram the commands are offered in the client's menu, answered
// without the model and never shown to it: /status names the model and
// its source, /model by a member is refused and by an admin changes the
// next request's model, /new leaves the earlier conversation out of the
// next run, /stop ends the answer being written. A group with its own
// groups[].model asks that model; the other group does not.
func TestChatCommandsTelegramEndToEnd(t *testing.T) {
	c, m, host := startCmdRig(t, "")
	var menu []string
	for _, cmd := range c.tg.Commands() {
		menu = append(menu, cmd.Command)
	}
	if want := []string{"help", "status", "new", "stop", "model", "usage", "approve", "deny"}; !slices.Equal(menu, want) {
		t.Errorf("setMyCommands registered %q, want %q", menu, want)
	}

	q := c.say(family, annAdmin, "@Andy qtag-paris what is the capital of France?")
	c.reply(-100, "Answer to qtag-paris.")
	c.settled(-100, q)
	if got := m.asked(t, "qtag-paris").Model; got != "gpt-4.1" {
		t.Errorf("the family's first request named %q, want llm.model's gpt-4.1", got)
	}
	c.say(club, annAdmin, "@Andy qtag-club hello")
	c.reply(-200, "Answer to qtag-club.")
	clubReq, familyReq := m.asked(t, "qtag-club"), m.asked(t, "qtag-paris")
	if clubReq.Model != "gpt-4.1-club" {
		t.Errorf("the club's request named %q, want its groups[].model gpt-4.1-club", clubReq.Model)
	}
	if !strings.Contains(clubReq.System, "Speak like a chess coach.") || !strings.Contains(clubReq.System, "Write your answers in French.") {
		t.Errorf("the club's system prompt lacks its groups[].prompt and language:\n%.4000s", clubReq.System)
	}
	if strings.Contains(familyReq.System, "chess coach") || strings.Contains(familyReq.System, "French") {
		t.Error("the family's prompt carries the club's settings")
	}
	if got := m.offered(t, "qtag-club"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"list_tasks", "remember"}) {
		t.Errorf("the club was offered %q, want its groups[].tools", got)
	}
	if got := m.offered(t, "qtag-paris"); !slices.Contains(got, "schedule_task") || !slices.Contains(got, "send_message") {
		t.Errorf("the family (no allow-list) was offered %q, want every tool", got)
	}
	if strings.Contains(clubReq.User, "The person asking") || !strings.Contains(familyReq.User, "The person asking is the group's admin") {
		t.Errorf("the asker's role is named where nobody is named, or not where the family has admins:\nclub: %.500s\nfamily: %.500s",
			clubReq.User, familyReq.User)
	}

	c.say(family, annAdmin, "/help")
	if help := c.reply(-100, "/usage"); !strings.Contains(help, "/status") || !strings.Contains(help, "/approve CODE") {
		t.Errorf("/help = %q", help)
	}
	c.say(family, annAdmin, "/status@botd_test_bot")
	st := c.reply(-100, "Model: ")
	for _, want := range []string{"Model: fake/gpt-4.1 (botd's default)", "Spent today: $", "Now: idle"} {
		if !strings.Contains(st, want) {
			t.Errorf("/status = %q, want it to hold %q", st, want)
		}
	}
	c.say(club, annAdmin, "/status")
	if st := c.reply(-200, "Model: "); !strings.Contains(st, "fake/gpt-4.1-club (from the config)") {
		t.Errorf("the club's /status = %q, want its model from the config", st)
	}

	c.say(family, bobMember, "/model fake/gpt-4.1-mini")
	if got := c.reply(-100, "Only an admin"); !strings.Contains(got, "change its model") {
		t.Errorf("a member's /model = %q", got)
	}
	c.say(family, annAdmin, "/model nosuch/model")
	c.reply(-100, "Not changed:")
	c.say(family, annAdmin, "/model fake/gpt-4.1-mini")
	if got := c.reply(-100, "Model set:"); !strings.Contains(got, "fake/gpt-4.1-mini (set in the chat by telegram:42") {
		t.Errorf("an admin's /model = %q", got)
	}
	c.say(family, annAdmin, "/status")
	testwait.Within(t, 60*time.Second, "/status showing the chat's model", func() bool {
		return slices.ContainsFunc(sentTo(c.tg, -100), func(s string) bool {
			return strings.Contains(s, "Spent today") && strings.Contains(s, "fake/gpt-4.1-mini (set in the chat")
		})
	})

	c.say(family, annAdmin, "/new")
	c.reply(-100, "Starting afresh")
	c.say(family, annAdmin, "@Andy qtag-after what next?")
	c.reply(-100, "Answer to qtag-after.")
	after := m.asked(t, "qtag-after")
	if after.Model != "gpt-4.1-mini" {
		t.Errorf("after an admin's /model the request named %q, want gpt-4.1-mini", after.Model)
	}
	if strings.Contains(after.Users, "qtag-paris") || strings.Contains(after.Users, "Answer to qtag-paris") {
		t.Errorf("after /new the model was sent the earlier conversation:\n%.2000s", after.Users)
	}
	if got := m.asked(t, "qtag-club").Model; got != "gpt-4.1-club" {
		t.Errorf("the club's model changed to %q with the family's", got)
	}

	// /stop ends the answer being written; the next question is answered.
	c.say(family, annAdmin, "@Andy slow question qtag-slow")
	select {
	case <-m.slow:
	case <-time.After(60 * time.Second):
		t.Fatal("the slow question never reached the model")
	}
	c.say(family, bobMember, "/status")
	c.reply(-100, "Now: writing an answer")
	c.say(family, bobMember, "/stop")
	c.reply(-100, "Stopped.")
	q = c.say(family, annAdmin, "@Andy qtag-last and now?")
	c.reply(-100, "Answer to qtag-last.")
	c.settled(-100, q)
	c.say(family, annAdmin, "/stop")
	c.reply(-100, "I'm not writing anything right now.")
	if slices.ContainsFunc(sentTo(c.tg, -100), func(s string) bool { return strings.Contains(s, "Answer to qtag-slow") }) {
		t.Error("the stopped question was answered")
	}

	for _, cmd := range []string{"/status", "/model", "/new", "/stop", "/help", "Only an admin", "Starting afresh", "Model set"} {
		if m.sentAny(cmd) {
			t.Errorf("the model was sent %q: a command or its reply", cmd)
		}
	}
	host.stop(t)
}

// Roles: a member's schedule_task is refused with forbidden (and the
// model is told why), an admin's is carried out; the prompt names the
// asker's role. access.per_sender_per_hour: the run past the limit gets
// one short reply and no model call, the one after it nothing.
func TestRolesAndSenderLimitEndToEnd(t *testing.T) {
	c, m, host := startCmdRig(t, "access: {per_sender_per_hour: 2}")

	c.say(family, bobMember, "@Andy qtag-b1 schedule it")
	refused := c.reply(-100, "The tool said:")
	if !strings.Contains(refused, "schedule_task failed [forbidden]") || !strings.Contains(refused, "admin") {
		t.Errorf("a member's schedule_task came back as %q, want forbidden with why", refused)
	}
	if u := m.asked(t, "qtag-b1").User; !strings.Contains(u, "The person asking is the group's member") {
		t.Errorf("the prompt does not name the member's role:\n%.3000s", u)
	}

	c.say(family, annAdmin, "@Andy qtag-a1 schedule it")
	testwait.Within(t, 60*time.Second, "the admin's tool answer", func() bool {
		return len(slices.DeleteFunc(sentTo(c.tg, -100), func(s string) bool { return !strings.Contains(s, "The tool said:") })) == 2
	})
	var accepted string
	for _, s := range sentTo(c.tg, -100) {
		if strings.Contains(s, "The tool said:") {
			accepted = s
		}
	}
	if strings.Contains(accepted, "failed") || !strings.Contains(accepted, "scheduled in family") {
		t.Errorf("an admin's schedule_task came back as %q, want a task scheduled", accepted)
	}
	if u := m.asked(t, "qtag-a1").User; !strings.Contains(u, "The person asking is the group's admin") {
		t.Errorf("the prompt does not name the admin's role:\n%.3000s", u)
	}

	// Bob started one run; the second is his last within the hour.
	c.say(family, bobMember, "@Andy qtag-b2 one more")
	c.reply(-100, "Answer to qtag-b2.")
	c.say(family, bobMember, "@Andy qtag-b3 and another")
	limit := c.reply(-100, "in the last hour")
	c.say(family, bobMember, "@Andy qtag-b4 please?")
	c.say(family, annAdmin, "@Andy "+markerQuestion+" qtag-mark")
	c.reply(-100, "Answer to qtag-mark.")
	if n := len(slices.DeleteFunc(sentTo(c.tg, -100), func(s string) bool { return !strings.Contains(s, "in the last hour") })); n != 1 {
		t.Errorf("the sender past the limit was told %d times, want once (%q)", n, limit)
	}
	for _, q := range []string{"qtag-b3", "qtag-b4"} {
		if m.sentAny(q) {
			t.Errorf("the model was sent %s, past the sender's limit", q)
		}
	}
	host.stop(t)
}

// On Slack, where the client keeps a leading "/" to itself, the same
// commands work after the mention: /status, /model (a member refused, an
// admin's change in the next request), /new and /stop, none of them
// sent to the model.
func TestChatCommandsSlackEndToEnd(t *testing.T) {
	const (
		channel = "C0TEAM01"
		ann     = "UANN0001"
		bob     = "UBOB0001"
	)
	dir := t.TempDir()
	fake := slackfake.New(t)
	fake.SetUser(ann, "Ann")
	fake.SetUser(bob, "Bob")
	fake.SetChannel(channel, "team")
	m := newCmdModel(t)
	cfg := strings.Replace(slackAgentConfig, `requires_trigger: true}`, `requires_trigger: true, admins: ["slack:`+ann+`"]}`, 1)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(cfg, slackfake.BotToken, slackfake.AppToken, fake.APIURL(), m.URL+"/v1", channel))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second) // hang guard only
	defer cancel()
	n := 0
	say := func(user, text string) string {
		t.Helper()
		n++
		ts := slackTS(time.Now(), n)
		if err := fake.SendEvent(ctx, slackMessage(channel, user, ts, "<@"+slackfake.BotUserID+"> "+text, nil)); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	posted := func(want string) string {
		t.Helper()
		var got string
		testwait.Within(t, 60*time.Second, "a post holding "+want, func() bool {
			for _, c := range fake.Log() {
				if c.Channel == channel && strings.Contains(c.Text, want) {
					got = c.Text
					return true
				}
			}
			return false
		})
		return got
	}

	first := say(ann, "qtag-first what is up?")
	posted("Answer to qtag-first.")
	// The run is over once its :eyes: is taken off (the answer shows
	// while it streams).
	testwait.Within(t, 60*time.Second, "the first run over", func() bool {
		return slices.ContainsFunc(fake.ReactionCalls(), func(c slackfake.ReactionCall) bool {
			return c.Method == "reactions.remove" && c.Timestamp == first
		})
	})
	say(ann, "/status")
	if st := posted("Model: "); !strings.Contains(st, "fake/gpt-4.1 (botd") || !strings.Contains(st, "Now: idle") {
		t.Errorf("/status = %q", st)
	}
	say(bob, "/model fake/gpt-4.1-mini")
	posted("Only an admin")
	say(ann, "/model fake/gpt-4.1-mini")
	posted("Model set: fake/gpt-4.1-mini (set in the chat by slack:" + ann)
	say(ann, "/new")
	posted("Starting afresh")
	say(ann, "qtag-second and now?")
	posted("Answer to qtag-second.")
	second := m.asked(t, "qtag-second")
	if second.Model != "gpt-4.1-mini" || strings.Contains(second.Users, "qtag-first") {
		t.Errorf("after /model and /new: model %q, conversation:\n%.2000s", second.Model, second.Users)
	}
	say(bob, "slow question qtag-slow")
	select {
	case <-m.slow:
	case <-time.After(60 * time.Second):
		t.Fatal("the slow question never reached the model")
	}
	say(bob, "/stop")
	posted("Stopped.")
	say(ann, "qtag-third still there?")
	posted("Answer to qtag-third.")
	for _, cmd := range []string{"/status", "/model", "/new", "/stop", "Only an admin"} {
		if m.sentAny(cmd) {
			t.Errorf("the model was sent %q", cmd)
		}
	}
	host.stop(t)
}
