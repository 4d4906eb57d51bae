package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// fakeModel is an LLM server speaking either the OpenAI chat completions
// or the Anthropic messages wire format (streamed). It looks at the newest
// photo placeholder before the question, asks for it with fetch_media, and
// once the tool result holds the image, answers.
type fakeModel struct {
	t      *testing.T
	wire   string // openai | anthropic
	answer string
	srv    *httptest.Server

	mu       sync.Mutex
	requests []string
}

func newFakeModel(t *testing.T, wire, answer string) *fakeModel {
	m := &fakeModel{t: t, wire: wire, answer: answer}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeModel) Requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.requests...)
}

// askedRef finds the photo a question is about: captioned "look at this",
// or captioned with the trigger and the question itself. Telegram renders
// a caption after the placeholder on the same line; Slack puts a file
// share's text on the next line (a JSON-escaped newline in the body).
var askedRef = regexp.MustCompile(`ref:((?:tg|sl)_[0-9A-Za-z]+)\](?: |\n|\\n)(?:@Andy )?look at this`)

// A question the fake model answers with markerAnswer: a test asks it last
// and waits for the answer to know every earlier piece of work is done.
const (
	markerQuestion = "marker: anything else?"
	markerAnswer   = "Marker answered."
)

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.requests = append(m.requests, string(body))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	hasToolResult := strings.Contains(string(body), `"tool_call_id"`) || strings.Contains(string(body), `"tool_result"`)
	if strings.Contains(string(body), markerQuestion) {
		m.text(w, markerAnswer)
		return
	}
	if !hasToolResult {
		ref := askedRef.FindStringSubmatch(newText(body))
		if ref == nil {
			m.text(w, m.answer)
			return
		}
		m.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, ref[1]))
		return
	}
	m.text(w, m.answer)
}

func sse(w io.Writer, event, data string) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
}

func (m *fakeModel) toolCall(w io.Writer, name, args string) {
	argsJSON, _ := json.Marshal(args)
	switch m.wire {
	case "openai":
		sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"`+name+`","arguments":""}}]},"finish_reason":null}]}`)
		sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+string(argsJSON)+`}}]},"finish_reason":null}]}`)
		sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		sse(w, "", `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`)
		sse(w, "", `[DONE]`)
	case "anthropic":
		sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}}}`)
		sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"`+name+`","input":{}}}`)
		sse(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(argsJSON)+`}}`)
		sse(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
		sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":10}}`)
		sse(w, "message_stop", `{"type":"message_stop"}`)
	}
}

