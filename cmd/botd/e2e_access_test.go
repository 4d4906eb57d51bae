package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// sentTo are the messages botd sent to chat (sendMessage), as shown now.
func sentTo(tg *telegramtest.Server, chat int64) []string {
	var out []string
	for _, s := range tg.Sent() {
		if s.Method == "sendMessage" && s.ChatID == chat {
			out = append(out, s.Text)
		}
	}
	return out
}

var pairingCode = regexp.MustCompile(`Pairing code: ([A-Z2-9]{4}-[A-Z2-9]{4})`)

// An unknown Telegram group that addresses the assistant gets one reply
// with a pairing code (and the privacy-mode note: the fake bot, like every
// new bot, has it on), the model is not called, a second message gets no
// second reply; `botd chats approve CODE` against the running daemon
// makes it a group, and the next question there is answered, no restart.
// The question carries 👀 while it runs, taken off once answered.
func TestPairingApprovedLiveEndToEnd(t *testing.T) {
	const answer = "The book is Middlemarch."
	r := newAgentRig(t, "openai", answer)
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	club, ann := telegramtest.Group(-200, "Book Club"), telegramtest.Person(42, "Ann")
	say := func(chat any, id int, text string) {
		t.Helper()
		c := club
		if g, ok := chat.(int64); ok && g == -100 {
			c = telegramtest.Group(-100, "Family")
		}
		u := telegramtest.Text(c, ann, id, text)
		u.Message.Date = int(time.Now().Unix())
		r.tg.Enqueue(u)
	}

	say(-200, 10, "@botd_test_bot what are we reading?")
	testwait.Within(t, 60*time.Second, "the pairing reply", func() bool { return len(sentTo(r.tg, -200)) > 0 })
	reply := sentTo(r.tg, -200)[0]
	m := pairingCode.FindStringSubmatch(reply)
	if m == nil || !strings.Contains(reply, "botd chats approve "+m[1]) || !strings.Contains(reply, "privacy mode is on") {
		t.Fatalf("pairing reply = %q; want the code, how to approve it and the privacy-mode note", reply)
	}
	code := m[1]

	// A second message: no second reply. Updates are handled in order, so
	// once the registered group's marker is answered the second one was.
	say(-200, 11, "@Andy hello? anyone?")
	say(int64(-100), 12, "@Andy "+markerQuestion)
	testwait.Within(t, 60*time.Second, "the marker answer", func() bool { return len(r.answers(markerAnswer)) > 0 })
	if got := sentTo(r.tg, -200); len(got) != 1 {
		t.Fatalf("the unknown group got %d replies, want 1: %q", len(got), got)
	}
	for _, req := range r.model.Requests() {
		if strings.Contains(req, "what are we reading") || strings.Contains(req, "anyone?") {
			t.Fatalf("the model was sent a stranger's message:\n%.2000s", req)
		}
	}

	out, code1 := runCLI(t, r.dir, "chats", "list", "--config", "botd.yaml")
	if code1 != 0 || !strings.Contains(out, code) || !strings.Contains(out, "Book Club") || !strings.Contains(out, "family") {
		t.Fatalf("chats list (exit %d):\n%s", code1, out)
	}
	if out, c := runCLI(t, r.dir, "chats", "approve", "ABCD-EF23", "--config", "botd.yaml"); c != 1 || !strings.Contains(out, "no chat waits with that code") {
		t.Fatalf("approve of a wrong code (exit %d):\n%s", c, out)
	}
	approving := time.Now()
	out, c := runCLI(t, r.dir, "chats", "approve", strings.ToLower(code), "--config", "botd.yaml")
	if c != 0 || !strings.Contains(out, `the group "book-club"`) {
		t.Fatalf("chats approve (exit %d):\n%s", c, out)
	}
	host.waitLog(t, "group approved live: answering there now")
	// A figure, not a verdict: from the command's start to botd's log of
	// taking the group up (botd chats tells it through data/chats.updated).
	for _, l := range strings.Split(host.Logs(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(l, "group approved live: answering") {
			if at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "time=")); err == nil {
				t.Logf("botd chats approve to the running daemon taking the group up: %v", at.Sub(approving).Round(time.Millisecond))
			}
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "groups", "book-club", "MEMORY.md")); err != nil {
		t.Errorf("the approved group's workspace: %v", err)
	}
	// Its IPC folder is served at once: an external MCP client reaches it.
	ipcListMedia(t, r.dir, "book-club")
	// botd mcp finds the group in the database, as Claude Desktop would.
	if res := callTool(t, mcpStdio(t, r.dir, "botd.yaml", "book-club"), "list_media", map[string]any{}); res.IsError {
		t.Fatalf("list_media over botd mcp --group book-club: %s", resultText(res))
	}
	if out, c := runCLI(t, r.dir, "chats", "approve", code, "--config", "botd.yaml"); c != 1 {
		t.Fatalf("a code used twice was accepted (exit %d):\n%s", c, out)
	}

	say(-200, 13, "@Andy what are we reading this month?")
	testwait.Within(t, 60*time.Second, "the answer in the approved group", func() bool {
		return slices.ContainsFunc(sentTo(r.tg, -200), func(s string) bool { return strings.Contains(s, answer) })
	})
	found := false
	for _, req := range r.model.Requests() {
		found = found || strings.Contains(req, "what are we reading this month?")
	}
	if !found {
		t.Error("the model was not sent the approved group's question")
	}
	testwait.Within(t, 30*time.Second, "the reaction taken off the question", func() bool {
		rs := r.tg.Reactions(-200, 13)
		return len(rs) == 2
	})
	if rs := r.tg.Reactions(-200, 13); !slices.Equal(rs, []string{"👀", ""}) {
		t.Errorf("reactions on the question = %q, want 👀 then taken off", rs)
	}
	if out, c := runCLI(t, r.dir, "usage", "--group", "book-club", "--config", "botd.yaml"); c != 0 {
		t.Errorf("usage of the group approved live (exit %d):\n%s", c, out)
	}
	if rs := r.tg.Reactions(-200, 10); len(rs) != 0 {
		t.Errorf("the stranger's first message got reactions %q; the model never ran on it", rs)
	}

	// Removed live: silent again (it is a stranger, told its code once an
	// hour — and it was told less than an hour ago: nothing is sent).
	if out, c := runCLI(t, r.dir, "chats", "remove", "book-club", "--config", "botd.yaml"); c != 0 {
		t.Fatalf("chats remove (exit %d):\n%s", c, out)
	}
	if out, c := runCLI(t, r.dir, "chats", "remove", "family", "--config", "botd.yaml"); c != 1 || !strings.Contains(out, "config file") {
		t.Fatalf("removing a config group (exit %d):\n%s", c, out)
	}
	host.waitLog(t, "group approved live was removed")
	host.waitLog(t, "ipc: group no longer served: it was removed while botd ran")
	host.stop(t)
}

