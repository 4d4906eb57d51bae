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
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/botd-dev/botd/internal/connlimit"
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
	// Tokens maps a bearer token to the key of the server it reaches in
	// Servers.
	Tokens map[string]string
	// Servers are the MCP servers by key: each built (NewServer) for what
	// a token may reach — its groups, each with its own IPC client, and
	// whether it is read-only. Tokens with the same grant may share one.
	Servers map[string]*Server
	// AllowedHosts are extra Host header names accepted besides loopback
	// names and Addr's host, e.g. the machine's LAN name when listening on
	// 0.0.0.0.
	AllowedHosts []string
	// AllowedOrigins are extra browser origins ("https://app.example")
	// accepted besides http(s)://localhost and loopback IPs.
	AllowedOrigins []string
	// Limits bounds what clients can hold open; zero fields take the
	// defaults of DefaultHTTPLimits. Serve applies the connection limits.
	Limits HTTPLimits
	Log    *slog.Logger
}

// HTTPLimits bounds the connections, streams and requests of the
// Streamable HTTP front, so that neither a stranger without a token nor
// one token's client can starve the others.
type HTTPLimits struct {
	// ReadHeaderTimeout is how long a connection has to send a request's
	// headers, counting the wait for the first byte of a new connection.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes an authorised keep-alive connection that sends
	// no further request. (Any request that is not authorised is answered
	// with Connection: close, so only authorised connections idle.)
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds one request's headers (431 past it).
	MaxHeaderBytes int
	// MaxConns bounds the open connections. A connection accepted past
	// it displaces the oldest connection that never carried an authorised
	// request; failing that the oldest idle authorised one; only when
	// every other connection is busy with an authorised request is the new
	// one closed. Unauthorised connections can therefore never lock out a
	// client with a token.
	MaxConns int
	// MaxStreamsPerToken bounds one token's open GET (SSE) streams;
	// another is refused with 429.
	MaxStreamsPerToken int
	// MaxRequestsPerToken bounds one token's other requests (POST,
	// DELETE) in flight at once; another is refused with 429.
	MaxRequestsPerToken int
	// SessionIdleTTL drops the state of a session that made no request
	// and received no event for this long, so clients that go away without
	// DELETE do not pile up sessions; one that comes back with its id is
	// served with fresh state (session ids are not kept server-side).
	SessionIdleTTL time.Duration
	// Heartbeat pings down every open GET stream this often: a stream
	// whose client is gone fails the write and frees its slot, and a live
	// stream keeps its session from idling out.
	Heartbeat time.Duration
	// HoldSilent is how long the kernel keeps a new connection that has
	// sent nothing before handing it to the server (Linux); until then it
	// takes no place under MaxConns. Negative: hand every connection over
	// at once. The default is ReadHeaderTimeout's.
	HoldSilent time.Duration
	// MaxSessionsPerToken bounds the sessions one token holds open; one
	// more initialize closes that token's least recently used session,
	// whose client then gets 404 and initialises again.
	MaxSessionsPerToken int
}

// The defaults of HTTPLimits: the server's timeouts and connection cap are
// connlimit's (the reasons are there); a token's client needs one stream
// per session and a few calls at once.
const (
	DefaultReadHeaderTimeout   = connlimit.DefaultReadHeaderTimeout
	DefaultIdleTimeout         = connlimit.DefaultIdleTimeout
	DefaultMaxHeaderBytes      = connlimit.DefaultMaxHeaderBytes
	DefaultMaxConns            = connlimit.DefaultMaxConns
	DefaultMaxStreamsPerToken  = 16
	DefaultMaxRequestsPerToken = 32
	DefaultSessionIdleTTL      = 30 * time.Minute
	DefaultHeartbeat           = time.Minute
)

