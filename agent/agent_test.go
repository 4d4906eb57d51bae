package agent

import (
	"context"
	"encoding/base64"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

const (
	catRef = "tg_CATcat0001xyz"
	dogRef = "tg_DOGdog0002xyz"
)

// The whole lazy-media path: the model first sees only placeholders, asks
// for the one photo the question is about, sees it as an image, and the
// answer reaches the chat. The other photo is never fetched, and the
// transcript keeps the image as a file reference, never as base64.
func TestPhotoQuestionFetchesOnlyWhatIsAsked(t *testing.T) {
	cat := tinyPNG(t, color.RGBA{R: 255, A: 255})
	dog := tinyPNG(t, color.RGBA{B: 255, A: 255})
	var seenImage string
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		switch n {
		case 1:
			if !strings.Contains(userText(*req), "ref:"+catRef+"] my cat") {
				t.Errorf("first request lacks the placeholder:\n%s", userText(*req))
			}
			if !slices.Contains(toolNames(req.Tools), "fetch_media") {
				t.Errorf("tools offered: %v", toolNames(req.Tools))
			}
			return toolCall("c1", "fetch_media", `{"mediaRef":"`+catRef+`"}`), nil
		case 2:
			last := req.Messages[len(req.Messages)-1]
			if last.Role != llm.RoleTool || len(last.Parts) != 1 || last.Parts[0].ToolResult == nil {
				t.Fatalf("second request does not end with a tool result: %+v", last)
			}
			for _, p := range last.Parts[0].ToolResult.Content {
				if p.Kind == llm.PartMedia && strings.HasPrefix(p.Media.MIME, "image/") {
					seenImage = p.Media.Path
					if p.Media.Data != "" {
						t.Error("image part carries inline bytes; want a file reference")
					}
				}
			}
			return textResult("<internal>red pixels</internal>It is a red square, your cat must be shy."), nil
		}
		return nil, errScript
	})
	h := newHarness(t, f, nil)
	h.media[catRef] = fakeMedia{Kind: "Image", Name: "cat.png", MIME: "image/png", Data: cat}
	h.media[dogRef] = fakeMedia{Kind: "Image", Name: "dog.png", MIME: "image/png", Data: dog}
	h.start()

	h.say(famChat, "Alice", "[Image: cat.png, 1KB, image/png, ref:"+catRef+"] my cat")
	h.say(famChat, "Bob", "[Image: dog.png, 1KB, image/png, ref:"+dogRef+"] and my dog")
	q := h.say(famChat, "Carol", "@Andy what is in the photo of the cat?")
	h.idle()

	sent := h.tg.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages: %q", len(sent), sentTexts(sent))
	}
	want := channels.OutMessage{Chat: famChat, Text: "It is a red square, your cat must be shy.", ReplyTo: q}
	if sent[0] != want {
		t.Errorf("sent %+v, want %+v", sent[0], want)
	}
	if f.calls() != 2 {
		t.Errorf("model called %d times, want 2", f.calls())
	}
	if seenImage == "" {
		t.Fatal("the model never got an image part")
	}
	if b, err := os.ReadFile(seenImage); err != nil || string(b) != string(cat) {
		t.Errorf("image part file %s: %v (matches cat: %v)", seenImage, err, string(b) == string(cat))
	}
	host := h.hosts["family"]
	if host.fetched(catRef) != 1 || host.fetched(dogRef) != 0 {
		t.Errorf("fetches cat=%d dog=%d, want 1 and 0", host.fetched(catRef), host.fetched(dogRef))
	}
	if got, want := h.cursor("family"), h.lastSeq(famChat); got != want {
		t.Errorf("cursor = %d, want %d", got, want)
	}
	if h.tg.Typing(famChat) {
		t.Error("typing indicator left on")
	}

	// The transcript has the whole exchange, with the image by path only.
	var all strings.Builder
	rows, err := h.st.DB.Query(`SELECT role, parts FROM agent_transcripts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for rows.Next() {
		var role, parts string
		rows.Scan(&role, &parts)
		roles = append(roles, role)
		all.WriteString(parts)
	}
	rows.Close()
	if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant"}) {
		t.Errorf("transcript roles = %v", roles)
	}
	tr := all.String()
	for _, img := range [][]byte{cat, dog} {
		b64 := base64.StdEncoding.EncodeToString(img)
		if strings.Contains(tr, b64) || strings.Contains(tr, b64[:24]) {
			t.Error("transcript holds base64 image data")
		}
	}
	if strings.Contains(tr, "iVBORw0KGgo") || regexp.MustCompile(`[A-Za-z0-9+/]{200,}`).MatchString(tr) {
		t.Error("transcript holds a long base64 run")
	}
	// The model is pointed at the file fetch_media saved; the inline
	// bytes are not written to disk a second time.
	if !strings.Contains(tr, `"path":"`+filepath.Join(h.groupsDir, "family", "media", "tg_CATcat0001xyz_cat.png")+`"`) || !strings.Contains(tr, `"kind":"media"`) {
		t.Errorf("transcript lacks the image reference: %s", tr)
	}
	if left, _ := os.ReadDir(filepath.Join(h.groupsDir, "family", "media", "inline")); len(left) != 0 {
		t.Errorf("inline image written again: %v", left)
	}
	runs, err := h.st.Runs(context.Background(), "family", 10)
	if err != nil || len(runs) != 1 || runs[0].Outcome != "answered" || runs[0].Iterations != 2 {
		t.Errorf("runs = %+v, %v", runs, err)
	}
}

func toolNames(ts []llm.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestTriggerTable(t *testing.T) {
	gs := map[string]*groups.Group{
		"trigger group": {Folder: "family", Chat: famChat, Trigger: "@Andy", RequiresTrigger: true},
		"main":          {Folder: "main", Chat: mainChat, Trigger: "@Andy", RequiresTrigger: true, Main: true},
		"open":          {Folder: "work", Chat: workChat, Trigger: "@Andy"},
	}
	cases := []struct {
		name  string
		group string
		in    channels.Inbound
		want  bool
	}{
		{"trigger word", "trigger group", channels.Inbound{Text: "@andy what's up"}, true},
		{"trigger word after spaces", "trigger group", channels.Inbound{Text: "  @Andy, hi"}, true},
		{"mention without trigger word", "trigger group", channels.Inbound{Text: "hey bot", Mentioned: true}, true},
		{"dm is mentioned", "trigger group", channels.Inbound{Text: "hello", Mentioned: true, IsGroup: false}, true},
		{"main group plain message", "main", channels.Inbound{Text: "hello"}, true},
		{"requires_trigger false", "open", channels.Inbound{Text: "hello"}, true},
		{"plain message in trigger group", "trigger group", channels.Inbound{Text: "hello all"}, false},
		{"trigger word mid-sentence", "trigger group", channels.Inbound{Text: "ask @Andy later"}, false},
		{"trigger word as prefix of a name", "trigger group", channels.Inbound{Text: "@Andyson hi"}, false},
		{"bot message with trigger", "trigger group", channels.Inbound{Text: "@Andy hi", IsBot: true}, false},
		{"own message with trigger", "trigger group", channels.Inbound{Text: "@Andy hi", FromMe: true}, false},
		{"own message in main", "main", channels.Inbound{Text: "hi", FromMe: true}, false},
		{"bot message in open group", "open", channels.Inbound{Text: "hi", IsBot: true, Mentioned: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Triggers(gs[c.group], c.in); got != c.want {
				t.Errorf("Triggers = %v, want %v", got, c.want)
			}
		})
	}
}

// Deliver stores everything of registered chats, records triggers, keeps
// only metadata of unregistered chats, applies edits without triggering.
func TestDeliverStoresAndRecordsTriggers(t *testing.T) {
	h := newHarness(t, newFakeLLM(nil), nil) // not started: nothing runs
	ctx := context.Background()
	h.say(famChat, "Alice", "hello all")
	if _, ok, _ := h.st.LastTrigger(ctx, "family"); ok {
		t.Error("plain message recorded a trigger")
	}
	id := h.say(famChat, "Alice", "@Andy hi")
	tr, ok, err := h.st.LastTrigger(ctx, "family")
	if !ok || err != nil || tr.MessageID != id || tr.Seq != h.lastSeq(famChat) {
		t.Errorf("trigger = %+v %v %v", tr, ok, err)
	}
	h.say(famChat, "Bot", "@Andy hi", isBot)
	if tr2, _, _ := h.st.LastTrigger(ctx, "family"); tr2 != tr {
		t.Errorf("bot message moved the trigger to %+v", tr2)
	}

	// Edit: text replaced, no new trigger.
	h.a.Deliver(ctx, channels.Inbound{ChatID: famChat, ID: "101", Text: "@Andy edited", Edit: true, Time: time.Now()})
	m, err := h.st.Message(ctx, famChat, "101")
	if err != nil || m.Text != "@Andy edited" {
		t.Errorf("edited message = %+v, %v", m, err)
	}
	if tr3, _, _ := h.st.LastTrigger(ctx, "family"); tr3 != tr {
		t.Errorf("edit moved the trigger to %+v", tr3)
	}

	// Unregistered chat: the chat is known, its text is not kept.
	h.say("telegram:-999", "Mallory", "@Andy secret")
	chats, _ := h.st.Chats(ctx)
	if !slices.ContainsFunc(chats, func(c store.Chat) bool { return c.ID == "telegram:-999" }) {
		t.Error("unregistered chat not stored")
	}
	if h.lastSeq("telegram:-999") != 0 {
		t.Error("message text of an unregistered chat was stored")
	}
	if h.a.Registered("telegram:-999") || !h.a.Registered(famChat) {
		t.Error("Registered is wrong")
	}
}

func TestMigratedChatFollowsGroup(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("hi from the supergroup"), nil
	})
	h := newHarness(t, f, nil)
	h.start()
	h.a.Migrated(context.Background(), famChat, "telegram:-1002")
	if !h.a.Registered("telegram:-1002") {
		t.Fatal("new chat id not registered")
	}
	h.say("telegram:-1002", "Alice", "@Andy hello")
	h.idle()
	sent := h.tg.Sent()
	if len(sent) != 1 || sent[0].Chat != "telegram:-1002" {
		t.Errorf("sent %+v", sent)
	}
}

// Messages that arrive while a run is busy are answered together by one
// next run.
func TestMessagesDuringARunFoldIntoOneNextRun(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 10)
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		entered <- struct{}{}
		if n == 1 {
			<-gate
		}
		return textResult("answer " + string(rune('0'+n))), nil
	})
	h := newHarness(t, f, nil)
	h.start()
	h.say(famChat, "Alice", "@Andy first question")
	<-entered
	h.say(famChat, "Bob", "@Andy second")
	h.say(famChat, "Carol", "@Andy third")
	h.say(famChat, "Dan", "just chatting")
	h.say(famChat, "Erin", "@Andy fourth")
	close(gate)
	h.idle()

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("model called %d times, want 2 (one run + one folded run)", len(reqs))
	}
	first, second := userText(reqs[0]), userText(reqs[1])
	if !strings.Contains(first, "first question") || strings.Contains(first, "second") {
		t.Errorf("first run saw:\n%s", first)
	}
	for _, want := range []string{"second", "third", "just chatting", "fourth"} {
		if !strings.Contains(second, want) {
			t.Errorf("folded run lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "first question") {
		t.Errorf("folded run repeats the answered message:\n%s", second)
	}
	if !strings.Contains(second, `<message sender="Andy" time="`) || !strings.Contains(second, `from_you="true">answer 1</message>`) {
		t.Errorf("folded run does not show the assistant's previous answer:\n%s", second)
	}
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{"answer 1", "answer 2"}) {
		t.Errorf("sent %q", got)
	}
	if f.maxGroup != 1 {
		t.Errorf("a group had %d concurrent runs", f.maxGroup)
	}
}

