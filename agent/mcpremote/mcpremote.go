// Package mcpremote connects the assistant to a remote MCP server over
// Streamable HTTP (agent.mcp_servers.<name>.url): mcp-go's client over an
// http.Client that dials only through netguard, with the configured
// headers (a bearer token from the environment) or an OAuth 2.1
// client-credentials token. The protocol is mcp-go's; this package only
// decides where botd may connect and with what credentials.
package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/botd-dev/botd/netguard"
)

// privateRanges are what allow_private opens: this machine and the
// networks a home or office uses (a Home Assistant on the LAN). Link-local
// stays closed (the cloud metadata address lives there), and names such
// as homeassistant.local stay refused by netguard: give the address.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// Options are one configured remote server.
type Options struct {
	// Name is the server's key in agent.mcp_servers (for sentences).
	Name string
	URL  string
	// Headers go with every request (Authorization: Bearer …). They are
	// secrets: never logged, never in an error.
	Headers map[string]string
	// AllowPrivate opens loopback and the private ranges for this server.
	AllowPrivate bool
	// OAuth, when set, gets the bearer token with client credentials
	// (its HTTP is set here: the token endpoint is asked through the same
	// guard); it wins over an Authorization header.
	OAuth *ClientCredentials
	// AuthCode, when set, signs in with the authorization code grant and
	// PKCE (Login once; mcp-go's handler refreshes the kept token).
	AuthCode *AuthCode
	// Resolver answers names; nil is DNS (tests pass a fake).
	Resolver netguard.Resolver
	// Dial opens a checked address; nil is a net.Dialer (tests).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Server is one remote MCP server: its address checked once, its HTTP
// client (dialling only through netguard) built once and shared by every
// run's connection.
type Server struct {
	name    string
	url     string
	headers map[string]string
	tokens  *Tokens
	auth    *AuthCode
	http    *http.Client
}

// guard is the SSRF guard a server's requests go through.
func guard(o Options) *netguard.Guard {
	no := netguard.Options{Resolver: o.Resolver, Dial: o.Dial}
	if o.AllowPrivate {
		no.AllowPrivate = privateRanges
	}
	return netguard.New(no)
}

// Check refuses an address botd will not connect to, with a sentence: not
// http(s), credentials in it, a private or local address without
// allow_private, a name that means "inside".
func Check(raw string, allowPrivate bool) error {
	_, err := checkURL(guard(Options{AllowPrivate: allowPrivate}), raw, allowPrivate)
	return err
}

func checkURL(g *netguard.Guard, raw string, allowPrivate bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("it is not a URL (want e.g. https://mcp.example.com/mcp)")
	}
	if err := g.CheckURL(u); err != nil {
		return nil, hint(err, allowPrivate)
	}
	return u, nil
}

// hint adds what the operator can do to a refusal of a private address.
func hint(err error, allowPrivate bool) error {
	var r *netguard.Refusal
	if !errors.As(err, &r) {
		return err
	}
	for _, w := range openable {
		if strings.Contains(r.Reason, w) {
			if allowPrivate {
				return fmt.Errorf("%w (allow_private opens addresses, never names: give the server's address)", err)
			}
			return fmt.Errorf("%w (for a server on your own network, set allow_private: true and give its address, not a name)", err)
		}
	}
	return err
}

// openable are the words of the refusals allow_private (with an address
// instead of a local name) would lift.
var openable = []string{"loopback", "private", "unique local", "carrier-grade", "inside botd's own network"}

// New checks the address and builds the server's HTTP client.
func New(o Options) (*Server, error) {
	g := guard(o)
	if _, err := checkURL(g, o.URL, o.AllowPrivate); err != nil {
		return nil, err
	}
	hc := guardedClient(g)
	s := &Server{name: o.Name, url: o.URL, headers: maps.Clone(o.Headers), auth: o.AuthCode, http: hc}
	if o.OAuth != nil {
		if _, err := checkURL(g, o.OAuth.TokenURL, o.AllowPrivate); err != nil {
			return nil, &tokenError{err}
		}
		cc := *o.OAuth
		cc.HTTP = hc
		s.tokens = NewTokens(cc)
	}
	return s, nil
}

