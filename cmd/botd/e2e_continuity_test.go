package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// chatModel is an OpenAI-wire model that holds a conversation the way a
// good one would: it fetches the photo asked about, answers a follow-up
// from what it learnt then (the media notes) without fetching again,
// answers "point N" with "ok N", and writes summaries when asked.
type chatModel struct {
	wire *fakeModel // for the wire format only
	srv  *httptest.Server

	mu        sync.Mutex
	summaries int
	system    []string // per request
	user      []string // the user turn, verbatim
}

const (
	photoAnswer  = "It is a noisy test pattern."
	followAnswer = "No, it is only 200x150 pixels."
	blindAnswer  = "I see no media here."
)

var (
	latestRef = regexp.MustCompile(`ref:(tg_[0-9A-Za-z]+)\]`)
	pointN    = regexp.MustCompile(`point (\d+):`)
)

func newChatModel(t *testing.T) *chatModel {
	m := &chatModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *chatModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := readChat(body)
	system, user := req.System, req.User
	w.Header().Set("Content-Type", "text/event-stream")
	m.mu.Lock()
	m.system, m.user = append(m.system, system), append(m.user, user)
	if strings.Contains(system, "running summary of a group chat") {
		m.summaries++
		n := m.summaries
		m.mu.Unlock()
		m.wire.text(w, fmt.Sprintf("SUMMARY-%d: Ann asked about a photo (a noisy test pattern) and made several points.", n))
		return
	}
	m.mu.Unlock()
	asked := newText(body)
	switch {
	case strings.Contains(string(body), `"tool_call_id"`):
		m.wire.text(w, photoAnswer)
	case strings.Contains(asked, "what is in the photo"):
		refs := latestRef.FindAllStringSubmatch(user, -1)
		if len(refs) == 0 {
			m.wire.text(w, blindAnswer)
			return
		}
		m.wire.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, refs[len(refs)-1][1]))
	case strings.Contains(asked, "is it a big one"):
		refs := latestRef.FindAllStringSubmatch(user, -1)
		if len(refs) == 0 || !strings.Contains(user, `<note ref="`+refs[len(refs)-1][1]+`"`) || !strings.Contains(user, photoAnswer) {
			m.wire.text(w, blindAnswer)
			return
		}
		m.wire.text(w, followAnswer)
	case pointN.MatchString(asked):
		m.wire.text(w, "ok "+pointN.FindStringSubmatch(asked)[1])
	default:
		m.wire.text(w, "Hello.")
	}
}

func (m *chatModel) snapshot() (summaries int, system, user []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.summaries, append([]string(nil), m.system...), append([]string(nil), m.user...)
}

const continuityConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
agent:
  context: {messages: 50, max_age: 24h, max_tokens: 1000}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// The real daemon holds a conversation: a follow-up about the photo of the
// previous run is answered about that photo without a second download; a
// question answered before is not answered again; a long conversation is
// summarised once and stays under the token budget.
func TestConversationContinuityEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	proxy := newStallProxy(t, tg.URL())
	model := newChatModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(continuityConfig, telegramtest.Token, proxy.srv.URL, model.srv.URL))
	photo := noisyJPEG(t, 200, 150)
	tg.AddFile(telegramtest.File{ID: "photo", Data: photo})
	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	// Sent now: the context window is the last 24 hours.
	say := func(id int, text string) {
		u := telegramtest.Text(group, ann, id, text)
		u.Message.Date = int(time.Now().Unix())
		tg.Enqueue(u)
	}
	answers := func(text string) int {
		n := 0
		for _, s := range tg.Sent() {
			if strings.Contains(s.String(), text) {
				n++
			}
		}
		return n
	}

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	tg.Enqueue(photoUpdate(-100, 10, "photo", len(photo), "look"))
	say(11, "@Andy what is in the photo?")
	testwait.Within(t, 60*time.Second, "answers(photoAnswer) > 0", func() bool { return answers(photoAnswer) > 0 })
	say(12, "@Andy and is it a big one?")
	testwait.Within(t, 60*time.Second, "answers(followAnswer)+answers(blindAnswer) > 0", func() bool { return answers(followAnswer)+answers(blindAnswer) > 0 })
	if answers(followAnswer) != 1 {
		t.Fatalf("the follow-up was not answered about the photo: %v", tg.Sent())
	}
	if n := answers(photoAnswer); n != 1 {
		t.Errorf("the first question was answered %d times, want once", n)
	}
	if n := proxy.fileHits("photo"); n != 1 {
		t.Errorf("the photo was downloaded %d times, want once", n)
	}

	// A long conversation: every point is about 110 tokens against a
	// budget of 1000.
	const points = 12
	long := strings.Repeat("and some more words about it ", 15)
	for i := 1; i <= points; i++ {
		say(20+i, fmt.Sprintf("@Andy point %d: %s", i, long))
		testwait.Within(t, 60*time.Second, "answers(fmt.Sprintf(\"ok %d\", i)) > 0", func() bool { return answers(fmt.Sprintf("ok %d", i)) > 0 })
	}
	summaries, system, user := model.snapshot()
	if summaries == 0 || summaries > points/3 {
		t.Errorf("%d summaries were made over %d runs, want at least one and each reused by later runs, not one per run", summaries, points)
	}
	carried := map[int]int{} // summary number → runs that carried it
	for i := range user {
		if strings.Contains(system[i], "running summary of a group chat") {
			continue
		}
		_, sum, _ := strings.Cut(system[i], "# Earlier in this chat")
		if est := (len(user[i]) + len(sum)) / 4; est > 1000 {
			t.Errorf("request %d: about %d tokens of conversation, over the budget of 1000", i, est)
		}
		var k int
		if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sum), "A summary of the older messages, written by you:\n<summary>")), "SUMMARY-%d", &k); err == nil {
			carried[k]++
		}
	}
	for k := 1; k <= summaries; k++ {
		want := 2
		if k == summaries {
			want = 1 // the newest may have been made by the last run
		}
		if carried[k] < want {
			t.Errorf("summary %d was carried by %d runs, want it made once and reused (carried: %v)", k, carried[k], carried)
		}
	}
	if !strings.Contains(host.Logs(), "estimated_tokens=") || !strings.Contains(host.Logs(), "older messages summarised") {
		t.Errorf("the context size or the summary is not logged")
	}
	host.stop(t)
}