// On Slack the question gets :eyes: while the run works, and it is taken
// off once the answer is posted.
func TestSlackAckReactionEndToEnd(t *testing.T) {
	const (
		answer  = "Slack answer with a reaction."
		channel = "C0TEAM01"
		ann     = "UANN0001"
	)
	dir := t.TempDir()
	fake := slackfake.New(t)
	fake.SetUser(ann, "Ann")
	fake.SetChannel(channel, "team")
	model := newFakeModel(t, "openai", answer)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(slackAgentConfig,
		slackfake.BotToken, slackfake.AppToken, fake.APIURL(), model.srv.URL+"/v1", channel))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ts := slackTS(time.Now(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard only
	defer cancel()
	if err := fake.SendEvent(ctx, slackMessage(channel, ann, ts, "<@"+slackfake.BotUserID+"> how are you?", nil)); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 60*time.Second, "the reaction added and removed", func() bool { return len(fake.ReactionCalls()) >= 2 })
	calls := fake.ReactionCalls()
	if len(calls) != 2 {
		t.Fatalf("reaction calls = %+v, want an add and a remove", calls)
	}
	for i, want := range []slackfake.ReactionCall{
		{Method: "reactions.add", Channel: channel, Timestamp: ts, Name: "eyes"},
		{Method: "reactions.remove", Channel: channel, Timestamp: ts, Name: "eyes"},
	} {
		want.Logged = calls[i].Logged
		if calls[i] != want {
			t.Errorf("reaction call %d = %+v, want %+v", i, calls[i], want)
		}
	}
	// Set before anything was posted, taken off only once the answer was
	// out (the fake's message log up to the removal holds it).
	posted := func(log []slackfake.Call) bool {
		return slices.ContainsFunc(log, func(c slackfake.Call) bool { return strings.Contains(c.Text, answer) })
	}
	log := fake.Log()
	if calls[0].Logged != 0 || !posted(log[:calls[1].Logged]) {
		t.Errorf("reaction added after %d and removed after %d of these calls; want before any and after the answer: %+v",
			calls[0].Logged, calls[1].Logged, log)
	}
	if rs := fake.Reactions(channel, ts); len(rs) != 0 {
		t.Errorf("reactions left on the question: %q", rs)
	}
	host.stop(t)
}

