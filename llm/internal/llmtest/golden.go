package llmtest

import (
	"bytes"
	"fmt"
	"mime"
	"testing"
)

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
