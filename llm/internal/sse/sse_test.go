package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"basic", "event: ping\ndata: {}\n\n", []Event{{Type: "ping", Data: []byte("{}")}}},
		{"crlf and comments", ": keep-alive\r\ndata: a\r\n\r\n", []Event{{Data: []byte("a")}}},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{Data: []byte("a\nb")}}},
		{"no space after colon", "data:x\nid: 7\n\n", []Event{{Data: []byte("x"), ID: "7"}}},
		{"missing final blank line", "data: a\n\ndata: b", []Event{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"long line", "data: " + long + "\n\n", []Event{{Data: []byte(long)}}},
		{"blank lines only", "\n\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in))
			var got []Event
			for {
				ev, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				ev.Data = append([]byte(nil), ev.Data...)
				got = append(got, ev)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].Type != tt.want[i].Type || string(got[i].Data) != string(tt.want[i].Data) || got[i].ID != tt.want[i].ID {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
