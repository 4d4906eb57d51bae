package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/scheduler"
)

func famTask(id int64, prompt string, isolated bool) scheduler.Run {
	due := time.Date(2025, 3, 1, 15, 0, 0, 0, time.UTC)
	return scheduler.Run{TaskID: id, Chat: famChat, MessageID: fmt.Sprintf("task-%d-1740841200", id), Prompt: prompt,
		Schedule: "every 1h", Isolated: isolated, Due: due}
}

// echoLLM answers each run with what it was asked: the task's prompt, or
// the latest question.
func echoLLM() *fakeLLM {
	return newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		text := userText(*req)
		switch {
		case strings.Contains(text, "sum up the week"):
			return textResult("Summary of the week."), nil
		case strings.Contains(text, "pay the rent"):
			return textResult("Reminder: rent."), nil
		case strings.Contains(text, "what time is it"):
			return textResult("Tea time."), nil
		}
		return textResult("?"), nil
	})
}

// A task in a group that needs the trigger runs (the message is addressed)
// and is answered in the group's chat, once, however often it is
// delivered.
func TestTaskRunsInItsGroupOnce(t *testing.T) {
	f := echoLLM()
	h := newHarness(t, f, nil)
	h.start()
	task := famTask(1, "sum up the week", false)
	for range 3 {
		if err := h.a.DeliverTask(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		h.idle()
	}
	if got := sentTexts(h.tg.Sent()); strings.Join(got, "|") != "Summary of the week." {
		t.Fatalf("sent %q, want the summary once", got)
	}
	if h.tg.Sent()[0].Chat != famChat {
		t.Errorf("answer went to %s", h.tg.Sent()[0].Chat)
	}
	if f.calls() != 1 {
		t.Errorf("%d model calls, want 1", f.calls())
	}
}

// context: group sees the memory and the conversation; isolated the
// prompt alone.
func TestTaskContextModes(t *testing.T) {
	f := echoLLM()
	h := newHarness(t, f, func(o *Options) {
		o.Time.Now = func() time.Time { return time.Date(2025, 3, 1, 16, 0, 0, 0, time.UTC) }
	})
	h.start()
	if err := os.MkdirAll(filepath.Join(h.groupsDir, "family"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.groupsDir, "family", "MEMORY.md"), []byte("- Anna is vegetarian\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.say(famChat, "Carol", "@Andy what time is it")
	h.idle()

	for _, tc := range []struct {
		isolated bool
		prompt   string
	}{{false, "sum up the week"}, {true, "pay the rent"}} {
		before := f.calls()
		if err := h.a.DeliverTask(context.Background(), famTask(int64(len(tc.prompt)), tc.prompt, tc.isolated)); err != nil {
			t.Fatal(err)
		}
		h.idle()
		reqs := f.requests()
		if len(reqs) != before+1 {
			t.Fatalf("%d runs for one task", len(reqs)-before)
		}
		req := reqs[len(reqs)-1]
		user, system := userText(req), req.System
		sawHistory := strings.Contains(user, "what time is it")
		sawMemory := strings.Contains(system, "Anna is vegetarian")
		if tc.isolated && (sawHistory || sawMemory) {
			t.Errorf("isolated run saw history %v, memory %v:\n%s\n%s", sawHistory, sawMemory, system, user)
		}
		if !tc.isolated && (!sawHistory || !sawMemory) {
			t.Errorf("group run saw history %v, memory %v", sawHistory, sawMemory)
		}
		if !strings.Contains(user, tc.prompt) || !strings.Contains(user, "Scheduled task #") {
			t.Errorf("the run does not carry the task:\n%s", user)
		}
	}
}

// A task message runs alone: a question asked just before it and one
// just after it get runs of their own, so the model answers each, and
// the task's answer does not quote the question.
func TestTaskRunsAlone(t *testing.T) {
	f := echoLLM()
	h := newHarness(t, f, nil)
	// Delivered before Start, as if they arrived during one long run.
	q1 := h.say(famChat, "Carol", "@Andy what time is it")
	if err := h.a.DeliverTask(context.Background(), famTask(1, "sum up the week", false)); err != nil {
		t.Fatal(err)
	}
	if err := h.a.DeliverTask(context.Background(), famTask(2, "pay the rent", false)); err != nil {
		t.Fatal(err)
	}
	q2 := h.say(famChat, "Dave", "@Andy what time is it")
	h.start()
	h.idle()
	sent := h.tg.Sent()
	if got := strings.Join(sentTexts(sent), "|"); got != "Tea time.|Summary of the week.|Reminder: rent.|Tea time." {
		t.Fatalf("answers %q", got)
	}
	if sent[0].ReplyTo != q1 || sent[3].ReplyTo != q2 {
		t.Errorf("questions answered as replies to %q and %q, want %q and %q", sent[0].ReplyTo, sent[3].ReplyTo, q1, q2)
	}
	for _, m := range sent[1:3] {
		if m.ReplyTo == q1 || m.ReplyTo == q2 {
			t.Errorf("a task's answer quotes a question: %+v", m)
		}
	}
	for i, req := range f.requests() {
		user := notAnswered(userText(req))
		// Only new (unanswered) messages count: earlier ones are context.
		var fresh []string
		for _, line := range strings.Split(user, "\n") {
			if strings.HasPrefix(line, "<message ") {
				fresh = append(fresh, line)
			}
		}
		if len(fresh) != 1 {
			t.Errorf("run %d has %d new messages, want 1:\n%s", i, len(fresh), user)
		}
	}
	if c := h.cursor("family"); c < h.lastSeq(famChat) {
		t.Errorf("cursor %d, want at least %d (every message handled)", c, h.lastSeq(famChat))
	}
}

// A task in a main group that is a DM leaves the chat a DM.
func TestTaskKeepsTheChatKind(t *testing.T) {
	h := newHarness(t, echoLLM(), nil)
	h.start()
	h.say(mainChat, "Me", "what time is it", func(in *channels.Inbound) { in.IsGroup = false })
	task := famTask(1, "pay the rent", false)
	task.Chat, task.MessageID = mainChat, "task-1-1740841200"
	if err := h.a.DeliverTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	h.idle()
	chats, err := h.st.Chats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chats {
		if c.ID == mainChat && c.IsGroup {
			t.Errorf("the DM became a group after a task: %+v", c)
		}
	}
}