// Different groups run in parallel up to MaxConcurrent, never more.
func TestGroupsRunInParallelWithinTheGlobalLimit(t *testing.T) {
	release := make(chan struct{})
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		<-release
		return textResult("ok " + groupOf(req)), nil
	})
	h := newHarness(t, f, func(o *Options) { o.Intake.MaxConcurrent = 2 })
	h.start()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // a failed check must not leave the runs to block the harness's stop
	h.say(famChat, "Alice", "@Andy one")
	h.say(mainChat, "Me", "two")
	h.say(workChat, "Wes", "three")
	testwait.Until(t, "two runs in flight", func() bool { return f.calls() == 2 })
	// The third group's worker is blocked waiting for a slot, not merely
	// slower than a sleep: without the limit it would never park there and
	// this wait would fail instead.
	testwait.Until(t, "the third group waiting for a run slot", func() bool { return workersAwaitingSlot() == 1 })
	if n := f.calls(); n != 2 {
		t.Errorf("%d runs started with MaxConcurrent 2", n)
	}
	// What /metrics shows as botd_agent_runs_in_flight and _queue_depth.
	if running, waiting := h.a.Queue(); running != 2 || waiting != 1 {
		t.Errorf("Queue() = %d running, %d waiting; want 2 and 1", running, waiting)
	}
	h.say(famChat, "Bob", "@Andy again") // folded or queued, never parallel to family's run
	free()
	h.idle()
	if f.maxTotal != 2 {
		t.Errorf("max concurrent runs = %d, want 2", f.maxTotal)
	}
	if running, waiting := h.a.Queue(); running != 0 || waiting != 0 {
		t.Errorf("Queue() when idle = %d running, %d waiting; want none", running, waiting)
	}
	if f.maxGroup != 1 {
		t.Errorf("max concurrent runs of one group = %d, want 1", f.maxGroup)
	}
	if n := len(h.tg.Sent()) + len(h.sl.Sent()); n < 3 {
		t.Errorf("%d answers sent, want at least one per group", n)
	}
	if got := h.sl.Sent(); len(got) != 1 || got[0].Text != "ok Work" {
		t.Errorf("slack got %+v", got)
	}
}

