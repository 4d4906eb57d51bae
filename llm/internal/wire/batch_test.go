package wire

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
)

const testKey = "sk-test-SECRETKEY-0123456789"

// Lines hands over each non-blank line as it streams, whatever the line
// ending; a line over the cap and a non-2xx answer are classified errors
// (the latter scrubbed of the key), and fn's error ends the read as is.
func TestLines(t *testing.T) {
	stop := errors.New("stop")
	tests := []struct {
		name   string
		status int
		body   string
		max    int
		fnErr  error
		want   []string
		kind   llm.ErrorKind
	}{
		{name: "lines", status: 200, body: "{\"a\":1}\n\n{\"b\":2}\r\n  \n{\"c\":3}", max: 16, want: []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}},
		{name: "line at the cap", status: 200, body: "0123456789abcdef\n", max: 16, want: []string{"0123456789abcdef"}},
		{name: "line at the cap, CRLF", status: 200, body: "0123456789abcdef\r\n", max: 16, want: []string{"0123456789abcdef"}},
		{name: "last line over the cap", status: 200, body: "{}\n0123456789abcdefg", max: 16, want: []string{"{}"}, kind: llm.KindUnknown},
		{name: "line over the cap", status: 200, body: "{}\n0123456789abcdefg\n{}\n", max: 16, want: []string{"{}"}, kind: llm.KindUnknown},
		{name: "fn fails", status: 200, body: "{}\n{}\n", max: 16, fnErr: stop, want: []string{"{}"}},
		{name: "not found", status: 404, body: `no file for ` + testKey, max: 16, kind: llm.KindBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{Provider: "test", APIKey: testKey, HTTP: srv.Client()}
			var got []string
			err := c.Lines(t.Context(), srv.URL, nil, tt.max, func(line []byte) error {
				got = append(got, string(line))
				return tt.fnErr
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines %q, want %q", got, tt.want)
			}
			switch {
			case tt.fnErr != nil:
				if !errors.Is(err, tt.fnErr) {
					t.Errorf("err %v, want fn's", err)
				}
			case tt.kind == "":
				if err != nil {
					t.Errorf("err %v", err)
				}
			default:
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != tt.kind || e.Provider != "test" || strings.Contains(e.Message, testKey) {
					t.Errorf("err %+v, want %s from test without the key", err, tt.kind)
				}
			}
		})
	}
}
