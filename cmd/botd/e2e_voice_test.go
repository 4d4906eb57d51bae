package main

import (
	"encoding/json"
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

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// voiceModel is one OpenAI-compatible server for both jobs: chat
// completions (asked about a voice note, it fetches it; shown the
// transcript, it repeats the words) and /audio/transcriptions.
type voiceModel struct {
	wire *fakeModel
	srv  *httptest.Server

	mu             sync.Mutex
	transcriptions int
	chat           []string
}

const spokenWords = "Please buy oat milk and two loaves of bread."

var transcriptRe = regexp.MustCompile(`(?s)<transcript>\s*(.*?)\s*</transcript>`)

func newVoiceModel(t *testing.T) *voiceModel {
	m := &voiceModel{wire: &fakeModel{t: t, wire: "openai"}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *voiceModel) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/audio/transcriptions") {
		m.mu.Lock()
		m.transcriptions++
		m.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]string{"text": spokenWords})
		return
	}
	body, _ := io.ReadAll(r.Body)
	m.mu.Lock()
	m.chat = append(m.chat, string(body))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if req := readChat(body); req.LastRole == "tool" {
		if t := transcriptRe.FindStringSubmatch(req.LastText); t != nil {
			m.wire.text(w, "The voice note says: "+t[1])
			return
		}
		m.wire.text(w, "I could not hear it.")
		return
	}
	asked := newText(body)
	if ref := regexp.MustCompile(`\[Voice: [^\]]*ref:((?:tg|dc|mx)_[0-9A-Za-z]+)\]`).FindAllStringSubmatch(string(body), -1); ref != nil &&
		strings.Contains(asked, "voice note") {
		m.wire.toolCall(w, "fetch_media", fmt.Sprintf(`{"mediaRef":%q}`, ref[len(ref)-1][1]))
		return
	}
	m.wire.text(w, "Hello.")
}

const voiceConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  transcription: {provider: fake, model: whisper-test}
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

// A voice note is neither downloaded nor transcribed on receipt; asked
// about, the model receives its words; asked again, it is fetched from
// the cache and its transcript too: no second download, no second
// transcription.
func TestVoiceNoteEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	proxy := newStallProxy(t, tg.URL())
	model := newVoiceModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(voiceConfig, telegramtest.Token, proxy.srv.URL, model.srv.URL))
	voice := append([]byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead\x01\x01"), make([]byte, 4000)...)
	tg.AddFile(telegramtest.File{ID: "voice1", Data: voice})
	group, ann := telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann")
	tg.Enqueue(models.Update{Message: &models.Message{ID: 10, Chat: group, From: &ann, Date: int(time.Now().Unix()),
		Voice: &models.Voice{FileID: "voice1", FileUniqueID: "voice1u", Duration: 4, MimeType: "audio/ogg", FileSize: int64(len(voice))}}})
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	testwait.Within(t, 30*time.Second, "tg.Pending() == 0", func() bool { return tg.Pending() == 0 })
	if n := proxy.fileHits("voice1"); n != 0 {
		t.Fatalf("the voice note was downloaded %d times on receipt", n)
	}
	model.mu.Lock()
	if model.transcriptions != 0 {
		t.Fatalf("transcribed on receipt")
	}
	model.mu.Unlock()

	answered := func(n int) bool {
		c := 0
		for _, s := range tg.Sent() {
			if strings.Contains(s.String(), "The voice note says: "+spokenWords) {
				c++
			}
		}
		return c >= n
	}
	for i, q := range []string{"@Andy what does the voice note say?", "@Andy play the voice note for me again"} {
		u := telegramtest.Text(group, ann, 20+i, q)
		u.Message.Date = int(time.Now().Unix())
		tg.Enqueue(u)
		testwait.Within(t, 60*time.Second, "answered(i + 1)", func() bool { return answered(i + 1) })
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if model.transcriptions != 1 {
		t.Errorf("transcribed %d times, want once", model.transcriptions)
	}
	if n := proxy.fileHits("voice1"); n != 1 {
		t.Errorf("downloaded %d times, want once", n)
	}
	host.stop(t)
}
