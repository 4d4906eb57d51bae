package connlimit

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A zero or negative limit takes its default; a set one is kept.
func TestServerLimits(t *testing.T) {
	tests := []struct {
		name         string
		in           Server
		header, idle time.Duration
		maxHeader    int
	}{
		{"zero", Server{}, DefaultReadHeaderTimeout, DefaultIdleTimeout, DefaultMaxHeaderBytes},
		{"negative", Server{ReadHeaderTimeout: -1, IdleTimeout: -1, MaxHeaderBytes: -1},
			DefaultReadHeaderTimeout, DefaultIdleTimeout, DefaultMaxHeaderBytes},
		{"set", Server{ReadHeaderTimeout: time.Second, IdleTimeout: 3 * time.Second, MaxHeaderBytes: 100},
			time.Second, 3 * time.Second, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.in.New(context.Background(), http.NotFoundHandler())
			if srv.ReadHeaderTimeout != tc.header || srv.IdleTimeout != tc.idle || srv.MaxHeaderBytes != tc.maxHeader {
				t.Errorf("got %v, %v, %d; want %v, %v, %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes,
					tc.header, tc.idle, tc.maxHeader)
			}
			if srv.ConnContext == nil || srv.ConnState == nil {
				t.Error("the server does not count its connections")
			}
		})
	}
}
