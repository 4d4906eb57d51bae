package generate

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/llm"
)

var update = flag.Bool("update", false, "rewrite golden files")

// recorded is one request the fake provider received.
type recorded struct {
	Method, Path, Auth, GoogKey, ContentType string
	Body                                     []byte
}

// fakeProvider is a loopback provider that answers each request with the
// next canned answer and records what it got.
type fakeProvider struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	got     []recorded
	answers []answer
}

type answer struct {
	status int
	ctype  string
	body   string
}

func newFake(t *testing.T, answers ...answer) *fakeProvider {
	t.Helper()
	f := &fakeProvider{t: t, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, recorded{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"),
			GoogKey: r.Header.Get("x-goog-api-key"), ContentType: r.Header.Get("Content-Type"), Body: b})
		var a answer
		if len(f.answers) > 0 {
			a, f.answers = f.answers[0], f.answers[1:]
		} else {
			a = answer{status: 500, body: `{"error":{"message":"no answer left"}}`}
		}
		f.mu.Unlock()
		if a.ctype == "" {
			a.ctype = "application/json"
		}
		w.Header().Set("Content-Type", a.ctype)
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.got...)
}

// golden compares a request body with testdata/<name>; a multipart body's
// random boundary is replaced first.
func golden(t *testing.T, name string, r recorded) {
	t.Helper()
	body := r.Body
	if _, params, err := mime.ParseMediaType(r.ContentType); err == nil && params["boundary"] != "" {
		body = bytes.ReplaceAll(body, []byte(params["boundary"]), []byte("BOUNDARY"))
	}
	got := fmt.Sprintf("%s %s\n%s\n", r.Method, r.Path, body)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("request differs from %s:\n got: %s\nwant: %s", path, got, want)
	}
}

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 64)...)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func sourceFile(t *testing.T) *Source {
	t.Helper()
	p := filepath.Join(t.TempDir(), "src.png")
	if err := os.WriteFile(p, pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &Source{File: f, Size: int64(len(pngBytes)), MIME: "image/png", Name: "evil\"name.png"}
}

func TestImageWire(t *testing.T) {
	okOpenAI := answer{200, "", `{"created":1,"data":[{"b64_json":"` + b64(pngBytes) + `","revised_prompt":"a red square"}],"usage":{"input_tokens":20,"output_tokens":272}}`}
	okGemini := answer{200, "", `{"candidates":[{"content":{"role":"model","parts":[{"text":"Here is your red square."},{"inlineData":{"mimeType":"image/png","data":"` + b64(pngBytes) + `"}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1290}}`}
	cases := []struct {
		name      string
		typ       string
		model     string
		source    bool
		answer    answer
		golden    string
		wantPath  string
		wantNote  string
		wantUsage Usage
		wantKind  llm.ErrorKind // "" is success
	}{
		{name: "openai generation", typ: "openai", model: "gpt-image-1", answer: okOpenAI, golden: "openai_generation.txt",
			wantPath: "/v1/images/generations", wantNote: "a red square", wantUsage: Usage{20, 272}},
		{name: "openai dall-e asks for b64_json", typ: "openai", model: "dall-e-3", answer: okOpenAI, golden: "openai_generation_dalle.txt",
			wantPath: "/v1/images/generations", wantNote: "a red square", wantUsage: Usage{20, 272}},
		{name: "openai edit is multipart", typ: "openai", model: "gpt-image-1", source: true, answer: okOpenAI, golden: "openai_edit.txt",
			wantPath: "/v1/images/edits", wantNote: "a red square", wantUsage: Usage{20, 272}},
		{name: "openai refusal", typ: "openai", model: "gpt-image-1", golden: "openai_generation.txt", wantPath: "/v1/images/generations",
			answer:   answer{400, "", `{"error":{"message":"Your request was rejected by the safety system. safety_violations=[violence].","type":"image_generation_user_error","param":null,"code":"moderation_blocked"}}`},
			wantKind: llm.KindContentFilter},
		{name: "openai bad key", typ: "openai", model: "gpt-image-1", golden: "openai_generation.txt", wantPath: "/v1/images/generations",
			answer:   answer{401, "", `{"error":{"message":"Incorrect API key provided: sk-test-secret","type":"invalid_request_error","code":"invalid_api_key"}}`},
			wantKind: llm.KindAuth},
		{name: "gemini generation", typ: "gemini", model: "gemini-2.5-flash-image", answer: okGemini, golden: "gemini_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent", wantNote: "Here is your red square.", wantUsage: Usage{9, 1290}},
		{name: "gemini edit inline", typ: "gemini", model: "gemini-2.5-flash-image", source: true, answer: okGemini, golden: "gemini_edit.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent", wantNote: "Here is your red square.", wantUsage: Usage{9, 1290}},
		{name: "gemini prompt blocked", typ: "gemini", model: "gemini-2.5-flash-image", golden: "gemini_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent",
			answer:   answer{200, "", `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9}}`},
			wantKind: llm.KindContentFilter},
		{name: "gemini image safety", typ: "gemini", model: "gemini-2.5-flash-image", golden: "gemini_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent",
			answer:   answer{200, "", `{"candidates":[{"content":{"parts":[]},"finishReason":"IMAGE_SAFETY","finishMessage":"Unable to show the generated image."}]}`},
			wantKind: llm.KindContentFilter},
		{name: "gemini text only", typ: "gemini", model: "gemini-2.5-flash", golden: "gemini_generation_textonly.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash:generateContent",
			answer:   answer{200, "", `{"candidates":[{"content":{"parts":[{"text":"I cannot draw."}]},"finishReason":"STOP"}]}`},
			wantKind: llm.KindUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.answer)
			base := f.srv.URL
			if tc.typ == "openai" {
				base += "/v1"
			}
			im, err := NewImager(Options{Name: "prov", Type: tc.typ, BaseURL: base, APIKey: "sk-test-secret", Model: tc.model, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			req := ImageRequest{Prompt: "a red square", Size: "1024x1024"}
			if tc.source {
				req.Source = sourceFile(t)
				req.Prompt = "turn it into a sketch"
			}
			img, err := im.Image(context.Background(), req)
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("provider called %d times, want once", len(reqs))
			}
			r := reqs[0]
			if r.Path != tc.wantPath {
				t.Errorf("path %s, want %s", r.Path, tc.wantPath)
			}
			if tc.typ == "openai" && r.Auth != "Bearer sk-test-secret" || tc.typ == "gemini" && r.GoogKey != "sk-test-secret" {
				t.Errorf("not authorised: %+v", r)
			}
			golden(t, tc.golden, r)
			if tc.wantKind != "" {
				if err == nil {
					t.Fatal("no error")
				}
				if k := llm.KindOf(err); k != tc.wantKind {
					t.Errorf("kind %s, want %s (%v)", k, tc.wantKind, err)
				}
				if strings.Contains(err.Error(), "sk-test-secret") {
					t.Errorf("the key leaked into %v", err)
				}
				_, refused := Refusal(err)
				if refused != (tc.wantKind == llm.KindContentFilter) {
					t.Errorf("Refusal = %v for %v", refused, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(img.Data, pngBytes) || img.MIME != "image/png" || img.Note != tc.wantNote || img.Usage != tc.wantUsage {
				t.Errorf("image %d bytes %s note %q usage %+v", len(img.Data), img.MIME, img.Note, img.Usage)
			}
		})
	}
}

// An answer larger than the cap allows is refused while reading, not
// decoded into memory.
func TestImageOverCap(t *testing.T) {
	big := bytes.Repeat([]byte{1}, 64<<10)
	f := newFake(t, answer{200, "", `{"data":[{"b64_json":"` + b64(big) + `"}]}`})
	im, _ := NewImager(Options{Type: "openai", BaseURL: f.srv.URL, Model: "gpt-image-1", MaxBytes: 1 << 10})
	if _, err := im.Image(context.Background(), ImageRequest{Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("err = %v, want over the cap", err)
	}
}

func TestRefusalSentence(t *testing.T) {
	e := &llm.Error{Kind: llm.KindContentFilter, Message: "Your request was rejected\nby the safety system. {\"json\": true}"}
	s, ok := Refusal(fmt.Errorf("wrapped: %w", e))
	if !ok || !strings.HasPrefix(s, "The provider refused this request under its content policy") || strings.Contains(s, "\n") || !strings.HasSuffix(s, ".") {
		t.Errorf("Refusal = %q, %v", s, ok)
	}
	if _, ok := Refusal(errors.New("boom")); ok {
		t.Error("a plain error is no refusal")
	}
}

func TestSpeechWire(t *testing.T) {
	ogg := append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{3}, 100)...)
	cases := []struct {
		name     string
		voice    string
		answer   answer
		golden   string
		wantKind llm.ErrorKind
	}{
		{name: "opus", voice: "", answer: answer{200, "audio/ogg", string(ogg)}, golden: "openai_speech.txt"},
		{name: "voice", voice: "nova", answer: answer{200, "audio/ogg", string(ogg)}, golden: "openai_speech_nova.txt"},
		{name: "rate limited", answer: answer{429, "", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
			golden: "openai_speech.txt", wantKind: llm.KindRateLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.answer)
			sp, err := NewSpeaker(Options{Name: "prov", Type: "openai", BaseURL: f.srv.URL + "/v1", APIKey: "k", Model: "gpt-4o-mini-tts"})
			if err != nil {
				t.Fatal(err)
			}
			s, err := sp.Speak(context.Background(), SpeechRequest{Text: "Hello, Anna! Happy birthday.", Voice: tc.voice})
			reqs := f.requests()
			if len(reqs) != 1 || reqs[0].Path != "/v1/audio/speech" {
				t.Fatalf("requests %+v", reqs)
			}
			golden(t, tc.golden, reqs[0])
			if tc.wantKind != "" {
				if llm.KindOf(err) != tc.wantKind {
					t.Fatalf("err %v, want kind %s", err, tc.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Body.Close()
			b, _ := io.ReadAll(s.Body)
			if !bytes.Equal(b, ogg) || s.MIME != "audio/ogg" {
				t.Errorf("speech %d bytes %s", len(b), s.MIME)
			}
		})
	}
}

func TestVideoWire(t *testing.T) {
	mp4 := append([]byte("\x00\x00\x00\x18ftypmp42"), bytes.Repeat([]byte{5}, 200)...)
	job := func(status string, progress int, extra string) answer {
		return answer{200, "", fmt.Sprintf(`{"id":"video_123","object":"video","model":"sora-2","status":%q,"progress":%d,"seconds":"4","size":"720x1280"%s}`, status, progress, extra)}
	}
	t.Run("submit, poll, download, delete", func(t *testing.T) {
		f := newFake(t, job("queued", 0, ""), job("in_progress", 40, ""), job("completed", 100, ""),
			answer{200, "video/mp4", string(mp4)}, answer{200, "", `{"id":"video_123","object":"video.deleted","deleted":true}`})
		v, err := NewVideos(Options{Name: "prov", Type: "openai", BaseURL: f.srv.URL + "/v1", APIKey: "k", Model: "sora-2"})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		j, err := v.Submit(ctx, VideoRequest{Prompt: "a cat on a skateboard", Seconds: 4, Size: "720x1280"})
		if err != nil || j.ID != "video_123" || j.State != JobQueued {
			t.Fatalf("submit: %+v %v", j, err)
		}
		if j, err = v.Status(ctx, j.ID); err != nil || j.State != JobInProgress || j.Progress != 40 {
			t.Fatalf("status: %+v %v", j, err)
		}
		if j, err = v.Status(ctx, j.ID); err != nil || j.State != JobCompleted || j.Seconds != 4 {
			t.Fatalf("status: %+v %v", j, err)
		}
		body, err := v.Content(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(body)
		body.Close()
		if !bytes.Equal(b, mp4) {
			t.Errorf("content %d bytes", len(b))
		}
		if err := v.Cancel(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		reqs := f.requests()
		want := []string{"POST /v1/videos", "GET /v1/videos/video_123", "GET /v1/videos/video_123", "GET /v1/videos/video_123/content", "DELETE /v1/videos/video_123"}
		for i, r := range reqs {
			if got := r.Method + " " + r.Path; i >= len(want) || got != want[i] {
				t.Errorf("request %d: %s", i, got)
			}
		}
		golden(t, "openai_video_submit.txt", reqs[0])
	})
	t.Run("failed job", func(t *testing.T) {
		f := newFake(t, job("failed", 0, `,"error":{"code":"internal_error","message":"The video could not be rendered."}`))
		v, _ := NewVideos(Options{Type: "openai", BaseURL: f.srv.URL, Model: "sora-2"})
		j, err := v.Status(context.Background(), "video_123")
		if err != nil || j.State != JobFailed || j.Err == nil || !strings.Contains(j.Err.Error(), "could not be rendered") {
			t.Fatalf("%+v %v", j, err)
		}
		if _, refused := Refusal(j.Err); refused {
			t.Error("a failed render is not a refusal")
		}
	})
	t.Run("refused job", func(t *testing.T) {
		f := newFake(t, job("failed", 0, `,"error":{"code":"moderation_blocked","message":"This prompt was blocked by our moderation system."}`))
		v, _ := NewVideos(Options{Type: "openai", BaseURL: f.srv.URL, Model: "sora-2"})
		j, err := v.Status(context.Background(), "video_123")
		if err != nil {
			t.Fatal(err)
		}
		if s, refused := Refusal(j.Err); !refused || !strings.Contains(s, "blocked by our moderation") {
			t.Errorf("refusal %q %v", s, refused)
		}
	})
	t.Run("submit refused", func(t *testing.T) {
		f := newFake(t, answer{400, "", `{"error":{"message":"Your request was blocked by our moderation system.","type":"invalid_request_error","code":"moderation_blocked"}}`})
		v, _ := NewVideos(Options{Type: "openai", BaseURL: f.srv.URL, Model: "sora-2"})
		_, err := v.Submit(context.Background(), VideoRequest{Prompt: "x"})
		if _, refused := Refusal(err); !refused {
			t.Errorf("err %v is no refusal", err)
		}
	})
	t.Run("gone job", func(t *testing.T) {
		f := newFake(t, answer{404, "", `{"error":{"message":"Video not found","type":"invalid_request_error","code":"not_found"}}`})
		v, _ := NewVideos(Options{Type: "openai", BaseURL: f.srv.URL, Model: "sora-2"})
		if _, err := v.Status(context.Background(), "video_x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("err %v, want ErrNotFound", err)
		}
	})
}

func TestPrices(t *testing.T) {
	cases := []struct {
		model string
		units float64
		usage Usage
		want  int64
	}{
		{"gpt-image-1", 1, Usage{InputTokens: 20, OutputTokens: 272}, 1108000}, // 20*10/1e6 + 272*40/1e6 USD
		{"gpt-image-1-mini", 1, Usage{OutputTokens: 1000}, 800000},
		{"dall-e-3", 1, Usage{}, 4000000},
		{"gemini-2.5-flash-image", 1, Usage{InputTokens: 9, OutputTokens: 1290}, 3870270},
		{"gpt-4o-mini-tts", 60, Usage{}, 1500000},
		{"sora-2", 4, Usage{}, 40000000},
		{"sora-2-pro-2025-10-06", 8, Usage{}, 240000000},
	}
	for _, tc := range cases {
		p, ok := PriceOf(tc.model)
		if !ok {
			t.Errorf("%s: no price", tc.model)
			continue
		}
		if got := p.Cost(tc.units, tc.usage); got != tc.want {
			t.Errorf("%s: cost %d, want %d", tc.model, got, tc.want)
		}
	}
	if _, ok := PriceOf("my-local-diffusion"); ok {
		t.Error("an unknown model has a price")
	}
}

func TestAspectRatio(t *testing.T) {
	for size, want := range map[string]string{"1024x1024": "1:1", "1536x1024": "3:2", "1024x1536": "2:3", "1280x720": "16:9",
		"720x1280": "9:16", "auto": "", "": "", "2560x1080": "21:9"} {
		if got := aspectRatio(size); got != want {
			t.Errorf("%q: %q, want %q", size, got, want)
		}
	}
}
