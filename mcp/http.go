package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// HTTPPath is where the Streamable HTTP endpoint is mounted.
const HTTPPath = "/mcp"

// MinTokenLen is the shortest bearer token accepted (config check enforces
// the same).
const MinTokenLen = 16

// maxHTTPBody bounds one JSON-RPC POST; tool arguments are small.
const maxHTTPBody = 1 << 20

// HTTPOptions configures the Streamable HTTP front for external agents.
type HTTPOptions struct {
	// Addr is the listen address (host:port). It must be a loopback
	// address unless AllowNonLoopback is set, and its host is accepted in
	// the Host header.
	Addr             string
	AllowNonLoopback bool
	// Tokens maps a bearer token to the one group folder it may reach.
	Tokens map[string]string
	// Servers maps a group folder to its own MCP server (NewServer with
	// that group's GroupDir and IPC client).
	Servers map[string]*server.MCPServer
	// AllowedHosts are extra Host header names accepted besides loopback
	// names and Addr's host, e.g. the machine's LAN name when listening on
	// 0.0.0.0.
	AllowedHosts []string
	// AllowedOrigins are extra browser origins ("https://app.example")
	// accepted besides http(s)://localhost and loopback IPs.
	AllowedOrigins []string
	Log            *slog.Logger
}

type tokenEntry struct {
	sum   [sha256.Size]byte
	group string
}

type httpHandler struct {
	tokens     []tokenEntry
	groups     map[string]http.Handler
	hosts      []string
	origins    []string
	log        *slog.Logger
	listenHost string
}

// NewHTTPHandler returns the handler for `botd mcp --http`: it refuses
// foreign Host/Origin headers (DNS rebinding), then requires a bearer
// token, then hands the request to that token's group server at HTTPPath.
func NewHTTPHandler(opts HTTPOptions) (http.Handler, error) {
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("mcp http: listen address %q: %w", opts.Addr, err)
	}
	if !opts.AllowNonLoopback && !isLoopback(host) {
		return nil, fmt.Errorf("mcp http: refusing to listen on %q: not a loopback address (allow it explicitly to expose the server)", opts.Addr)
	}
	if len(opts.Tokens) == 0 {
		return nil, errors.New("mcp http: no tokens configured")
	}
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	h := &httpHandler{groups: map[string]http.Handler{}, log: log}
	for tok, group := range opts.Tokens {
		if len(tok) < MinTokenLen {
			return nil, fmt.Errorf("mcp http: the token for group %q is shorter than %d characters", group, MinTokenLen)
		}
		srv := opts.Servers[group]
		if srv == nil {
			return nil, fmt.Errorf("mcp http: a token names group %q, which has no server", group)
		}
		h.tokens = append(h.tokens, tokenEntry{sum: sha256.Sum256([]byte(tok)), group: group})
		if h.groups[group] == nil {
			// mcp-go's own loopback Host check stays on behind ours.
			h.groups[group] = server.NewStreamableHTTPServer(srv,
				server.WithStreamableHTTPLogger(log.With("group", group)))
		}
	}
	// A wildcard listen address names no host a client would send.
	h.listenHost = strings.ToLower(strings.Trim(host, "[]"))
	if ip, err := netip.ParseAddr(h.listenHost); err == nil && ip.IsUnspecified() {
		h.listenHost = ""
	}
	for _, a := range opts.AllowedHosts {
		h.hosts = append(h.hosts, strings.ToLower(strings.Trim(a, "[]")))
	}
	h.origins = slices.Clone(opts.AllowedOrigins)
	return h, nil
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != HTTPPath {
		http.NotFound(w, r)
		return
	}
	if !h.hostAllowed(r.Host) {
		h.log.Warn("mcp http: refused Host", "host", r.Host, "remote", r.RemoteAddr)
		http.Error(w, "forbidden: Host not allowed", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o) {
		h.log.Warn("mcp http: refused Origin", "origin", o, "remote", r.RemoteAddr)
		http.Error(w, "forbidden: Origin not allowed", http.StatusForbidden)
		return
	}
	group, status := h.authenticate(r.Header.Get("Authorization"))
	if status != "" {
		challenge := `Bearer realm="botd"`
		if status == "invalid_token" {
			challenge += `, error="invalid_token"`
		}
		h.log.Info("mcp http: unauthorised", "reason", status, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxHTTPBody)
	}
	h.groups[group].ServeHTTP(w, r)
}

// authenticate returns the token's group, or a non-empty reason. Every
// configured token is compared, in constant time over fixed-size hashes,
// so timing tells neither which token nor how much of one matched.
func (h *httpHandler) authenticate(header string) (group, reason string) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", "missing_token"
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	for _, e := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			group = e.group
		}
	}
	if group == "" {
		return "", "invalid_token"
	}
	return group, ""
}

// hostAllowed is the DNS-rebinding check: a page on evil.example that
// rebinds its name to 127.0.0.1 still sends Host: evil.example.
func (h *httpHandler) hostAllowed(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	if isLoopback(host) || host == h.listenHost {
		return true
	}
	return slices.Contains(h.hosts, host)
}

func (h *httpHandler) originAllowed(origin string) bool {
	if slices.Contains(h.origins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopback(u.Hostname())
}

// isLoopback reports localhost and loopback IPs; other names are not
// resolved, as what they resolve to can change (that is the attack).
func isLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// ListenAndServe listens on addr and serves h until ctx is cancelled, then
// shuts down gracefully.
func ListenAndServe(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp http: %w", err)
	}
	return Serve(ctx, ln, h)
}

// shutdownGrace is how long in-flight calls get to finish on shutdown.
const shutdownGrace = 5 * time.Second

// Serve serves h on ln until ctx is cancelled. Request contexts derive
// from ctx, so open SSE streams end with it and shutdown does not hang.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mcp http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	<-errc
	if err != nil {
		return fmt.Errorf("mcp http: shutdown: %w", err)
	}
	return nil
}