func (m *fakeModel) text(w io.Writer, text string) {
	t, _ := json.Marshal(text)
	switch m.wire {
	case "openai":
		sse(w, "", `{"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":`+string(t)+`},"finish_reason":null}]}`)
		sse(w, "", `{"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		sse(w, "", `[DONE]`)
	case "anthropic":
		sse(w, "message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":200,"output_tokens":1}}}`)
		sse(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		sse(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(t)+`}}`)
		sse(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
		sse(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":8}}`)
		sse(w, "message_stop", `{"type":"message_stop"}`)
	}
}

const agentConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: %s, api_key: test-key-not-real, base_url: "%s"}
  model: {provider: fake, name: %s}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

type agentRig struct {
	dir   string
	tg    *telegramtest.Server
	proxy *stallProxy
	model *fakeModel
}

func newAgentRig(t *testing.T, wire, answer string) *agentRig {
	t.Helper()
	r := &agentRig{dir: t.TempDir(), tg: telegramtest.New(t), model: newFakeModel(t, wire, answer)}
	r.proxy = newStallProxy(t, r.tg.URL())
	base, model := r.model.srv.URL+"/v1", "gpt-4.1"
	if wire == "anthropic" {
		base, model = r.model.srv.URL, "claude-sonnet-4-5"
	}
	writeFile(t, filepath.Join(r.dir, "botd.yaml"), fmt.Sprintf(agentConfig, telegramtest.Token, r.proxy.srv.URL, wire, base, model))
	return r
}

func (r *agentRig) answers(text string) []telegramtest.Sent {
	var out []telegramtest.Sent
	for _, s := range r.tg.Sent() {
		if strings.Contains(s.String(), text) {
			out = append(out, s)
		}
	}
	return out
}

func TestAgentAnswersAboutAPhotoEndToEnd(t *testing.T) {
	for _, wire := range []string{"openai", "anthropic"} {
		t.Run(wire, func(t *testing.T) {
			const answer = "It is a small test pattern."
			r := newAgentRig(t, wire, answer)
			// Phone-camera-like photos: noisy JPEGs of ~100 KB each.
			asked := noisyJPEG(t, 200, 150)
			var sizes int
			var updates []models.Update
			// 49 photos nobody asks about, then the one the question is about.
			for i := 0; i < 49; i++ {
				data := noisyJPEG(t, 150+i, 150)
				sizes += len(data)
				id := fmt.Sprintf("other-%02d", i)
				r.tg.AddFile(telegramtest.File{ID: id, Data: data})
				updates = append(updates, photoUpdate(-100, 10+i, id, len(data), "unrelated"))
			}
			r.tg.AddFile(telegramtest.File{ID: "asked", Data: asked})
			updates = append(updates, photoUpdate(-100, 100, "asked", len(asked), "look at this"))
			r.tg.Enqueue(updates...)

			host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
			host.waitLog(t, "botd running")
			// Confirmed means stored: the channel holds back the poll that
			// confirms updates until the agent has every one of them.
			testwait.Within(t, 30*time.Second, "r.tg.Pending() == 0", func() bool { return r.tg.Pending() == 0 })

			start := time.Now()
			r.tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), 200, "@Andy what is in the photo?"))
			testwait.Within(t, 60*time.Second, "len(r.answers(answer)) > 0", func() bool { return len(r.answers(answer)) > 0 })
			elapsed := time.Since(start)

			reqs := r.model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model saw %d requests, want 2", len(reqs))
			}
			if !askedRef.MatchString(reqs[0]) {
				t.Errorf("first model request lacks the photo placeholder")
			}
			if strings.Contains(reqs[0], base64.StdEncoding.EncodeToString(asked)) {
				t.Errorf("first request already carries the image bytes (eager)")
			}
			if !strings.Contains(reqs[1], base64.StdEncoding.EncodeToString(asked)) {
				t.Errorf("second model request does not carry the image bytes")
			}
			got := r.answers(answer)
			if len(got) != 1 || !strings.Contains(got[0].String(), "-100") {
				t.Errorf("answers in chat = %v", got)
			}
			if n := r.proxy.fileHits("asked"); n != 1 {
				t.Errorf("asked photo downloaded %d times, want 1", n)
			}
			if n := r.proxy.fileHits("other-"); n != 0 {
				t.Errorf("unasked photos downloaded %d times, want 0", n)
			}
			t.Logf("%s: trigger→reply %v with an instant fake model; bytes downloaded for 50 photos: %d of %d",
				wire, elapsed.Round(time.Millisecond), r.proxy.bytesServed(), sizes+len(asked))
			host.stop(t)
		})
	}
}

// Kill botd while the answer is on its way to Telegram; after a restart
// it is delivered exactly once.
//   - In a private chat the answer is shown as drafts while written, so
//     when the final sendMessage hangs the answer is in the outbox: the
//     restart delivers it and the model is not asked again.
//   - In a group the first words go out as the message that grows; when
//     that sendMessage hangs nothing was answered yet (the outbox is
//     written after the live message began): the restart asks the model
//     once more and answers once.
func TestAgentAnswerSurvivesACrash(t *testing.T) {
	const answer = "Crash-proof hello."
	ann := telegramtest.Person(42, "Ann")
	for _, tc := range []struct {
		name      string
		chat      models.Chat
		question  string
		askedMore int // model requests about the question after the restart
	}{
		{"private chat, answer in the outbox", telegramtest.Private(ann), "say hello", 0},
		{"group, live message not begun", telegramtest.Group(-100, "Family"), "@Andy say hello", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newAgentRig(t, "openai", answer)
			cfg, err := os.ReadFile(filepath.Join(r.dir, "botd.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(r.dir, "botd.yaml"), string(cfg)+
				`  - {folder: ann, name: Ann, chat: "telegram:42", requires_trigger: false}`+"\n")
			sent := func(text string) int {
				n := 0
				for _, s := range r.tg.Sent() {
					if s.Method == "sendMessage" && s.ChatID == tc.chat.ID && strings.Contains(s.Text, text) {
						n++
					}
				}
				return n
			}
			r.proxy.holdMethod("sendMessage")
			host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
			host.waitLog(t, "botd running")
			r.tg.Enqueue(telegramtest.Text(tc.chat, ann, 1, tc.question))
			testwait.Within(t, 60*time.Second, "r.proxy.held() > 0", func() bool { return r.proxy.held() > 0 })
			host.kill()
			calls := len(r.model.Requests())
			if sent(answer) != 0 {
				t.Fatal("the answer reached Telegram before the crash")
			}
			r.proxy.release()

			host2 := startBotd(t, r.dir, "run", "--config", "botd.yaml")
			host2.waitLog(t, "botd running")
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("telegram saw: %v; sendMessage calls %d", r.tg.Sent(), r.tg.Calls("sendMessage"))
				}
			})
			testwait.Within(t, 60*time.Second, "the answer sent", func() bool { return sent(answer) > 0 })
			// Instead of waiting "long enough" for a wrong second delivery,
			// ask a marker question and wait for its answer: the chat's
			// runs are serial and each first delivers what the outbox
			// owes, so a resend or another run for the question would
			// have happened before it.
			marker := markerQuestion
			if tc.chat.ID < 0 {
				marker = "@Andy " + marker
			}
			r.tg.Enqueue(telegramtest.Text(tc.chat, ann, 2, marker))
			testwait.Within(t, 60*time.Second, "the marker answered", func() bool { return sent(markerAnswer) > 0 })
			if n := sent(answer); n != 1 {
				t.Errorf("answer delivered %d times, want 1", n)
			}
			if n := sent(markerAnswer); n != 1 {
				t.Errorf("marker answered %d times, want 1", n)
			}
			// The marker's run sees only messages past the cursor: the
			// question in it would mean the delivered answer did not move
			// the cursor.
			asked := 0
			for _, req := range r.model.Requests()[calls:] {
				conv := req[strings.Index(req, "<messages"):]
				switch {
				case !strings.Contains(conv, markerQuestion):
					asked++
				case strings.Contains(conv, tc.question+"</message>"):
					t.Errorf("the marker's run was asked the answered question again:\n%.600s", conv)
				}
			}
			if asked != tc.askedMore {
				t.Errorf("after the restart the model was asked the question %d times, want %d", asked, tc.askedMore)
			}
			host2.stop(t)
		})
	}
}

