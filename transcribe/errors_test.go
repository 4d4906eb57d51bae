package transcribe_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/llmfake"
	"github.com/botd-dev/botd/transcribe"
)

func TestProviderErrorsMapped(t *testing.T) {
	tests := []struct {
		name, typ   string
		status      int
		ctype, body string
		header      map[string]string

		kind       llm.ErrorKind
		retryable  bool
		tooLarge   bool
		retryAfter time.Duration
		says       string
	}{
		{name: "openai bad key echoed back", typ: "openai", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			kind: llm.KindAuth, says: "check the api key of provider acme (llm.providers.acme.api_key)"},
		{name: "openai rate limit", typ: "openai", status: 429, header: map[string]string{"Retry-After": "7"},
			body: `{"error":{"message":"Rate limit reached for whisper-1","type":"requests","code":"rate_limit_exceeded"}}`,
			kind: llm.KindRateLimit, retryable: true, retryAfter: 7 * time.Second, says: "try again later"},
		{name: "openai quota", typ: "openai", status: 429,
			body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			kind: llm.KindRateLimit, says: "quota"},
		{name: "proxy 413 page", typ: "openai", status: 413, ctype: "text/html",
			body: "<html><body><h1>413 Request Entity Too Large</h1></body></html>",
			kind: llm.KindBadRequest, tooLarge: true, says: "as too large"},
		{name: "openai 500", typ: "openai", status: 500, body: `{"error":{"message":"The server had an error","type":"server_error"}}`,
			kind: llm.KindTransport, retryable: true, says: "The server had an error"},
		{name: "openai 503", typ: "openai", status: 503, body: ``, kind: llm.KindOverloaded, retryable: true, says: "Service Unavailable"},
		{name: "no endpoint (FastAPI)", typ: "openai", status: 404, body: `{"detail":"Not Found"}`,
			kind: llm.KindBadRequest, says: "check llm.providers.acme.base_url and media.transcription.model; Not Found"},
		{name: "validation (FastAPI)", typ: "openai", status: 422, body: `{"detail":[{"loc":["body","file"],"msg":"field required"}]}`,
			kind: llm.KindBadRequest, says: "field required"},
		{name: "bare string error", typ: "openai", status: 400, body: `{"error":"Invalid file format."}`,
			kind: llm.KindBadRequest, says: "Invalid file format."},
		{name: "gemini bad key", typ: "gemini", status: 400,
			body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`,
			kind: llm.KindAuth, says: "check the api key of provider acme"},
		{name: "gemini quota", typ: "gemini", status: 429,
			body: `[{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]`,
			kind: llm.KindRateLimit, retryable: true, says: "Resource has been exhausted"},
		{name: "gemini overloaded", typ: "gemini", status: 503,
			body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			kind: llm.KindOverloaded, retryable: true, says: "The model is overloaded."},
		{name: "gemini too large", typ: "gemini", status: 413, body: `{"error":{"code":413,"message":"Request payload size exceeds the limit: 20971520 bytes.","status":"FAILED_PRECONDITION"}}`,
			kind: llm.KindBadRequest, tooLarge: true, says: "exceeds the limit"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := llmfake.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				io.Copy(io.Discard, r.Body)
				ct := tt.ctype
				if ct == "" {
					ct = "application/json"
				}
				w.Header().Set("Content-Type", ct)
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			tr := newT(t, transcribe.Options{Name: "acme", Type: tt.typ, BaseURL: srv.URL, APIKey: testKey, Model: "gpt-4o-transcribe", DB: newDB(t)})
			audio := audioBytes(uint64(200+i), 512)
			for attempt := range 2 {
				_, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "v.ogg", "audio/ogg")
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("err = %v, want an *llm.Error", err)
				}
				if e.Kind != tt.kind || e.Retryable != tt.retryable || e.Status != tt.status || e.Provider != "acme" {
					t.Errorf("error = kind %s retryable %v status %d provider %q; want %s %v %d acme",
						e.Kind, e.Retryable, e.Status, e.Provider, tt.kind, tt.retryable, tt.status)
				}
				if errors.Is(err, transcribe.ErrTooLarge) != tt.tooLarge {
					t.Errorf("errors.Is(ErrTooLarge) = %v, want %v", !tt.tooLarge, tt.tooLarge)
				}
				if e.RetryAfter != tt.retryAfter {
					t.Errorf("RetryAfter = %s, want %s", e.RetryAfter, tt.retryAfter)
				}
				if msg := err.Error(); !strings.Contains(msg, tt.says) || strings.Contains(msg, testKey) || strings.Contains(msg, testKey[:12]) {
					t.Errorf("message %q: want %q in it and no API key", msg, tt.says)
				}
				if attempt == 1 && calls.Load() != 2 {
					t.Errorf("provider calls = %d after two failures; a failure must not be cached", calls.Load())
				}
			}
		})
	}
}

func TestUnreachableProvider(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	tr := newT(t, transcribe.Options{BaseURL: url, APIKey: testKey, DB: newDB(t)})
	audio := audioBytes(300, 100)
	_, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
	if llm.KindOf(err) != llm.KindTransport || !llm.IsRetryable(err) || strings.Contains(err.Error(), testKey) {
		t.Errorf("err = %v (kind %s), want a retryable transport error", err, llm.KindOf(err))
	}
}

func TestErrorDocumentWithStatus200(t *testing.T) {
	f := newFakeOpenAI(t, jsonAnswer(`{"error":{"message":"upstream said no","type":"server_error"}}`))
	tr := newT(t, transcribe.Options{BaseURL: f.URL, DB: newDB(t)})
	audio := audioBytes(301, 100)
	_, err := tr.Transcribe(context.Background(), bytes.NewReader(audio), int64(len(audio)), "", "audio/ogg")
	if err == nil || !strings.Contains(err.Error(), "upstream said no") {
		t.Errorf("err = %v, want the error document's message", err)
	}
}