// An owner approves from a DM with /approve CODE; the chat is greeted and
// answered. What pairing keeps survives a restart: the group approved live
// is still answered, and a chat told its code is not told again within
// the hour.
func TestOwnerApprovesFromADMAndItSurvivesARestart(t *testing.T) {
	const answer = "Answered in the approved group."
	r := newAgentRig(t, "openai", answer)
	writeFile(t, filepath.Join(r.dir, "botd.yaml"), strings.Replace(readFile(t, filepath.Join(r.dir, "botd.yaml")),
		"groups:\n", "access: {owners: [\"telegram:42\"]}\ngroups:\n", 1))
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	owner, stranger := telegramtest.Person(42, "Owner"), telegramtest.Person(77, "Sam")
	msg := 100
	say := func(chat models.Chat, from models.User, text string) int {
		t.Helper()
		msg++
		u := telegramtest.Text(chat, from, msg, text)
		u.Message.Date = int(time.Now().Unix())
		r.tg.Enqueue(u)
		return msg
	}
	club, other := telegramtest.Group(-300, "Chess"), telegramtest.Group(-400, "Other")
	say(club, stranger, "@botd_test_bot hi")
	say(other, stranger, "@botd_test_bot hi")
	testwait.Within(t, 60*time.Second, "both pairing replies", func() bool {
		return len(sentTo(r.tg, -300)) == 1 && len(sentTo(r.tg, -400)) == 1
	})
	code := pairingCode.FindStringSubmatch(sentTo(r.tg, -300)[0])[1]

	// A stranger's /approve in a DM is refused; the owner's is carried out.
	say(telegramtest.Private(stranger), stranger, "/approve "+code)
	testwait.Within(t, 60*time.Second, "the refusal", func() bool { return len(sentTo(r.tg, 77)) == 1 })
	if got := sentTo(r.tg, 77)[0]; !strings.Contains(got, "Only an owner") {
		t.Fatalf("a stranger's /approve got %q", got)
	}
	say(telegramtest.Private(owner), owner, "/approve "+code)
	testwait.Within(t, 60*time.Second, "the owner's confirmation", func() bool { return len(sentTo(r.tg, 42)) == 1 })
	if got := sentTo(r.tg, 42)[0]; !strings.Contains(got, `is now the group "chess"`) {
		t.Fatalf("the owner's /approve got %q", got)
	}
	testwait.Within(t, 30*time.Second, "the greeting in the approved chat", func() bool {
		return slices.ContainsFunc(sentTo(r.tg, -300), func(s string) bool { return strings.Contains(s, "This chat is approved") })
	})
	if greeting := sentTo(r.tg, -300)[1]; !strings.Contains(greeting, "@Andy") || !strings.Contains(greeting, "privacy mode is on") {
		t.Errorf("greeting = %q; want how to address the assistant and the privacy-mode note", greeting)
	}
	host.stop(t)

	// Restarted: the approved group is answered, the other chat is not
	// told its code again (within the hour), and the model never saw it.
	host = startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	say(other, stranger, "@botd_test_bot hello again")
	q := say(club, stranger, "@Andy who moves first?")
	testwait.Within(t, 60*time.Second, "the answer after the restart", func() bool {
		return slices.ContainsFunc(sentTo(r.tg, -300), func(s string) bool { return strings.Contains(s, answer) })
	})
	if got := sentTo(r.tg, -400); len(got) != 1 {
		t.Errorf("the unapproved chat was told %d times across a restart within the hour, want 1: %q", len(got), got)
	}
	for _, req := range r.model.Requests() {
		if strings.Contains(req, "hello again") {
			t.Error("the model was sent the unapproved chat's message")
		}
	}
	testwait.Within(t, 30*time.Second, "the reaction taken off", func() bool { return len(r.tg.Reactions(-300, q)) == 2 })
	host.stop(t)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
