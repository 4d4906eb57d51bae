package transcribe_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/transcribe"
)

// geminiRequest is what the fake Gemini saw.
type geminiRequest struct {
	Path, RawQuery, Key string
	ContentLength       int64
	BodyLen             int
	Body                struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text       string `json:"text"`
				InlineData *struct {
					MimeType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"contents"`
	}
}

func newFakeGemini(t *testing.T, answer string) (*llmfake.Server, func() geminiRequest) {
	var mu sync.Mutex
	var last geminiRequest
	srv := llmfake.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake gemini: %v", err)
			return
		}
		got := geminiRequest{Path: r.URL.Path, RawQuery: r.URL.RawQuery, Key: r.Header.Get("x-goog-api-key"), ContentLength: r.ContentLength, BodyLen: len(b)}
		if err := json.Unmarshal(b, &got.Body); err != nil {
			t.Errorf("fake gemini: request is not JSON: %v", err)
		}
		mu.Lock()
		last = got
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	return srv, func() geminiRequest {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

func TestGeminiRequestShape(t *testing.T) {
	audio := audioBytes(10, 30_001) // not a multiple of 3: base64 padding
	srv, last := newFakeGemini(t, `{"candidates":[{"content":{"role":"model","parts":[
		{"text":"Let me listen.","thought":true},{"text":"Guten Morgen, "},{"text":"alle zusammen.\n"}]},"finishReason":"STOP"}]}`)
	tr := newT(t, transcribe.Options{Name: "google", Type: "gemini", BaseURL: srv.URL + "/", APIKey: testKey, Model: "models/gemini-2.5-flash", DB: newDB(t)})
	got, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg; codecs=opus")
	if err != nil {
		t.Fatal(err)
	}
	want := transcribe.Transcript{Text: "Guten Morgen, alle zusammen.", Model: "models/gemini-2.5-flash"}
	if got != want {
		t.Errorf("transcript = %+v, want %+v", got, want)
	}
	r := last()
	if r.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || r.RawQuery != "" {
		t.Errorf("request to %s?%s", r.Path, r.RawQuery)
	}
	if r.Key != testKey {
		t.Errorf("x-goog-api-key = %q", r.Key)
	}
	if r.ContentLength != int64(r.BodyLen) {
		t.Errorf("Content-Length %d, body %d bytes", r.ContentLength, r.BodyLen)
	}
	if len(r.Body.Contents) != 1 || len(r.Body.Contents[0].Parts) != 2 {
		t.Fatalf("contents = %+v", r.Body.Contents)
	}
	parts := r.Body.Contents[0].Parts
	if parts[0].InlineData == nil || parts[0].InlineData.MimeType != "audio/ogg" {
		t.Fatalf("first part = %+v, want the audio inline as audio/ogg", parts[0])
	}
	if b, err := base64.StdEncoding.DecodeString(parts[0].InlineData.Data); err != nil || !bytes.Equal(b, audio) {
		t.Errorf("inline data does not decode to the audio (%v)", err)
	}
	if !strings.Contains(parts[1].Text, "Transcribe this audio verbatim") {
		t.Errorf("prompt = %q", parts[1].Text)
	}
}

func TestGeminiAnswers(t *testing.T) {
	tests := []struct {
		name, answer string
		wantText     string
		wantKind     llm.ErrorKind
	}{
		{"no speech", `{"candidates":[{"content":{"parts":[{"text":"[no speech]\n"}]},"finishReason":"STOP"}]}`, "", ""},
		{"no parts", `{"candidates":[{"finishReason":"STOP"}]}`, "", ""},
		{"cut off", `{"candidates":[{"content":{"parts":[{"text":"and then we"}]},"finishReason":"MAX_TOKENS"}]}`,
			"and then we [transcript cut off: the model reached its output limit]", ""},
		{"withheld", `{"candidates":[{"finishReason":"SAFETY"}]}`, "", llm.KindContentFilter},
		{"blocked", `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`, "", llm.KindContentFilter},
		{"stopped", `{"candidates":[{"finishReason":"OTHER"}]}`, "", llm.KindUnknown},
		{"no candidates", `{}`, "", llm.KindUnknown},
		{"not json", `<html>oops</html>`, "", llm.KindUnknown},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newFakeGemini(t, tt.answer)
			tr := newT(t, transcribe.Options{Type: "gemini", BaseURL: srv.URL, Model: "gemini-2.5-flash", DB: newDB(t)})
			audio := audioBytes(uint64(100+i), 10)
			got, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/mpeg")
			if tt.wantKind != "" {
				if llm.KindOf(err) != tt.wantKind {
					t.Errorf("err = %v, want kind %s", err, tt.wantKind)
				}
				return
			}
			if err != nil || got.Text != tt.wantText {
				t.Errorf("Transcribe = %q, %v; want %q", got.Text, err, tt.wantText)
			}
		})
	}
}