// An answer written to the outbox before a crash is delivered at the next
// start exactly once and never regenerated; the cursor follows.
func TestPendingOutboxIsDeliveredOnceAtStart(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		t.Error("the model was asked again for an answer already in the outbox")
		return nil, errScript
	})
	h := newHarness(t, f, nil)
	ctx := context.Background()
	q := h.say(famChat, "Alice", "@Andy when is dinner?")
	seq := h.lastSeq(famChat)
	if _, err := outboxdb.New(h.st).Add(ctx, outboxdb.Item{Folder: "family", ChatID: famChat, UpToSeq: seq, Text: "At seven.", ReplyTo: q}); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.idle()
	if got := h.tg.Sent(); len(got) != 1 || got[0].Text != "At seven." || got[0].ReplyTo != q {
		t.Fatalf("sent %+v", got)
	}
	if h.cursor("family") != seq {
		t.Errorf("cursor = %d, want %d", h.cursor("family"), seq)
	}
	h.restart(nil)
	h.idle()
	if got := h.tg.Sent(); len(got) != 1 {
		t.Errorf("after another restart sent %q", sentTexts(got))
	}
}

// A crash mid-delivery resends only the parts that did not go out.
func TestPartlyDeliveredOutboxResumes(t *testing.T) {
	h := newHarness(t, newFakeLLM(nil), nil)
	ctx := context.Background()
	h.say(famChat, "Alice", "@Andy the files please")
	dir := filepath.Join(h.groupsDir, "family", "media")
	os.MkdirAll(dir, 0o750)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o640)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("B"), 0o640)
	id, _ := outboxdb.New(h.st).Add(ctx, outboxdb.Item{Folder: "family", ChatID: famChat, UpToSeq: h.lastSeq(famChat),
		Text: "Here they are.", Media: []string{"media/a.txt", "media/b.txt"}})
	outboxdb.New(h.st).Progress(ctx, id, 2) // the text and a.txt went out before the crash
	h.start()
	h.idle()
	if got := h.tg.Sent(); len(got) != 0 {
		t.Errorf("text resent: %q", sentTexts(got))
	}
	files := h.tg.Files()
	if len(files) != 1 || string(files[0].Data) != "B" {
		t.Errorf("files sent: %+v", files)
	}
}

