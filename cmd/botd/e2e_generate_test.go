package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// genProvider is one OpenAI-compatible server for every job of these
// tests: chat completions that ask for a picture, a voice answer or a
// video as the message says, the Images API, /audio/speech and Videos.
type genProvider struct {
	t    *testing.T
	wire *fakeModel
	srv  *httptest.Server
	png  []byte
	ogg  []byte
	mp4  []byte

	mu     sync.Mutex
	calls  map[string]int
	bodies map[string]string
	video  string // the status the video job reports
}

func newGenProvider(t *testing.T) *genProvider {
	p := &genProvider{t: t, wire: &fakeModel{t: t, wire: "openai"}, png: pngOf(t, 64, 64), ogg: oggOpusOf(3 * time.Second),
		mp4:   append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte{9}, 4000)...),
		calls: map[string]int{}, bodies: map[string]string{}, video: "in_progress"}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *genProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.URL.Path
	p.mu.Lock()
	p.calls[key]++
	p.bodies[key] = string(body)
	video := p.video
	p.mu.Unlock()
	switch {
	case key == "POST /v1/images/generations" && strings.Contains(string(body), "forbidden"):
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"Your request was rejected by the safety system.","type":"image_generation_user_error","param":null,"code":"moderation_blocked"}}`)
	case key == "POST /v1/images/generations" || key == "POST /v1/images/edits":
		fmt.Fprintf(w, `{"data":[{"b64_json":%q}],"usage":{"input_tokens":12,"output_tokens":272}}`, base64.StdEncoding.EncodeToString(p.png))
	case key == "POST /v1/audio/speech":
		w.Header().Set("Content-Type", "audio/ogg")
		w.Write(p.ogg)
	case key == "POST /v1/videos":
		io.WriteString(w, `{"id":"video_e2e","object":"video","model":"sora-2","status":"queued","progress":0,"seconds":"4"}`)
	case key == "GET /v1/videos/video_e2e":
		fmt.Fprintf(w, `{"id":"video_e2e","object":"video","model":"sora-2","status":%q,"progress":60,"seconds":"4"}`, video)
	case key == "GET /v1/videos/video_e2e/content":
		w.Header().Set("Content-Type", "video/mp4")
		w.Write(p.mp4)
	case key == "DELETE /v1/videos/video_e2e":
		io.WriteString(w, `{"id":"video_e2e","object":"video.deleted","deleted":true}`)
	case key == "POST /v1/chat/completions":
		p.chat(w, body)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// chat asks for the tool the question calls for, then answers in words.
func (p *genProvider) chat(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	if req := readChat(body); req.LastRole == "tool" {
		p.wire.text(w, "Done: "+firstLine(req.LastText))
		return
	}
	asked := newText(body)
	switch {
	case strings.Contains(asked, "into a sketch"):
		// In the conversation only: the prompt and the tools carry examples.
		refs := photoRef.FindAllStringSubmatch(asked, -1)
		if refs == nil {
			p.wire.text(w, "I see no photo.")
			return
		}
		p.wire.toolCall(w, "generate_image", fmt.Sprintf(`{"prompt":"a pencil sketch of this photo","source_ref":%q}`, refs[len(refs)-1][1]))
	case strings.Contains(asked, "draw something forbidden"):
		p.wire.toolCall(w, "generate_image", `{"prompt":"something forbidden"}`)
	case strings.Contains(asked, "draw a red square"):
		p.wire.toolCall(w, "generate_image", `{"prompt":"a red square on white"}`)
	case strings.Contains(asked, "make a video of a cat"):
		p.wire.toolCall(w, "generate_video", `{"prompt":"a cat chasing a red ball","seconds":4}`)
	case strings.Contains(asked, "say hello"):
		p.wire.text(w, "[[audio_as_voice]]\nHello from Andy!")
	default:
		p.wire.text(w, "Hello.")
	}
}

var photoRef = regexp.MustCompile(`\[Image: [^\]]*ref:(tg_[0-9A-Za-z]+)\]`)

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func (p *genProvider) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[key]
}

func (p *genProvider) body(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[key]
}

// oggOpusOf is a small OGG/Opus stream lasting d (an OpusHead page and a
// last page whose granule position says how long it is).
func oggOpusOf(d time.Duration) []byte {
	page := func(granule int64, payload []byte) []byte {
		h := []byte("OggS\x00\x02")
		h = binary.LittleEndian.AppendUint64(h, uint64(granule))
		h = append(h, make([]byte, 12)...)
		h = append(h, 1, byte(len(payload)))
		return append(h, payload...)
	}
	head := append([]byte("OpusHead\x01\x01"), 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0)
	out := page(0, head)
	return append(out, page(312+int64(d/time.Millisecond)*48, bytes.Repeat([]byte{7}, 200))...)
}

const genConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
# this test's scripted model calls tools at once; lazy offering: e2e_lazytools_test.go
agent: {lazy_tools: false}
media:
  generation:
    image: {provider: fake, model: gpt-image-1}
    speech: {provider: fake, model: gpt-4o-mini-tts, voice: nova}
    video: {provider: fake, model: sora-2}
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    fake: {type: openai, api_key: test-key-not-real, base_url: "%s/v1"}
  model: {provider: fake, name: gpt-4.1}
groups:
  - {folder: family, name: Family, chat: "telegram:-100", requires_trigger: true}
`