// DefaultHTTPLimits returns every default limit.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{}.withDefaults()
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defD(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defD(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	def(&l.MaxConns, DefaultMaxConns)
	def(&l.MaxStreamsPerToken, DefaultMaxStreamsPerToken)
	def(&l.MaxRequestsPerToken, DefaultMaxRequestsPerToken)
	defD(&l.SessionIdleTTL, DefaultSessionIdleTTL)
	defD(&l.Heartbeat, DefaultHeartbeat)
	def(&l.MaxSessionsPerToken, DefaultMaxSessionsPerToken)
	if l.HoldSilent == 0 {
		l.HoldSilent = min(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	}
	return l
}

type tokenEntry struct {
	sum   [sha256.Size]byte
	group string // the groups it reaches, for the logs
	key   string // its server's
	// What the token holds open right now.
	streams, requests atomic.Int32
	sessions          *sessionSet
}

type httpHandler struct {
	tokens     []*tokenEntry
	groups     map[string]http.Handler        // by server key
	streamable []*server.StreamableHTTPServer // to stop their session sweepers
	hosts      []string
	origins    []string
	log        *slog.Logger
	listenHost string
	limits     HTTPLimits
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
		return nil, fmt.Errorf("mcp http: refusing to listen on %q: not a loopback address; to expose the server set "+
			"mcp.http.allow_remote: true (and mcp.http.allowed_hosts to the names clients use), behind TLS, or reach it "+
			"through an SSH tunnel instead", opts.Addr)
	}
	if len(opts.Tokens) == 0 {
		return nil, errors.New("mcp http: no tokens configured")
	}
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	h := &httpHandler{groups: map[string]http.Handler{}, log: log, limits: opts.Limits.withDefaults()}
	for tok, group := range opts.Tokens {
		if len(tok) < MinTokenLen {
			return nil, fmt.Errorf("mcp http: the token for group %q is shorter than %d characters", group, MinTokenLen)
		}
		srv := opts.Servers[group]
		if srv == nil {
			return nil, fmt.Errorf("mcp http: a token names group %q, which has no server", group)
		}
		key := group
		group := strings.Join(srv.Folders(), ",") // what the logs name
		h.tokens = append(h.tokens, &tokenEntry{sum: sha256.Sum256([]byte(tok)), group: group, key: key,
			sessions: newSessionSet(h.limits.MaxSessionsPerToken)})
		if h.groups[key] == nil {
			// mcp-go's own loopback Host check stays on behind ours.
			sh := server.NewStreamableHTTPServer(srv.MCPServer,
				server.WithStreamableHTTPLogger(log.With("group", group)),
				server.WithSessionIdleTTL(h.limits.SessionIdleTTL),
				server.WithHeartbeatInterval(h.limits.Heartbeat))
			h.groups[key] = sh
			h.streamable = append(h.streamable, sh)
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
	// Until the request proves itself, the answer ends the connection: a
	// connection that never carries an authorised request must not stay.
	if r.URL.Path != HTTPPath {
		refuse(w, r)
		http.NotFound(w, r)
		return
	}
	if !h.hostAllowed(r.Host) {
		h.log.Warn("mcp http: refused Host", "host", r.Host, "remote", r.RemoteAddr)
		refuse(w, r)
		http.Error(w, "forbidden: Host not allowed", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o) {
		h.log.Warn("mcp http: refused Origin", "origin", o, "remote", r.RemoteAddr)
		refuse(w, r)
		http.Error(w, "forbidden: Origin not allowed", http.StatusForbidden)
		return
	}
	tok, status := h.authenticate(r.Header.Get("Authorization"))
	if status != "" {
		challenge := `Bearer realm="botd"`
		if status == "invalid_token" {
			challenge += `, error="invalid_token"`
		}
		h.log.Info("mcp http: unauthorised", "reason", status, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", challenge)
		refuse(w, r)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	connlimit.Authorise(r.Context())

	// A GET is a listening SSE stream that stays open; everything else is
	// a call that ends. Each has its own budget per token, so streams
	// cannot starve calls, and one token's client none of another's.
	count, limit, what, retry := &tok.requests, h.limits.MaxRequestsPerToken, "requests in flight", "1"
	if r.Method == http.MethodGet {
		count, limit, what, retry = &tok.streams, h.limits.MaxStreamsPerToken, "open GET streams", "5"
	}
	if n := count.Add(1); int(n) > limit {
		count.Add(-1)
		h.log.Warn("mcp http: token over its limit", "group", tok.group, "limit", what, "max", limit, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", retry)
		http.Error(w, fmt.Sprintf("too many %s for this token (at most %d at once); retry when one has ended", what, limit),
			http.StatusTooManyRequests)
		return
	}
	defer count.Add(-1)

	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxHTTPBody)
	}
	sh := h.groups[tok.key]
	sid := r.Header.Get(server.HeaderKeySessionID)
	if sid != "" && !tok.sessions.touch(sid) {
		// Closed for the bound, by DELETE, or never this token's: the MCP
		// answer for an unknown session, on which a client initialises anew.
		http.Error(w, "unknown or closed session: initialize a new one", http.StatusNotFound)
		return
	}
	if sid != "" && r.Method == http.MethodDelete {
		defer tok.sessions.remove(sid)
	}
	if sid == "" && r.Method == http.MethodPost {
		iw := &sessionIDWriter{ResponseWriter: w}
		defer func() {
			if iw.id == "" {
				return
			}
			for _, old := range tok.sessions.add(iw.id) {
				closeSession(sh, old)
			}
		}()
		w = iw
	}
	if r.Method == http.MethodPost {
		// A call may be resources/read, whose file is streamed into the
		// response (blobstream.go).
		bs := &blobStreams{}
		bw := &blobWriter{ResponseWriter: w, bs: bs}
		defer bw.finish()
		w, r = bw, r.WithContext(context.WithValue(r.Context(), blobKey{}, bs))
	}
	sh.ServeHTTP(w, r)
}

// refuse makes the server close the connection after this answer, and
// lets it make room first should the connection cap be reached meanwhile.
func refuse(w http.ResponseWriter, r *http.Request) {
	connlimit.Refuse(w)
	connlimit.Refused(r.Context())
}

// authenticate returns the matching token, or a non-empty reason. Every
// configured token is compared, in constant time over fixed-size hashes,
// so timing tells neither which token nor how much of one matched.
func (h *httpHandler) authenticate(header string) (tok *tokenEntry, reason string) {
	scheme, raw, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(raw) == "" {
		return nil, "missing_token"
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(raw)))
	for _, e := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			tok = e
		}
	}
	if tok == nil {
		return nil, "invalid_token"
	}
	return tok, ""
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
// The timeouts and the connection cap are those of h's HTTPOptions.Limits
// when h comes from NewHTTPHandler, else the defaults.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	lim, log := DefaultHTTPLimits(), slog.Default()
	if hh, ok := h.(*httpHandler); ok {
		lim, log = hh.limits, hh.log
	}
	srv := connlimit.Server{MaxConns: lim.MaxConns, ReadHeaderTimeout: lim.ReadHeaderTimeout, IdleTimeout: lim.IdleTimeout,
		MaxHeaderBytes: lim.MaxHeaderBytes, What: "mcp http", Log: log, ErrorLevel: slog.LevelWarn}.New(ctx, h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(connlimit.Listener(ln, lim.HoldSilent)) }()
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
	if hh, ok := h.(*httpHandler); ok {
		for _, sh := range hh.streamable {
			sh.Shutdown(sctx) // stops its session sweeper; it serves no listener of its own
		}
	}
	if err != nil {
		return fmt.Errorf("mcp http: shutdown: %w", err)
	}
	return nil
}