// A crash after the model answered but before the outbox write loses
// nothing: the restart runs the group again and the answer goes out once.
func TestCrashBeforeOutboxReruns(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("Dinner is at seven."), nil
	})
	h := newHarness(t, f, func(o *Options) {
		o.Hooks.BeforeOutbox = func(string) error { return errScript } // "crash"
	})
	h.start()
	h.say(famChat, "Alice", "@Andy when is dinner?")
	h.idle()
	if got := h.tg.Sent(); len(got) != 0 {
		t.Fatalf("sent before the outbox write: %q", sentTexts(got))
	}
	if h.cursor("family") != 0 {
		t.Fatal("cursor moved without a delivered answer")
	}
	h.restart(nil)
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{"Dinner is at seven."}) {
		t.Errorf("sent %q", got)
	}
	if f.calls() != 2 {
		t.Errorf("model calls = %d, want 2 (the lost run and the rerun)", f.calls())
	}
	h.restart(nil)
	h.idle()
	if got := h.tg.Sent(); len(got) != 1 || f.calls() != 2 {
		t.Errorf("a further restart sent %q / called the model %d times", sentTexts(got), f.calls())
	}
}

// A failed send stays in the outbox, is retried with backoff and, once
// the channel recovers, delivered once.
func TestFailedSendIsRetriedFromTheOutbox(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("pong"), nil
	})
	var mu sync.Mutex
	tries := 0
	var h *harness
	h = newHarness(t, f, func(o *Options) {
		o.Intake.RetryDelay = func(try int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			tries = try
			if try == 2 {
				h.tg.FailSends(nil) // the network is back for the third attempt
			}
			return time.Millisecond
		}
	})
	h.tg.FailSends(chantest.ErrBoom)
	h.start()
	h.say(famChat, "Alice", "@Andy ping")
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{"pong"}) {
		t.Errorf("sent %q", got)
	}
	if f.calls() != 1 {
		t.Errorf("model called %d times; a send failure must not regenerate", f.calls())
	}
	if tries != 2 {
		t.Errorf("retries = %d, want 2", tries)
	}
	if h.cursor("family") != h.lastSeq(famChat) {
		t.Error("cursor not advanced after the late delivery")
	}
}

