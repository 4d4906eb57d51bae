package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/llm/openai"
	"github.com/botd-dev/botd/llm/providers"
)

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 64)...)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// sourceFile is a PNG on disk, read only through its descriptor, with a
// stranger's name that must not reach a header.
func sourceFile(t *testing.T) *llm.File {
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
	return &llm.File{R: f, Size: int64(len(pngBytes)), MIME: "image/png", Name: "evil\"name.png"}
}

func mediaProvider(t *testing.T, answers ...llmfake.Answer) (*openai.Provider, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(t, llmfake.Queue(answers...))
	return openai.New(llmtest.APIKey, srv.URL+"/v1", srv.Client(), providers.WithName("prov")), srv
}

func TestImageWire(t *testing.T) {
	ok := llmfake.Answer{Status: 200, Body: `{"created":1,"data":[{"b64_json":"` + b64(pngBytes) + `","revised_prompt":"a red square"}],"usage":{"input_tokens":20,"output_tokens":272}}`}
	cases := []struct {
		name     string
		model    string
		source   bool
		answer   llmfake.Answer
		golden   string
		wantPath string
		wantKind llm.ErrorKind // "" is success
	}{
		{name: "generation", model: "gpt-image-1", answer: ok, golden: "media_generation.txt", wantPath: "/v1/images/generations"},
		{name: "dall-e asks for b64_json", model: "dall-e-3", answer: ok, golden: "media_generation_dalle.txt", wantPath: "/v1/images/generations"},
		{name: "edit is multipart", model: "gpt-image-1", source: true, answer: ok, golden: "media_edit.txt", wantPath: "/v1/images/edits"},
		{name: "refusal", model: "gpt-image-1", golden: "media_generation.txt", wantPath: "/v1/images/generations",
			answer:   llmfake.Answer{Status: 400, Body: `{"error":{"message":"Your request was rejected by the safety system. safety_violations=[violence].","type":"image_generation_user_error","param":null,"code":"moderation_blocked"}}`},
			wantKind: llm.KindContentFilter},
		{name: "refusal in words only", model: "gpt-image-1", golden: "media_generation.txt", wantPath: "/v1/images/generations",
			answer:   llmfake.Answer{Status: 400, Body: `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error"}}`},
			wantKind: llm.KindContentFilter},
		{name: "bad key", model: "gpt-image-1", golden: "media_generation.txt", wantPath: "/v1/images/generations",
			answer:   llmfake.Answer{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + llmtest.APIKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`},
			wantKind: llm.KindAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, srv := mediaProvider(t, tc.answer)
			req := llm.ImageRequest{Model: tc.model, Prompt: "a red square", Size: "1024x1024", MaxBytes: 1 << 20}
			if tc.source {
				req.Source = sourceFile(t)
				req.Prompt = "turn it into a sketch"
			}
			img, err := p.MakeImage(context.Background(), req)
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("provider called %d times, want once", len(reqs))
			}
			r := reqs[0]
			if r.Path != tc.wantPath {
				t.Errorf("path %s, want %s", r.Path, tc.wantPath)
			}
			if r.Header.Get("Authorization") != "Bearer "+llmtest.APIKey {
				t.Errorf("not authorised: %v", r.Header)
			}
			llmtest.GoldenRequest(t, "testdata/"+tc.golden, r)
			if tc.wantKind != "" {
				if k := llm.KindOf(err); k != tc.wantKind {
					t.Errorf("kind %s, want %s (%v)", k, tc.wantKind, err)
				}
				if err != nil && strings.Contains(err.Error(), llmtest.APIKey) {
					t.Errorf("the key leaked into %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := llm.MediaUsage{InputTokens: 20, OutputTokens: 272}
			if !bytes.Equal(img.Data, pngBytes) || img.MIME != "image/png" || img.Note != "a red square" || img.Usage != want {
				t.Errorf("image %d bytes %s note %q usage %+v", len(img.Data), img.MIME, img.Note, img.Usage)
			}
		})
	}
}

// An answer larger than the cap allows is refused while reading, not
// decoded into memory.
func TestImageOverCap(t *testing.T) {
	big := bytes.Repeat([]byte{1}, 64<<10)
	p, _ := mediaProvider(t, llmfake.Answer{Status: 200, Body: `{"data":[{"b64_json":"` + b64(big) + `"}]}`})
	if _, err := p.MakeImage(context.Background(), llm.ImageRequest{Model: "gpt-image-1", Prompt: "x", MaxBytes: 1 << 10}); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("err = %v, want over the cap", err)
	}
}

func TestSpeechWire(t *testing.T) {
	ogg := append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{3}, 100)...)
	cases := []struct {
		name     string
		voice    string
		answer   llmfake.Answer
		golden   string
		wantKind llm.ErrorKind
	}{
		{name: "opus", voice: "", answer: llmfake.Answer{Status: 200, ContentType: "audio/ogg", Body: string(ogg)}, golden: "media_speech.txt"},
		{name: "voice", voice: "nova", answer: llmfake.Answer{Status: 200, ContentType: "audio/ogg", Body: string(ogg)}, golden: "media_speech_nova.txt"},
		{name: "rate limited", answer: llmfake.Answer{Status: 429, Body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
			golden: "media_speech.txt", wantKind: llm.KindRateLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, srv := mediaProvider(t, tc.answer)
			s, err := p.MakeSpeech(context.Background(), llm.SpeechRequest{Model: "gpt-4o-mini-tts", Text: "Hello, Anna! Happy birthday.", Voice: tc.voice})
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Path != "/v1/audio/speech" {
				t.Fatalf("requests %+v", reqs)
			}
			llmtest.GoldenRequest(t, "testdata/"+tc.golden, reqs[0])
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
	job := func(status string, progress int, extra string) llmfake.Answer {
		return llmfake.Answer{Status: 200, Body: fmt.Sprintf(`{"id":"video_123","object":"video","model":"sora-2","status":%q,"progress":%d,"seconds":"4","size":"720x1280"%s}`, status, progress, extra)}
	}
	ctx := context.Background()
	t.Run("submit, poll, download, delete", func(t *testing.T) {
		p, srv := mediaProvider(t, job("queued", 0, ""), job("in_progress", 40, ""), job("completed", 100, ""),
			llmfake.Answer{Status: 200, ContentType: "video/mp4", Body: string(mp4)}, llmfake.Answer{Status: 200, Body: `{"id":"video_123","object":"video.deleted","deleted":true}`})
		j, err := p.SubmitVideo(ctx, llm.VideoRequest{Model: "sora-2", Prompt: "a cat on a skateboard", Seconds: 4, Size: "720x1280"})
		if err != nil || j.ID != "video_123" || j.State != llm.VideoQueued {
			t.Fatalf("submit: %+v %v", j, err)
		}
		if j, err = p.VideoStatus(ctx, j.ID); err != nil || j.State != llm.VideoInProgress || j.Progress != 40 {
			t.Fatalf("status: %+v %v", j, err)
		}
		if j, err = p.VideoStatus(ctx, j.ID); err != nil || j.State != llm.VideoCompleted || j.Seconds != 4 {
			t.Fatalf("status: %+v %v", j, err)
		}
		body, err := p.VideoContent(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(body)
		body.Close()
		if !bytes.Equal(b, mp4) {
			t.Errorf("content %d bytes", len(b))
		}
		if err := p.CancelVideo(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		want := []string{"POST /v1/videos", "GET /v1/videos/video_123", "GET /v1/videos/video_123", "GET /v1/videos/video_123/content", "DELETE /v1/videos/video_123"}
		for i, r := range reqs {
			if got := r.Method + " " + r.Path; i >= len(want) || got != want[i] {
				t.Errorf("request %d: %s", i, got)
			}
		}
		llmtest.GoldenRequest(t, "testdata/media_video_submit.txt", reqs[0])
	})
	t.Run("failed job", func(t *testing.T) {
		p, _ := mediaProvider(t, job("failed", 0, `,"error":{"code":"internal_error","message":"The video could not be rendered."}`))
		j, err := p.VideoStatus(ctx, "video_123")
		if err != nil || j.State != llm.VideoFailed || j.Err == nil || !strings.Contains(j.Err.Error(), "could not be rendered") {
			t.Fatalf("%+v %v", j, err)
		}
		if llm.KindOf(j.Err) == llm.KindContentFilter {
			t.Error("a failed render is not a refusal")
		}
	})
	t.Run("refused job", func(t *testing.T) {
		p, _ := mediaProvider(t, job("failed", 0, `,"error":{"code":"moderation_blocked","message":"This prompt was blocked by our moderation system."}`))
		j, err := p.VideoStatus(ctx, "video_123")
		if err != nil || llm.KindOf(j.Err) != llm.KindContentFilter || !strings.Contains(j.Err.Error(), "blocked by our moderation") {
			t.Errorf("%+v %v", j, err)
		}
	})
	t.Run("submit refused", func(t *testing.T) {
		p, _ := mediaProvider(t, llmfake.Answer{Status: 400, Body: `{"error":{"message":"Your request was blocked by our moderation system.","type":"invalid_request_error","code":"moderation_blocked"}}`})
		if _, err := p.SubmitVideo(ctx, llm.VideoRequest{Model: "sora-2", Prompt: "x"}); llm.KindOf(err) != llm.KindContentFilter {
			t.Errorf("err %v is no refusal", err)
		}
	})
	t.Run("gone job", func(t *testing.T) {
		p, _ := mediaProvider(t, llmfake.Answer{Status: 404, Body: `{"error":{"message":"Video not found","type":"invalid_request_error","code":"not_found"}}`})
		_, err := p.VideoStatus(ctx, "video_x")
		var e *llm.Error
		if !errors.As(err, &e) || e.Status != http.StatusNotFound {
			t.Errorf("err %v, want a 404", err)
		}
	})
}
