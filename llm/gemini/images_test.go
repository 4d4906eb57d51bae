package gemini_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/gemini"
	"github.com/botd-dev/botd/llm/internal/llmtest"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/llm/providers"
)

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 64)...)

func TestImageWire(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	ok := llmfake.Answer{Status: 200, Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"Here is your red square."},{"inlineData":{"mimeType":"image/png","data":"` + b64 + `"}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1290}}`}
	cases := []struct {
		name     string
		model    string
		source   bool
		answer   llmfake.Answer
		golden   string
		wantPath string
		wantKind llm.ErrorKind // "" is success
		wantCode string
	}{
		{name: "generation", model: "gemini-2.5-flash-image", answer: ok, golden: "image_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent"},
		{name: "edit inline", model: "gemini-2.5-flash-image", source: true, answer: ok, golden: "image_edit.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent"},
		{name: "prompt blocked", model: "gemini-2.5-flash-image", golden: "image_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent",
			answer:   llmfake.Answer{Status: 200, Body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9}}`},
			wantKind: llm.KindContentFilter, wantCode: "PROHIBITED_CONTENT"},
		{name: "image safety", model: "gemini-2.5-flash-image", golden: "image_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent",
			answer:   llmfake.Answer{Status: 200, Body: `{"candidates":[{"content":{"parts":[]},"finishReason":"IMAGE_SAFETY","finishMessage":"Unable to show the generated image."}]}`},
			wantKind: llm.KindContentFilter, wantCode: "IMAGE_SAFETY"},
		{name: "text only", model: "gemini-2.5-flash", golden: "image_generation_textonly.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash:generateContent",
			answer:   llmfake.Answer{Status: 200, Body: `{"candidates":[{"content":{"parts":[{"text":"I cannot draw."}]},"finishReason":"STOP"}]}`},
			wantKind: llm.KindUnknown, wantCode: gemini.NoImage},
		{name: "bad key", model: "gemini-2.5-flash-image", golden: "image_generation.txt",
			wantPath: "/v1beta/models/gemini-2.5-flash-image:generateContent",
			answer:   llmfake.Answer{Status: 400, Body: `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}`},
			wantKind: llm.KindAuth, wantCode: "INVALID_ARGUMENT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmfake.Queue(tc.answer))
			p := gemini.New(llmtest.APIKey, srv.URL, srv.Client(), providers.WithName("prov"))
			req := llm.ImageRequest{Model: tc.model, Prompt: "a red square", Size: "1024x1024", MaxBytes: 1 << 20}
			if tc.source {
				path := filepath.Join(t.TempDir(), "src.png")
				if err := os.WriteFile(path, pngBytes, 0o600); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				req.Source = &llm.File{R: f, Size: int64(len(pngBytes)), MIME: "image/png", Name: "evil\"name.png"}
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
			if r.Header.Get("x-goog-api-key") != llmtest.APIKey {
				t.Errorf("not authorised: %v", r.Header)
			}
			llmtest.GoldenRequest(t, "testdata/"+tc.golden, r)
			if tc.wantKind != "" {
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != tc.wantKind || e.Code != tc.wantCode {
					t.Errorf("err %#v, want kind %s code %s", err, tc.wantKind, tc.wantCode)
				}
				if err != nil && strings.Contains(err.Error(), llmtest.APIKey) {
					t.Errorf("the key leaked into %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := llm.MediaUsage{InputTokens: 9, OutputTokens: 1290}
			if !bytes.Equal(img.Data, pngBytes) || img.MIME != "image/png" || img.Note != "Here is your red square." || img.Usage != want {
				t.Errorf("image %d bytes %s note %q usage %+v", len(img.Data), img.MIME, img.Note, img.Usage)
			}
		})
	}
}
