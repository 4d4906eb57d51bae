package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/format"
	"github.com/botd-dev/botd/internal/testwait"
)

// liveChunks is an answer as a slow model writes it. Each piece carries a
// word the next check looks for; the whole has what every network must
// format (bold, a list), escape (<, &) and leave alone (an unbalanced **).
var liveChunks = []struct{ text, word string }{
	{"The rota works **in turns**", "rota works"},
	{": <Ann> & Bob swap weekly.\n\n", "swap weekly"},
	{"- Monday: Ann\n- Tuesday: Bob\n\n", "Tuesday"},
	{"Unbalanced ** stays & 2 < 3.", "Unbalanced"},
}

func liveAnswer() string {
	var b strings.Builder
	for _, c := range liveChunks {
		b.WriteString(c.text)
	}
	return b.String()
}

// steppedModel streams liveChunks over the OpenAI wire, one piece per
// step: it writes the first at once and each next one only when the test
// has seen the previous one on the network. So "the answer grows while it
// is written" is observed, not timed.
type steppedModel struct {
	srv  *httptest.Server
	step chan struct{}

	mu       sync.Mutex
	requests int
}

func newSteppedModel(t *testing.T) *steppedModel {
	m := &steppedModel{step: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *steppedModel) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	m.requests++
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	for i, c := range liveChunks {
		if i > 0 {
			select {
			case <-m.step:
			case <-r.Context().Done():
				return
			case <-time.After(2 * time.Minute): // hang guard: the test failed meanwhile
				return
			}
		}
		text, _ := json.Marshal(c.text)
		sse(w, "", `{"id":"s1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":`+string(text)+`},"finish_reason":null}]}`)
		flush()
	}
	sse(w, "", `{"id":"s1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	sse(w, "", `{"id":"s1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":40,"total_tokens":140}}`)
	sse(w, "", `[DONE]`)
	flush()
}

// grow walks the model through its pieces: after each one it waits until
// shown() holds that piece's word, then lets the model write the next.
func (m *steppedModel) grow(t *testing.T, where string, shown func() string) {
	t.Helper()
	for i, c := range liveChunks {
		if i > 0 {
			select {
			case m.step <- struct{}{}:
			case <-time.After(90 * time.Second):
				t.Fatalf("%s: the model was never asked for piece %d", where, i)
			}
		}
		testwait.Within(t, 60*time.Second, fmt.Sprintf("%s shows %q while the answer is written", where, c.word),
			func() bool { return strings.Contains(shown(), c.word) })
	}
}

const liveConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  web: {enabled: true, listen: "127.0.0.1:0"}
  telegram:
    enabled: true
    token: "%s"
    api_url: "%s"
  slack:
    enabled: true
    mode: socket
    bot_token: "%s"
    app_token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: main, name: Main, chat: "web:main", main: true}
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
  - {folder: ann, name: Ann, chat: "telegram:42", requires_trigger: false}
  - {folder: team, name: Team, chat: "slack:C0TEAM01", requires_trigger: true}
`

// One botd run on four networks and a model that writes slowly: each
// answer is seen growing where the network can show it, and ends as that
// network's formatting of the whole answer, sent once.
func TestLiveAnswersEndToEnd(t *testing.T) {
	const channel = "C0TEAM01"
	dir := t.TempDir()
	tg := telegramtest.New(t)
	sl := slackfake.New(t)
	sl.SetUser("UANN0001", "Ann")
	sl.SetChannel(channel, "team")
	model := newSteppedModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(liveConfig, telegramtest.Token, tg.URL(),
		slackfake.BotToken, slackfake.AppToken, sl.APIURL(), model.srv.URL))

	host := startBotdEnv(t, dir, minimalEnv(t.TempDir()), "run", "--config", "botd.yaml")
	base, token := host.urlLine(t)
	host.waitLog(t, "botd running")
	answer := liveAnswer()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("telegram saw: %v", tg.Sent())
			t.Logf("slack log: %+v", sl.Log())
		}
	})

	t.Run("telegram group: one message grown by edits", func(t *testing.T) {
		tg.Enqueue(telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(7, "Ann"), 1, "@Andy explain the rota"))
		var id int
		model.grow(t, "the Telegram group", func() string {
			for _, s := range tg.Sent() {
				if s.Method == "sendMessage" && s.ChatID == -100 && id == 0 {
					id = s.MessageID
				}
			}
			if id == 0 {
				return ""
			}
			text, mode, _ := tg.Shown(-100, id)
			if mode != "HTML" {
				return text
			}
			shown, _ := format.TelegramText(text)
			return shown
		})
		want := format.Render(answer, format.Telegram, 4096)[0]
		testwait.Within(t, 60*time.Second, "the group's message ends as the whole answer", func() bool {
			text, _, _ := tg.Shown(-100, id)
			return text == want
		})
		var sends, edits int
		for _, s := range tg.Sent() {
			switch {
			case s.ChatID != -100:
			case s.Method == "sendMessage":
				sends++
			case s.Method == "editMessageText" && s.MessageID == id:
				edits++
				if s.ParseMode != "HTML" {
					t.Errorf("an edit went out in parse mode %q: %q", s.ParseMode, s.Text)
				}
			}
		}
		if sends != 1 || edits < len(liveChunks)-1 {
			t.Errorf("%d messages and %d edits, want 1 message grown by at least %d edits", sends, edits, len(liveChunks)-1)
		}
		// Telegram's own parser accepted the final HTML (the fake refuses
		// what Telegram refuses), and it shows formatting, not markup.
		text, mode, _ := tg.Shown(-100, id)
		shown, err := format.TelegramText(text)
		if mode != "HTML" || err != nil {
			t.Fatalf("final message in mode %q: %v", mode, err)
		}
		for _, s := range []string{"<b>in turns</b>", "&lt;Ann&gt; &amp; Bob", "• Tuesday: Bob"} {
			if !strings.Contains(text, s) {
				t.Errorf("final HTML lacks %q:\n%s", s, text)
			}
		}
		if !strings.Contains(shown, "Unbalanced ** stays & 2 < 3.") || strings.Contains(shown, "**in turns") {
			t.Errorf("Telegram shows %q", shown)
		}
		t.Logf("telegram group: 1 message, %d edits", edits)
	})

	t.Run("telegram private chat: drafts, then the message", func(t *testing.T) {
		ann := telegramtest.Person(42, "Ann")
		tg.Enqueue(telegramtest.Text(telegramtest.Private(ann), ann, 2, "explain the rota"))
		drafts := func() []telegramtest.Sent {
			var out []telegramtest.Sent
			for _, s := range tg.Sent() {
				if s.Method == "sendMessageDraft" && s.ChatID == 42 {
					out = append(out, s)
				}
			}
			return out
		}
		final := func() []telegramtest.Sent {
			var out []telegramtest.Sent
			for _, s := range tg.Sent() {
				if s.Method == "sendMessage" && s.ChatID == 42 {
					out = append(out, s)
				}
			}
			return out
		}
		// The last piece may go straight into the message: Finish does
		// not wait for a draft's turn.
		model.grow(t, "the private chat's draft", func() string {
			d := append(drafts(), final()...)
			if len(d) == 0 {
				return ""
			}
			shown, _ := format.TelegramText(d[len(d)-1].Text)
			return shown
		})
		want := format.Render(answer, format.Telegram, 4096)[0]
		testwait.Within(t, 60*time.Second, "the private answer is sent", func() bool { return len(final()) > 0 })
		if f := final(); len(f) != 1 || f[0].Text != want || f[0].ParseMode != "HTML" {
			t.Errorf("private chat got %+v, want one HTML message %q", f, want)
		}
		if n := len(drafts()); n < len(liveChunks)-1 {
			t.Errorf("%d drafts, want one at least per piece before the last (%d)", n, len(liveChunks)-1)
		}
	})

	t.Run("slack thread: the answer grows", func(t *testing.T) {
		if err := sl.WaitConnected(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		root := slackTS(time.Now(), 1)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard only
		defer cancel()
		for _, ev := range []map[string]any{
			slackMessage(channel, "UANN0001", root, "the new rota is up", nil),
			slackMessage(channel, "UANN0001", slackTS(time.Now(), 2), "<@"+slackfake.BotUserID+"> explain the rota",
				map[string]any{"thread_ts": root}),
		} {
			if err := sl.SendEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		var ts string
		model.grow(t, "the Slack thread", func() string {
			for _, m := range sl.Thread(channel, root) {
				if ts == "" && strings.Contains(m.Text, "rota works") {
					ts = m.TS
				}
			}
			m, _ := sl.Message(ts)
			return m.Text
		})
		testwait.Within(t, 60*time.Second, "the Slack answer is finished", func() bool {
			m, _ := sl.Message(ts)
			return !m.Streaming && strings.Contains(m.Text, "2 ") && strings.Contains(m.Text, "3.")
		})
		var answers int
		for _, m := range sl.Thread(channel, root) {
			if strings.Contains(m.Text, "rota works") {
				answers++
			}
		}
		m, _ := sl.Message(ts)
		// A stream carries markdown, which Slack renders (with &, < and >
		// escaped, so no one is pinged); an edited message carries
		// mrkdwn. Either way the whole answer, once.
		streamed := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(answer)
		if answers != 1 || (m.Text != streamed && m.Text != format.Render(answer, format.Slack, 0)[0]) {
			t.Errorf("%d answers in the thread, final text %q", answers, m.Text)
		}
	})

	t.Run("web room: drafts over SSE, then the rendered message", func(t *testing.T) {
		s := webLogin(t, base, token)
		events := s.events()
		s.post("explain the rota")
		type roomMsg struct {
			Assistant bool
			Text      string
			HTML      string
		}
		var last string
		var final *roomMsg
		// The last piece may go straight into the message: a draft is
		// published at most every 50 ms, and Finish replaces it.
		model.grow(t, "the web room's draft", func() string {
			for {
				select {
				case ev := <-events:
					switch ev.name {
					case "draft":
						var d struct{ HTML string }
						json.Unmarshal([]byte(ev.data), &d)
						last = d.HTML
					case "message":
						var m roomMsg
						if json.Unmarshal([]byte(ev.data), &m) == nil && m.Assistant {
							final, last = &m, m.HTML
						}
					}
				default:
					return last
				}
			}
		})
		for final == nil {
			select {
			case ev := <-events:
				var m roomMsg
				if ev.name == "message" && json.Unmarshal([]byte(ev.data), &m) == nil && m.Assistant {
					final = &m
				}
			case <-time.After(60 * time.Second):
				t.Fatal("no final message in the room")
			}
		}
		want := format.Render(answer, format.Web, 0)[0]
		if final.Text != answer || final.HTML != want {
			t.Errorf("room message text %q html %q, want %q", final.Text, final.HTML, want)
		}
		if !strings.Contains(final.HTML, "<strong>in turns</strong>") || strings.Contains(final.HTML, "<Ann>") {
			t.Errorf("room HTML %q is not the sanitised rendering", final.HTML)
		}
	})
	host.stop(t)
}

type sseEvent struct{ name, data string }

// events reads the main room's event stream until the test ends.
func (s *webSession) events() <-chan sseEvent {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/r/main/events?after=0", nil)
	c := *s.c
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	out := make(chan sseEvent, 1024)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		name := "message"
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				name = "message"
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				select {
				case out <- sseEvent{name, line[len("data: "):]}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