// MaxResponseBytes bounds one response of a remote server (a tool's
// answer, an event stream): a server cannot make botd hold more.
const MaxResponseBytes = 16 << 20

// guardedClient dials only through g, follows only redirects g allows,
// and reads at most MaxResponseBytes of a response.
func guardedClient(g *netguard.Guard) *http.Client {
	return &http.Client{Transport: capped{g.Transport()}, CheckRedirect: g.CheckRedirect}
}

// capped ends every response body after MaxResponseBytes with an error.
type capped struct{ base *http.Transport }

func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (c capped) CloseIdleConnections() { c.base.CloseIdleConnections() }

// ErrResponseTooLarge is what reading past MaxResponseBytes Is.
var ErrResponseTooLarge = fmt.Errorf("the server's answer is larger than botd reads (%d MB)", MaxResponseBytes>>20)

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the cap: only the end of the body may follow.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 || err == nil {
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// Connect starts a client of the server; the caller initialises it (one
// MCP session per run) and closes it.
func (s *Server) Connect(ctx context.Context) (*client.Client, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(s.http), transport.WithHTTPHeaders(s.headers)}
	if s.tokens != nil {
		// Asked first so that a refusal of the token endpoint is the
		// reason given, not the server's 401 without a token.
		if _, err := s.tokens.Token(ctx); err != nil {
			return nil, err
		}
		tokens := s.tokens
		opts = append(opts, transport.WithHTTPHeaderFunc(func(ctx context.Context) map[string]string {
			t, err := tokens.Token(ctx)
			if err != nil {
				return nil // refused (401) without it; the next run asks again
			}
			return map[string]string{"Authorization": "Bearer " + t}
		}))
	}
	if s.auth != nil {
		opts = append(opts, transport.WithHTTPOAuth(s.auth.oauthConfig(s.http, s.url)))
	}
	tr, err := transport.NewStreamableHTTP(s.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("remote MCP server %s: %w", s.name, err)
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("remote MCP server %s: %w", s.name, err)
	}
	return c, nil
}

// Failed hears why a session could not be opened: a refused token is
// dropped, so the next attempt asks the token endpoint for a new one.
func (s *Server) Failed(err error) {
	if s.tokens != nil && errors.Is(err, transport.ErrAuthorizationRequired) {
		s.tokens.Invalidate()
	}
}

// CloseIdle drops the server's idle connections (at shutdown).
func (s *Server) CloseIdle() { s.http.CloseIdleConnections() }

// Explain is why a server could not be used, as a sentence for the log
// and the dashboard: refused by the guard, refused credentials, not an
// MCP endpoint, or not reachable. It never carries a header's value.
func Explain(err error, allowPrivate bool) string {
	var r *netguard.Refusal
	var dns *net.DNSError
	var op *net.OpError
	var te *tokenError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		if errors.Is(te.err, ErrTokenRefused) {
			return te.err.Error()
		}
		return "its OAuth token endpoint: " + Explain(te.err, allowPrivate)
	case errors.As(err, &r):
		return hint(r, allowPrivate).Error()
	case errors.Is(err, transport.ErrOAuthAuthorizationRequired):
		return "botd is not signed in to it, or its sign-in ended: sign botd in once with botd mcp-login <name>"
	case errors.Is(err, transport.ErrAuthorizationRequired):
		return "the server refused botd's credentials (401 Unauthorized): check its headers (the token) or oauth settings"
	case errors.Is(err, transport.ErrLegacySSEServer):
		return "the server refused the MCP initialize request (a 4xx answer): the token may lack the right, or the URL is not a Streamable HTTP MCP endpoint"
	case errors.Is(err, ErrResponseTooLarge):
		return ErrResponseTooLarge.Error()
	case errors.As(err, &dns):
		return "its name does not resolve (" + dns.Err + ")"
	case errors.As(err, &op):
		return "it cannot be reached (" + op.Err.Error() + ")"
	case errors.Is(err, context.DeadlineExceeded):
		return "it did not answer in time"
	}
	return err.Error()
}