// A photo whose caption starts with the trigger is a question about that
// photo: no separate message is needed, and the model fetches that photo.
func TestAgentAnswersAPhotoCaptionedWithTheTrigger(t *testing.T) {
	const answer = "It is a noisy test photo."
	r := newAgentRig(t, "openai", answer)
	asked := noisyJPEG(t, 200, 150)
	other := noisyJPEG(t, 180, 150)
	r.tg.AddFile(telegramtest.File{ID: "other", Data: other})
	r.tg.AddFile(telegramtest.File{ID: "asked", Data: asked})
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	r.tg.Enqueue(
		photoUpdate(-100, 10, "other", len(other), "an earlier photo"),
		photoUpdate(-100, 11, "asked", len(asked), "@Andy look at this"),
	)
	testwait.Within(t, 60*time.Second, "len(r.answers(answer)) > 0", func() bool { return len(r.answers(answer)) > 0 })

	reqs := r.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model saw %d requests, want 2 (question, then the fetched photo)", len(reqs))
	}
	if !strings.Contains(reqs[1], base64.StdEncoding.EncodeToString(asked)) {
		t.Errorf("the model was not given the captioned photo")
	}
	if n := r.proxy.fileHits("other"); n != 0 {
		t.Errorf("the other photo was downloaded %d times, want 0", n)
	}
	host.stop(t)
}

// A question that replies to a photo posted long before (outside the
// agent.max_messages window) is answered about that photo: the replied-to
// message comes with its placeholder, and the model fetches that photo.
func TestAgentAnswersAReplyToAnOldPhoto(t *testing.T) {
	const answer = "That old photo shows noise."
	r := newAgentRig(t, "openai", answer)
	asked := noisyJPEG(t, 200, 150)
	r.tg.AddFile(telegramtest.File{ID: "asked", Data: asked})
	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	updates := []models.Update{photoUpdate(-100, 10, "asked", len(asked), "look at this")}
	for i := 0; i < 40; i++ { // more than agent.max_messages (30)
		updates = append(updates, telegramtest.Text(group, ann, 20+i, fmt.Sprintf("chatter %d", i)))
	}
	r.tg.Enqueue(updates...)
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	testwait.Within(t, 30*time.Second, "r.tg.Pending() == 0", func() bool { return r.tg.Pending() == 0 })

	q := telegramtest.Text(group, ann, 100, "@Andy what is in this one?")
	q.Message.ReplyToMessage = &models.Message{ID: 10, Chat: group, From: &ann, Date: int(time.Now().Unix())}
	r.tg.Enqueue(q)
	testwait.Within(t, 60*time.Second, "len(r.answers(answer)) > 0", func() bool { return len(r.answers(answer)) > 0 })

	reqs := r.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model saw %d requests, want 2 (question with the quoted photo, then the fetched photo)", len(reqs))
	}
	if strings.Contains(reqs[0], "chatter 0") {
		t.Errorf("the window was not bounded: the oldest chatter reached the model")
	}
	if !strings.Contains(reqs[1], base64.StdEncoding.EncodeToString(asked)) {
		t.Errorf("the model was not given the replied-to photo")
	}
	host.stop(t)
}
