package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/slack/slackfake"
	"github.com/botd-dev/botd/internal/testwait"
)

const slackAgentConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
channels:
  slack:
    enabled: true
    mode: socket
    bot_token: "%s"
    app_token: "%s"
    api_url: "%s"
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s"}
  model: {provider: fake, name: gpt-4.1}
agent:
  max_messages: 30
groups:
  - {folder: team, name: Team, chat: "slack:%s", requires_trigger: true}
`

// slackTS is a Slack message ts of now, unique by n.
func slackTS(now time.Time, n int) string {
	return fmt.Sprintf("%d.%06d", now.Unix(), n)
}

// slackMessage is a Slack "message" event in a public channel.
func slackMessage(channel, user, ts, text string, extra map[string]any) map[string]any {
	m := map[string]any{"type": "message", "channel": channel, "channel_type": "channel", "user": user, "text": text, "ts": ts}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// slackImageShare is a file_share event of one JPEG hosted by the fake.
func slackImageShare(fake *slackfake.Server, channel, user, ts, fileID, name, text string, data []byte) (map[string]any, string) {
	u := fake.HostFile(name, "image/jpeg", data)
	file := map[string]any{"id": fileID, "name": name, "title": name, "mimetype": "image/jpeg", "filetype": "jpg",
		"size": len(data), "original_w": 200, "original_h": 150, "mode": "hosted",
		"url_private": u, "url_private_download": u}
	return slackMessage(channel, user, ts, text, map[string]any{"subtype": "file_share", "upload": true,
		"files": []map[string]any{file}}), u
}

// jsonStrings returns every string value in a JSON document, decoded.
func jsonStrings(t *testing.T, body string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("model request is not JSON: %v", err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// conversationOf returns the prompt text holding the <messages> element.
func conversationOf(t *testing.T, body string) string {
	t.Helper()
	for _, s := range jsonStrings(t, body) {
		if strings.Contains(s, "<messages") {
			return s
		}
	}
	t.Fatalf("model request has no <messages> element:\n%.2000s", body)
	return ""
}

// A question asked in the Slack thread of an image shared long ago (more
// than agent.max_messages channel messages later) is answered about that
// image: the thread root is quoted with its placeholder although it is
// outside the window, the model fetches exactly that image, and the answer
// goes to the thread.
func TestSlackThreadQuestionAboutAnOldImage(t *testing.T) {
	const (
		answer  = "The shared image is a noisy test pattern."
		channel = "C0TEAM01"
		ann     = "UANN0001"
		bob     = "UBOB0001"
	)
	dir := t.TempDir()
	fake := slackfake.New(t)
	fake.SetUser(ann, "Ann")
	fake.SetUser(bob, "Bob")
	fake.SetChannel(channel, "team")
	model := newFakeModel(t, "openai", answer)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(slackAgentConfig,
		slackfake.BotToken, slackfake.AppToken, fake.APIURL(), model.srv.URL+"/v1", channel))

	now := time.Now()
	asked := noisyJPEG(t, 200, 150)
	rootTS := slackTS(now, 1)
	root, rootURL := slackImageShare(fake, channel, ann, rootTS, "F0ASKED1", "photo.jpg", "look at this", asked)
	events := []map[string]any{root}
	// 45 channel messages after the image, more than max_messages (30).
	// Every tenth is another image, so the window holds images newer than
	// the one asked about: the model must be pointed at the thread root,
	// not at the newest image.
	var decoys [][]byte
	for i := 0; i < 45; i++ {
		ts := slackTS(now, 10+i)
		if i%10 == 9 {
			data := noisyJPEG(t, 150+i, 150)
			decoys = append(decoys, data)
			ev, _ := slackImageShare(fake, channel, bob, ts, fmt.Sprintf("F0OTHER%d", i), fmt.Sprintf("other-%02d.jpg", i), "unrelated", data)
			events = append(events, ev)
			continue
		}
		events = append(events, slackMessage(channel, bob, ts, fmt.Sprintf("chatter %02d", i), nil))
	}
	questionTS := slackTS(now, 100)
	events = append(events, slackMessage(channel, ann, questionTS, "<@"+slackfake.BotUserID+"> what is in this one?",
		map[string]any{"thread_ts": rootTS}))

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("slack calls: %+v", fake.Log())
			for i, r := range model.Requests() {
				t.Logf("model request %d:\n%.4000s", i, r)
			}
		}
	})
	// The channel hands events to the agent one at a time, in order, and
	// the agent stores each before it takes the next, so when the question
	// triggers a run every message before it is stored.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard only
	defer cancel()
	for _, ev := range events {
		if err := fake.SendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	// The answer grows in the thread (a stream, or a posted message
	// edited), so it is read from the thread as it shows now.
	answered := func() []slackfake.Message {
		var out []slackfake.Message
		for _, m := range fake.Thread(channel, rootTS) {
			if strings.Contains(m.Text, answer) && !m.Streaming {
				out = append(out, m)
			}
		}
		return out
	}
	testwait.Within(t, 60*time.Second, "len(answered()) > 0", func() bool { return len(answered()) > 0 })

	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model saw %d requests, want 2 (question with the quoted thread root, then the fetched image)", len(reqs))
	}

	// First request: the question, quoting the thread root with its
	// placeholder; the root itself is outside the window.
	conv := conversationOf(t, reqs[0])
	quoted := regexp.MustCompile(`<message sender="Ann" time="[^"]*"><quoted sender="Ann">\[Image: photo\.jpg, [^\]]*image/jpeg, ref:(sl_[0-9A-Za-z]+)\]\nlook at this</quoted>@Andy what is in this one\?</message>`)
	m := quoted.FindStringSubmatch(conv)
	if m == nil {
		t.Fatalf("the question does not quote the thread root's image:\n%s", conv)
	}
	rootRef := m[1]
	if n := strings.Count(conv, rootRef); n != 1 {
		t.Errorf("the root's ref appears %d times in the conversation, want 1 (only quoted: the root is outside the window)", n)
	}
	if !strings.Contains(conv, `<messages earlier="omitted">`) || strings.Contains(conv, "chatter 00") {
		t.Errorf("the window was not bounded: the oldest chatter reached the model")
	}
	if !strings.Contains(conv, "other-39.jpg") {
		t.Errorf("the window lacks the newer images it should hold:\n%s", conv)
	}
	if strings.Contains(reqs[0], base64.StdEncoding.EncodeToString(asked)) {
		t.Errorf("first request already carries the image bytes (eager)")
	}

	// Second request: the model's fetch_media call on the root's ref, and
	// its result with exactly the posted image.
	call := fmt.Sprintf(`{"mediaRef":%q}`, rootRef)
	var called bool
	for _, s := range jsonStrings(t, reqs[1]) {
		called = called || s == call
	}
	if !called {
		t.Errorf("second request lacks the fetch_media call %s", call)
	}
	if !strings.Contains(reqs[1], base64.StdEncoding.EncodeToString(asked)) {
		t.Errorf("second model request does not carry the thread root's image bytes")
	}
	for i, d := range decoys {
		if strings.Contains(reqs[1], base64.StdEncoding.EncodeToString(d)) {
			t.Errorf("second model request carries unrelated image %d", i)
		}
	}
	u, err := url.Parse(rootURL)
	if err != nil {
		t.Fatal(err)
	}
	files := fake.FileRequests()
	if len(files) != 1 || files[0].Path != u.Path || files[0].Authorization != "Bearer "+slackfake.BotToken {
		t.Errorf("file downloads = %+v, want one of %s with the bot token", files, u.Path)
	}

	// The answer goes to the thread.
	posts := answered()
	if len(posts) != 1 || posts[0].Channel != channel || posts[0].ThreadTS != rootTS {
		t.Errorf("answers = %+v, want one in channel %s, thread %s", posts, channel, rootTS)
	}
	host.stop(t)
}
