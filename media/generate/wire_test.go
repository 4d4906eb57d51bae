package generate

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
)

// answer is one canned reply of the fake provider.
func answer(status int, ctype, body string) llmfake.Answer {
	return llmfake.Answer{Status: status, ContentType: ctype, Body: body}
}

// newFake is a loopback provider (llmfake's) that answers each request
// with the next canned answer and records what it got.
func newFake(t *testing.T, answers ...llmfake.Answer) *llmfake.Server {
	t.Helper()
	return llmfake.NewServer(t, llmfake.Queue(answers...))
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// The HTTP and its golden bytes are tested in llm/openai and llm/gemini;
// these tests hold what this package adds: the model and cap of the
// config, errors worded for media.generation, refusals as sentences and
// ErrNotFound for jobs the provider forgot.

func TestErrorsNameTheConfig(t *testing.T) {
	cases := []struct {
		name, typ, model string
		answer           llmfake.Answer
		kind             llm.ErrorKind
		says             string
	}{
		{name: "openai bad key", typ: "openai", model: "gpt-image-1",
			answer: answer(401, "", `{"error":{"message":"Incorrect API key provided: sk-test-secret","type":"invalid_request_error","code":"invalid_api_key"}}`),
			kind:   llm.KindAuth, says: "check llm.providers.prov.api_key"},
		{name: "openai quota", typ: "openai", model: "gpt-image-1",
			answer: answer(429, "", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`),
			kind:   llm.KindRateLimit, says: "quota or billing limit is used up"},
		{name: "no such endpoint", typ: "openai", model: "my-diffusion", answer: answer(404, "text/html", `<html>Not Found</html>`),
			kind: llm.KindBadRequest, says: "check llm.providers.prov.base_url and the model in media.generation"},
		{name: "openai refusal", typ: "openai", model: "gpt-image-1",
			answer: answer(400, "", `{"error":{"message":"Your request was rejected by the safety system.","type":"image_generation_user_error","code":"moderation_blocked"}}`),
			kind:   llm.KindContentFilter, says: "safety system"},
		{name: "gemini text only", typ: "gemini", model: "gemini-2.5-flash",
			answer: answer(200, "", `{"candidates":[{"content":{"parts":[{"text":"I cannot draw."}]},"finishReason":"STOP"}]}`),
			kind:   llm.KindUnknown, says: "check that media.generation.image.model makes images"},
		{name: "gemini bad key", typ: "gemini", model: "gemini-2.5-flash-image",
			answer: answer(403, "", `{"error":{"code":403,"message":"Permission denied for sk-test-secret","status":"PERMISSION_DENIED"}}`),
			kind:   llm.KindAuth, says: "check llm.providers.prov.api_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.answer)
			im, err := NewImager(Options{Name: "prov", Type: tc.typ, BaseURL: f.URL, APIKey: "sk-test-secret", Model: tc.model, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			_, err = im.Image(context.Background(), ImageRequest{Prompt: "a red square"})
			if k := llm.KindOf(err); k != tc.kind || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err %v (%s), want kind %s saying %q", err, k, tc.kind, tc.says)
			}
			if err != nil && strings.Contains(err.Error(), "sk-test-secret") {
				t.Errorf("the key leaked into %v", err)
			}
			if _, refused := Refusal(err); refused != (tc.kind == llm.KindContentFilter) {
				t.Errorf("Refusal = %v for %v", refused, err)
			}
			if r := f.Requests(); len(r) != 1 || !strings.Contains(r[0].Path+string(r[0].Body), tc.model) {
				t.Errorf("the configured model was not asked for: %+v", r)
			}
		})
	}
}

// The cap of media.max_download_bytes reaches the vendor.
func TestImageOverCap(t *testing.T) {
	big := bytes.Repeat([]byte{1}, 64<<10)
	f := newFake(t, answer(200, "", `{"data":[{"b64_json":"`+b64(big)+`"}]}`))
	im, _ := NewImager(Options{Type: "openai", BaseURL: f.URL, Model: "gpt-image-1", MaxBytes: 1 << 10})
	if _, err := im.Image(context.Background(), ImageRequest{Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("err = %v, want over the cap", err)
	}
}

func TestNoSuchCapability(t *testing.T) {
	if _, err := NewSpeaker(Options{Type: "gemini", Model: "m"}); err == nil || !strings.Contains(err.Error(), "use an openai-compatible provider") {
		t.Errorf("speech from gemini: %v", err)
	}
	if _, err := NewVideos(Options{Type: "gemini", Model: "m"}); err == nil || !strings.Contains(err.Error(), "use openai") {
		t.Errorf("videos from gemini: %v", err)
	}
	if _, err := NewImager(Options{Type: "anthropic", Model: "m"}); err == nil || !strings.Contains(err.Error(), "no image API") {
		t.Errorf("images from anthropic: %v", err)
	}
}

func TestSpeechAndVideoJobs(t *testing.T) {
	ogg := append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{3}, 100)...)
	f := newFake(t, answer(200, "audio/ogg", string(ogg)),
		answer(200, "", `{"id":"video_123","object":"video","status":"failed","progress":0,"seconds":"4","error":{"code":"moderation_blocked","message":"This prompt was blocked by our moderation system."}}`),
		answer(404, "", `{"error":{"message":"Video not found","type":"invalid_request_error","code":"not_found"}}`))
	o := Options{Name: "prov", Type: "openai", BaseURL: f.URL + "/v1", APIKey: "k", Model: "gpt-4o-mini-tts"}
	sp, err := NewSpeaker(o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sp.Speak(context.Background(), SpeechRequest{Text: "Hello"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(s.Body)
	s.Body.Close()
	if !bytes.Equal(b, ogg) || s.MIME != "audio/ogg" {
		t.Errorf("speech %d bytes %s", len(b), s.MIME)
	}
	o.Model = "sora-2"
	v, err := NewVideos(o)
	if err != nil {
		t.Fatal(err)
	}
	j, err := v.Status(context.Background(), "video_123")
	if s, refused := Refusal(j.Err); err != nil || j.State != JobFailed || !refused || !strings.Contains(s, "blocked by our moderation") {
		t.Errorf("refused job: %+v %v %q", j, err, s)
	}
	if _, err := v.Status(context.Background(), "video_x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("err %v, want ErrNotFound", err)
	}
	reqs := f.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[0].Body), `"model":"gpt-4o-mini-tts"`) || reqs[1].Path != "/v1/videos/video_123" {
		t.Errorf("requests %+v", reqs)
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
