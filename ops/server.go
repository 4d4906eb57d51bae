package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

// Readiness says whether this instance should get work: ok, or the reason
// it should not, a sentence without secrets, paths or addresses.
type Readiness func() (ok bool, reason string)

// maxConns bounds the server's open connections: a scraper, a health
// check and a person with curl need a handful, and a flood must not cost
// botd more than that.
const maxConns = 32

// Server serves /healthz, /readyz and /metrics.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	once sync.Once
}

// Listen opens addr for Serve.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ops.listen: %w", err)
	}
	return ln, nil
}

// Serve serves m and ready on ln until Close.
//
//   - GET /healthz is 200 while the process serves HTTP at all.
//   - GET /readyz is 200 with {"ready":true} when ready says so, else 503
//     with {"ready":false,"reason":"…"}.
//   - GET /metrics is m in the Prometheus text format (or what the
//     scraper's Accept header asks for).
func Serve(ln net.Listener, m *Metrics, ready Readiness, log *slog.Logger) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, reason := ready()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		body := struct {
			Ready  bool   `json:"ready"`
			Reason string `json:"reason,omitempty"`
		}{ok, reason}
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), Registry: m.reg,
		// One scrape at a time is plenty; more wait, then get 503.
		MaxRequestsInFlight: 2, Timeout: 10 * time.Second,
	}))
	s := &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)},
		ln: ln, done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(netutil.LimitListener(ln, maxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("ops: health and metrics server stopped", "err", err)
		}
	}()
	return s
}

// Addr is where the server listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and waits for it; requests in flight get a few
// seconds to finish.
func (s *Server) Close() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.srv.Close()
		}
		<-s.done
	})
}
