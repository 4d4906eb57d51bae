package connlimit

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The defaults of a server behind a Tracker (`botd mcp --http` and the web
// channel). Headers from a loopback or LAN client take milliseconds; the
// idle timeout stays above Go's and most clients' and browsers' own 90 s
// idle timeout, so that the client, not the server, closes an idle
// connection and never sends a request into one being closed. 512
// connections stay well below the 1024 open files a process may be
// limited to.
const (
	DefaultMaxConns          = 512
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
)

// Server says how to build an http.Server behind a Tracker. A zero limit
// takes its default.
type Server struct {
	MaxConns          int
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// What names the server in the Tracker's warning ("mcp http", "web").
	What string
	Log  *slog.Logger
	// ErrorLevel is the level of the net/http server's own error lines
	// (TLS handshakes, broken connections).
	ErrorLevel slog.Level
}

// New returns an http.Server serving h whose request contexts derive from
// ctx (so open streams end with it) and whose connections a Tracker caps.
// Serve it on Listener(ln), so the Tracker knows who has sent anything.
func (s Server) New(ctx context.Context, h http.Handler) *http.Server {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	conns := New(positiveOr(s.MaxConns, DefaultMaxConns), s.What, log)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: positiveOr(s.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       positiveOr(s.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    positiveOr(s.MaxHeaderBytes, DefaultMaxHeaderBytes),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       conns.ConnContext,
		ConnState:         conns.ConnState,
		ErrorLog:          slog.NewLogLogger(log.Handler(), s.ErrorLevel),
	}
}

func positiveOr[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}
