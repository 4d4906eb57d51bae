package llmtest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"testing"
)

// Answer is one canned reply of [Queue]; an empty ContentType means JSON.
type Answer struct {
	Status      int
	ContentType string
	Body        string
}

// Queue answers each request with the next answer, and with a 500 once
// they run out.
func Queue(answers ...Answer) http.HandlerFunc {
	var mu sync.Mutex
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		a := Answer{Status: 500, Body: `{"error":{"message":"no answer left"}}`}
		if len(answers) > 0 {
			a, answers = answers[0], answers[1:]
		}
		mu.Unlock()
		if a.ContentType == "" {
			a.ContentType = "application/json"
		}
		w.Header().Set("Content-Type", a.ContentType)
		w.WriteHeader(a.Status)
		io.WriteString(w, a.Body)
	}
}

// GoldenRequest compares the method, path and body of r with testdata file
// path; a multipart body's random boundary is replaced first.
func GoldenRequest(t testing.TB, path string, r Recorded) {
	t.Helper()
	body := r.Body
	if _, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && params["boundary"] != "" {
		body = bytes.ReplaceAll(body, []byte(params["boundary"]), []byte("BOUNDARY"))
	}
	Golden(t, path, fmt.Appendf(nil, "%s %s\n%s\n", r.Method, r.Path, body))
}