func TestIterationLimitApologises(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return toolCall("c"+string(rune('0'+n)), "list_media", `{}`), nil
	})
	h := newHarness(t, f, func(o *Options) { o.Run.MaxIterations = 3 })
	h.start()
	h.say(famChat, "Alice", "@Andy loop forever")
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{msgIterations}) {
		t.Errorf("sent %q", got)
	}
	if f.calls() != 3 {
		t.Errorf("model calls = %d, want 3", f.calls())
	}
	if h.cursor("family") != h.lastSeq(famChat) {
		t.Error("an apology must close the run: cursor not advanced")
	}
}

func TestDeadlineApologises(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		<-ctx.Done()
		return nil, llm.AsError("fake", ctx.Err())
	})
	h := newHarness(t, f, func(o *Options) { o.Run.Timeout = 50 * time.Millisecond })
	h.start()
	h.say(famChat, "Alice", "@Andy think hard")
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{msgTimeout}) {
		t.Errorf("sent %q", got)
	}
	if f.calls() != 1 {
		t.Errorf("model calls = %d, want 1", f.calls())
	}
}

// A provider outage: one short message to the chat, retries with the
// backoff schedule, five tries in all, then quiet until someone asks again.
func TestProviderFailureRetriesWithBackoffThenGivesUp(t *testing.T) {
	var mu sync.Mutex
	failing := true
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return nil, llm.NewError("fake", llm.KindOverloaded, "overloaded")
		}
		return textResult("back again"), nil
	})
	var delays []int
	h := newHarness(t, f, func(o *Options) {
		o.Intake.RetryDelay = func(try int) time.Duration {
			mu.Lock()
			delays = append(delays, try)
			mu.Unlock()
			return time.Duration(try) * time.Millisecond
		}
	})
	h.start()
	h.say(famChat, "Alice", "@Andy are you there?", thread("T1"))
	h.idle()
	if f.calls() != 5 {
		t.Errorf("model calls = %d, want 5", f.calls())
	}
	if !slices.Equal(delays, []int{1, 2, 3, 4}) {
		t.Errorf("backoff tries = %v, want [1 2 3 4]", delays)
	}
	sent := h.tg.Sent()
	if len(sent) != 1 || sent[0].Text != msgModelFailed || sent[0].ThreadID != "T1" {
		t.Fatalf("sent %+v, want one failure note in the thread", sent)
	}
	if h.cursor("family") != 0 {
		t.Error("cursor moved without an answer")
	}

	// Quiet after giving up: idle above means no run in flight and no
	// retry scheduled, so nothing can call the model again until a new
	// message arrives; waiting longer would prove nothing more. A new
	// question runs again and answers both.
	if f.calls() != 5 {
		t.Errorf("model called again after giving up: %d", f.calls())
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	h.say(famChat, "Alice", "@Andy hello?")
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{msgModelFailed, "back again"}) {
		t.Errorf("sent %q", got)
	}
	last := f.requests()[f.calls()-1]
	if u := userText(last); !strings.Contains(u, "are you there?") || !strings.Contains(u, "hello?") {
		t.Errorf("the answering run did not cover both questions:\n%s", u)
	}
}