func genSetup(t *testing.T) (dir string, tg *telegramtest.Server, p *genProvider) {
	t.Helper()
	dir = t.TempDir()
	tg = telegramtest.New(t)
	p = newGenProvider(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(genConfig, telegramtest.Token, tg.URL(), p.srv.URL))
	return dir, tg, p
}

func sentBy(tg *telegramtest.Server, method string) []telegramtest.Sent {
	var out []telegramtest.Sent
	for _, s := range tg.Sent() {
		if s.Method == method {
			out = append(out, s)
		}
	}
	return out
}

func ask(tg *telegramtest.Server, id int, text string) {
	u := telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), id, text)
	u.Message.Date = int(time.Now().Unix())
	tg.Enqueue(u)
}

// "@Andy draw a red square": the image model is called once and the
// photo reaches Telegram as sendPhoto, with the bytes it made; botd usage
// bills it.
func TestGenerateImageEndToEnd(t *testing.T) {
	dir, tg, p := genSetup(t)
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	asked := time.Now()
	ask(tg, 10, "@Andy draw a red square")
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendPhoto\")) == 1", func() bool { return len(sentBy(tg, "sendPhoto")) == 1 })
	t.Logf("question → sendPhoto: %v (instant fake model and image provider; figures for the README with BOTD_E2E_RACE=0)", time.Since(asked))
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendMessage\")) == 1", func() bool { return len(sentBy(tg, "sendMessage")) == 1 })
	photo := sentBy(tg, "sendPhoto")[0]
	if !bytes.Equal(photo.Data, p.png) || photo.ChatID != -100 {
		t.Errorf("photo %v", photo)
	}
	if n := p.count("POST /v1/images/generations"); n != 1 {
		t.Errorf("image model called %d times, want once", n)
	}
	if b := p.body("POST /v1/images/generations"); !strings.Contains(b, `"prompt":"a red square on white"`) || !strings.Contains(b, `"model":"gpt-image-1"`) {
		t.Errorf("image request %s", b)
	}
	host.stop(t)
	out, err := exec.Command(botdBin, "usage", "--config", filepath.Join(dir, "botd.yaml")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "gpt-image-1") || !strings.Contains(string(out), "1 image(s)") {
		t.Errorf("botd usage: %v\n%s", err, out)
	}
}

// An answer tagged [[audio_as_voice]] arrives as sendVoice with the
// OGG/Opus bytes of /audio/speech, and not as text.
func TestVoiceReplyEndToEnd(t *testing.T) {
	dir, tg, p := genSetup(t)
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	asked := time.Now()
	ask(tg, 10, "@Andy say hello")
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendVoice\")) == 1", func() bool { return len(sentBy(tg, "sendVoice")) == 1 })
	t.Logf("question → sendVoice: %v", time.Since(asked))
	v := sentBy(tg, "sendVoice")[0]
	if !bytes.HasPrefix(v.Data, []byte("OggS")) || !bytes.Contains(v.Data, []byte("OpusHead")) || !bytes.Equal(v.Data, p.ogg) {
		t.Errorf("voice note is not the OGG/Opus made: %v", v)
	}
	b := p.body("POST /v1/audio/speech")
	for _, want := range []string{`"response_format":"opus"`, `"input":"Hello from Andy!"`, `"voice":"nova"`, `"model":"gpt-4o-mini-tts"`} {
		if !strings.Contains(b, want) {
			t.Errorf("speech request lacks %s: %s", want, b)
		}
	}
	host.stop(t)
	if texts := sentBy(tg, "sendMessage"); len(texts) != 0 {
		t.Errorf("the voice answer also went as text: %v", texts)
	}
}

