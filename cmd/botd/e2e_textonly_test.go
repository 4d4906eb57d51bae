package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// textOnlyModel serves two OpenAI-wire models on one server: the chat
// model (deepseek-chat, text only) and the vision model that describes
// images for it (gpt-4.1-mini). It records which model got image parts.
type textOnlyModel struct {
	wire *fakeModel
	srv  *httptest.Server

	mu         sync.Mutex
	chatImages int // image parts sent to the text-only model (must stay 0)
	described  int
	chat       []string
}

const description = "DESCRIBED: a grey noisy rectangle, no text."

func newTextOnlyModel(t *testing.T) *textOnlyModel {
	m := &textOnlyModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *textOnlyModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := readChat(body)
	w.Header().Set("Content-Type", "text/event-stream")
	images := strings.Count(string(body), `"image_url"`)
	m.mu.Lock()
	defer m.mu.Unlock()
	if req.Model == "gpt-4.1-mini" {
		m.described++
		m.wire.text(w, description)
		return
	}
	m.chatImages += images
	m.chat = append(m.chat, string(body))
	switch {
	case strings.Contains(string(body), `"tool_call_id"`):
		if strings.Contains(string(body), "DESCRIBED") {
			m.wire.text(w, "It looks like a grey noisy rectangle.")
		} else {
			m.wire.text(w, "I cannot see it.")
		}
	default:
		ref := latestRef.FindStringSubmatch(newText(body))
		if ref == nil {
			m.wire.text(w, "Hello.")
			return
		}
		m.wire.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, ref[1]))
	}
}

const textOnlyConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  describe: {provider: fake, model: gpt-4.1-mini}
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: deepseek-chat}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// With a text-only model (DeepSeek) a photo question is answered from a
// description by the configured vision model; the text-only model is never
// sent an image, so the provider never rejects the request.
func TestTextOnlyModelAnswersAboutAPhoto(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	model := newTextOnlyModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(textOnlyConfig, telegramtest.Token, tg.URL(), model.srv.URL))
	photo := noisyJPEG(t, 120, 90)
	tg.AddFile(telegramtest.File{ID: "photo", Data: photo})
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	tg.Enqueue(photoUpdate(-100, 10, "photo", len(photo), "@Andy what is this?"))
	const answer = "It looks like a grey noisy rectangle."
	testwait.Within(t, 60*time.Second, "an answer about the image", func() bool {
		for _, s := range tg.Sent() {
			if strings.Contains(s.String(), answer) || strings.Contains(s.String(), "I cannot see it") || strings.Contains(s.String(), "Sorry") {
				return true
			}
		}
		return false
	})
	var sent []string
	for _, s := range tg.Sent() {
		sent = append(sent, s.String())
	}
	if !strings.Contains(strings.Join(sent, "\n"), answer) {
		t.Fatalf("the photo question was not answered from a description: %v", sent)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if model.chatImages != 0 {
		t.Errorf("the text-only model was sent %d image parts", model.chatImages)
	}
	if model.described != 1 {
		t.Errorf("the vision model described %d images, want 1", model.described)
	}
	host.stop(t)
}