// Slack answers go into the thread of the triggering message.
func TestAnswerGoesToTheThread(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("in thread"), nil
	})
	h := newHarness(t, f, nil)
	h.start()
	h.say(workChat, "Wes", "question", thread("1712.0001"))
	h.idle()
	got := h.sl.Sent()
	if len(got) != 1 || got[0].ThreadID != "1712.0001" || got[0].ReplyTo != "" {
		t.Errorf("sent %+v", got)
	}
}

// The daemon builds channels with the agent as their sink, then adds them.
func TestAddChannelBeforeStart(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("via added channel"), nil
	})
	h := newHarness(t, f, func(o *Options) { o.Channels = nil })
	wa := chantest.New("whatsapp")
	if err := h.a.AddChannel(h.tg); err != nil {
		t.Fatal(err)
	}
	h.a.AddChannel(wa)
	// A message heard before Start is stored and answered once started.
	h.say(famChat, "Alice", "@Andy early bird")
	h.start()
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{"via added channel"}) {
		t.Errorf("sent %q", got)
	}
	if err := h.a.AddChannel(chantest.New("slack")); err == nil {
		t.Error("AddChannel after Start succeeded")
	}
}

// Shutdown mid-run: Wait returns, nothing is sent, and the next start
// answers the question.
func TestShutdownMidRunResumesAfterRestart(t *testing.T) {
	entered := make(chan struct{}, 1)
	var mu sync.Mutex
	block := true
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		mu.Lock()
		b := block
		mu.Unlock()
		if b {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, llm.AsError("fake", ctx.Err())
		}
		return textResult("answered after restart"), nil
	})
	h := newHarness(t, f, nil)
	h.start()
	h.say(famChat, "Alice", "@Andy slow one")
	<-entered
	done := make(chan struct{})
	go func() { h.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(chantest.HangGuard):
		t.Fatal("Wait did not return after cancel")
	}
	if len(h.tg.Sent()) != 0 || h.cursor("family") != 0 {
		t.Fatalf("shutdown sent %q / moved the cursor", sentTexts(h.tg.Sent()))
	}
	mu.Lock()
	block = false
	mu.Unlock()
	h.restart(nil)
	h.idle()
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{"answered after restart"}) {
		t.Errorf("sent %q", got)
	}
}

// RunDone hears every run once it is recorded, with how it ended: what
// botd's metrics count.
func TestRunDoneHearsEachRecordedRun(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		if n == 2 {
			return nil, &llm.Error{Kind: llm.KindAuth, Message: "bad key"}
		}
		return textResult("fine"), nil
	})
	var mu sync.Mutex
	var done []store.AgentRun
	h := newHarness(t, f, func(o *Options) {
		o.Intake.MaxTries = 1
		o.Hooks.RunDone = func(r store.AgentRun) {
			mu.Lock()
			done = append(done, r)
			mu.Unlock()
		}
	})
	h.start()
	h.say(famChat, "Alice", "@Andy one")
	h.idle()
	h.say(famChat, "Bob", "@Andy two")
	h.idle()
	mu.Lock()
	defer mu.Unlock()
	if len(done) != 2 {
		t.Fatalf("RunDone heard %d runs, want 2", len(done))
	}
	for i, want := range []string{"answered", "model_failed"} {
		if done[i].Outcome != want || done[i].ID == "" || done[i].Finished.Before(done[i].Started) {
			t.Errorf("run %d: outcome %q id %q, want %q with its times", i, done[i].Outcome, done[i].ID, want)
		}
	}
}