// A video job in progress when botd is SIGKILLed completes after the
// restart: the job is not submitted again, and the video is sent once.
func TestVideoJobSurvivesKill(t *testing.T) {
	dir, tg, p := genSetup(t)
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ask(tg, 10, "@Andy make a video of a cat")
	// Submitted, persisted (the tool answered, so the model wrote its
	// reply) and polled at least once while in progress.
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendMessage\")) == 1 && p.count(\"GET /v1/videos/video_e2e\") >= 1", func() bool {
		return len(sentBy(tg, "sendMessage")) == 1 && p.count("GET /v1/videos/video_e2e") >= 1
	})
	if m := sentBy(tg, "sendMessage")[0]; !strings.Contains(m.Text, "Video job 1 started") {
		t.Errorf("reply %v", m)
	}
	host.kill()
	if n := len(sentBy(tg, "sendVideo")); n != 0 {
		t.Fatalf("a video was sent before it was finished")
	}
	p.mu.Lock()
	p.video = "completed"
	p.mu.Unlock()

	restarted := time.Now()
	host = startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendVideo\")) == 1", func() bool { return len(sentBy(tg, "sendVideo")) == 1 })
	t.Logf("restart → sendVideo of the job that finished while botd was down: %v", time.Since(restarted))
	host.waitLog(t, "video job delivered")
	host.stop(t)
	videos := sentBy(tg, "sendVideo")
	if len(videos) != 1 || !bytes.Equal(videos[0].Data, p.mp4) || !strings.Contains(videos[0].Caption, "a cat chasing a red ball") {
		t.Fatalf("videos sent: %v", videos)
	}
	if n := p.count("POST /v1/videos"); n != 1 {
		t.Errorf("submitted %d times, want once", n)
	}
	if p.count("GET /v1/videos/video_e2e/content") != 1 || p.count("DELETE /v1/videos/video_e2e") != 1 {
		t.Errorf("calls %v", p.calls)
	}
}

// "turn this photo into a sketch": the photo is fetched through the
// authorised path (one download) and uploaded to /images/edits; the
// sketch comes back as a photo.
func TestEditPhotoEndToEnd(t *testing.T) {
	dir, tg, p := genSetup(t)
	photo := pngOf(t, 80, 60)
	tg.AddFile(telegramtest.File{ID: "photo1", Data: photo})
	tg.Enqueue(photoUpdate(-100, 9, "photo1", len(photo), "our garden"))
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ask(tg, 10, "@Andy turn the photo into a sketch")
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendPhoto\")) == 1", func() bool { return len(sentBy(tg, "sendPhoto")) == 1 })
	host.stop(t)
	if n := p.count("POST /v1/images/edits"); n != 1 {
		t.Fatalf("edits called %d times", n)
	}
	if b := p.body("POST /v1/images/edits"); !strings.Contains(b, string(photo)) || !strings.Contains(b, "a pencil sketch of this photo") {
		t.Error("the photo or the prompt did not reach /images/edits")
	}
	if n := p.count("POST /v1/images/generations"); n != 0 {
		t.Errorf("generations called %d times for an edit", n)
	}
	if !bytes.Equal(sentBy(tg, "sendPhoto")[0].Data, p.png) {
		t.Error("the sketch sent is not what the provider made")
	}
}

// A content-policy refusal reaches the chat as the provider's refusal in
// a sentence (relayed by the model from the tool's answer), no photo.
func TestImageRefusalEndToEnd(t *testing.T) {
	dir, tg, p := genSetup(t)
	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	ask(tg, 10, "@Andy draw something forbidden")
	testwait.Within(t, 60*time.Second, "len(sentBy(tg, \"sendMessage\")) == 1", func() bool { return len(sentBy(tg, "sendMessage")) == 1 })
	host.stop(t)
	msg := sentBy(tg, "sendMessage")[0].Text
	if !strings.Contains(msg, "The provider refused this request under its content policy, so nothing was made") ||
		strings.Contains(msg, "moderation_blocked") || strings.Contains(msg, "{") {
		t.Errorf("chat got %q", msg)
	}
	if n := len(sentBy(tg, "sendPhoto")); n != 0 || p.count("POST /v1/images/generations") != 1 {
		t.Errorf("photos %d, calls %d", n, p.count("POST /v1/images/generations"))
	}
}
