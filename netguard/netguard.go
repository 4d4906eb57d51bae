// Package netguard is botd's one guard for every outbound request a chat
// member or a model can steer (fetch_url, redirects, anything that follows
// a link): http(s) only, no credentials in URLs, IPv4 literals only in
// canonical dotted form, no name or address that reaches inside the
// machine or its network. Names are resolved once per connection, every
// answer is checked and the connection goes to a checked address, so a
// rebinding DNS server cannot swap in a private address between the check
// and the dial.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrForbidden is what every refusal Is: the caller answers the tool error
// code forbidden.
var ErrForbidden = errors.New("forbidden destination")

// ErrTooManyRedirects ends a chain longer than MaxRedirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// MaxRedirects is how many redirects one request may follow.
const MaxRedirects = 5

// Refusal says which destination and why, as a sentence a chat member can
// read. errors.Is(r, ErrForbidden) holds.
type Refusal struct{ Dest, Reason string }

func (r *Refusal) Error() string { return "botd does not open " + r.Dest + ": " + r.Reason }

func (r *Refusal) Is(target error) bool { return target == ErrForbidden }

// Resolver is the part of *net.Resolver the guard uses; tests pass a fake
// so that no test depends on real DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Guard.
type Options struct {
	// AllowPrivate are ranges the operator opened (an intranet wiki; tests:
	// 127.0.0.0/8). They open addresses, never names: localhost stays
	// refused by name even when 127.0.0.0/8 is open.
	AllowPrivate []netip.Prefix
	// Resolver answers names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial opens the connection; nil is a net.Dialer. It is always called
	// with a checked IP:port, never a name.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Guard checks URLs and addresses and dials only what passed.
type Guard struct {
	allow    []netip.Prefix
	resolver Resolver
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New returns a Guard; it has no side effects.
func New(o Options) *Guard {
	g := &Guard{allow: o.AllowPrivate, resolver: o.Resolver, dial: o.Dial}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		g.dial = d.DialContext
	}
	return g
}

// ParsePrefixes reads allow_private entries: CIDRs ("10.0.0.0/8") or bare
// addresses ("127.0.0.1", "::1"), which open just that address. Host bits
// in a CIDR are cleared ("10.1.2.3/8" opens 10.0.0.0/8).
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrefix(raw string) (netip.Prefix, error) {
	s := strings.TrimSpace(raw)
	if strings.Contains(s, "%") {
		return netip.Prefix{}, fmt.Errorf("%q: an address range cannot carry an IPv6 zone", raw)
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an address range (want e.g. 10.0.0.0/8 or fd00::/8)", raw)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or range (want e.g. 10.0.0.0/8, 192.168.1.20 or ::1)", raw)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// CheckURL checks what a URL says without touching the network: the
// scheme, credentials, the host's form, a literal address's range and the
// names that always mean "inside".
func (g *Guard) CheckURL(u *url.URL) error {
	if u == nil {
		return &Refusal{Dest: "an empty link", Reason: "there is no address in it"}
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		dest := "a " + scheme + ": link"
		if scheme == "" {
			dest = "a link without http:// or https://"
		}
		return &Refusal{Dest: dest, Reason: "only http and https links are opened"}
	}
	if u.Opaque != "" || u.Host == "" {
		return &Refusal{Dest: "a link without a host", Reason: "it does not name a web server"}
	}
	host, port, hasPort := splitHostPort(u.Host)
	if u.User != nil {
		// Dest names the host only: the password must not be echoed.
		return &Refusal{Dest: "a link to " + host, Reason: "it carries a user name or password"}
	}
	if hasPort {
		if err := checkPort(host, port); err != nil {
			return err
		}
	}
	_, err := g.checkHost(host)
	return err
}

// splitHostPort splits a URL's Host ("example.com:8080", "[::1]:80").
func splitHostPort(hostport string) (host, port string, hasPort bool) {
	if strings.HasPrefix(hostport, "[") {
		end := strings.LastIndex(hostport, "]")
		if end < 0 {
			return hostport, "", false
		}
		rest := hostport[end+1:]
		if strings.HasPrefix(rest, ":") {
			return hostport[:end+1], rest[1:], true
		}
		return hostport[:end+1], "", rest != ""
	}
	if i := strings.LastIndex(hostport, ":"); i >= 0 {
		return hostport[:i], hostport[i+1:], true
	}
	return hostport, "", false
}

func checkPort(host, port string) error {
	n, err := strconv.Atoi(port)
	if port == "" || err != nil || n < 1 || n > 65535 || port[0] == '0' || strings.ContainsAny(port, "+-") {
		return &Refusal{Dest: host, Reason: fmt.Sprintf("%q is not a port number", port)}
	}
	return nil
}

// checkHost checks a host as written in a URL or handed to DialContext:
// a bracketed IPv6 literal, a canonical IPv4 literal or a name. It returns
// the address when the host is a literal.
func (g *Guard) checkHost(host string) (netip.Addr, error) {
	if host == "" {
		return netip.Addr{}, &Refusal{Dest: "a link without a host", Reason: "it does not name a web server"}
	}
	if strings.HasPrefix(host, "[") || strings.Contains(host, ":") {
		if !strings.HasPrefix(host, "[") || !strings.HasSuffix(host, "]") {
			return netip.Addr{}, &Refusal{Dest: host, Reason: "an IPv6 address must be written in brackets, like [2001:db8::1]"}
		}
		inner := host[1 : len(host)-1]
		if strings.Contains(inner, "%") {
			return netip.Addr{}, &Refusal{Dest: host, Reason: "an IPv6 zone names a local network interface"}
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() {
			return netip.Addr{}, &Refusal{Dest: host, Reason: "it is not a valid IPv6 address"}
		}
		return a, g.CheckAddr(a)
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if looksNumeric(name) {
		// Browsers and inet_aton read 0177.1, 0x7f.1 and 2130706433 as
		// 127.0.0.1; only the one canonical spelling is accepted, so what
		// is checked is what every client would connect to.
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is4() || strings.HasSuffix(host, ".") {
			return netip.Addr{}, &Refusal{Dest: host, Reason: "an IPv4 address must be written as four plain decimal numbers, like 93.184.216.34"}
		}
		return a, g.CheckAddr(a)
	}
	if reason := checkName(name); reason != "" {
		return netip.Addr{}, &Refusal{Dest: host, Reason: reason}
	}
	return netip.Addr{}, nil
}

// looksNumeric reports a host that URL parsers treat as an IPv4 address:
// its last label is a number (decimal, or hex with 0x).
func looksNumeric(name string) bool {
	last := name[strings.LastIndex(name, ".")+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		for _, c := range last {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// insideNames are the names that mean this machine or its network
// whatever DNS says about them.
var insideSuffixes = []string{"localhost", "local", "internal", "home.arpa"}

var insideNames = map[string]bool{"localhost.localdomain": true, "metadata.google.internal": true, "metadata": true}

// checkName returns why a (lower-cased, trailing-dot-free) name is
// refused, or "".
func checkName(name string) string {
	if len(name) > 253 {
		return "it is not a valid host name"
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return "it is not a valid host name"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "it is not a valid host name"
			}
		}
	}
	if insideNames[name] {
		return "it names a machine inside botd's own network"
	}
	for _, s := range insideSuffixes {
		if name == s || strings.HasSuffix(name, "."+s) {
			return "names ending in ." + s + " are inside botd's own network"
		}
	}
	return ""
}

// CheckAddr refuses an address in a loopback, private, link-local,
// reserved or special-purpose range (IPv4 embedded in IPv6 transition
// forms included), unless the operator opened its range.
func (g *Guard) CheckAddr(a netip.Addr) error {
	a = a.WithZone("")
	reason, embedded := classify(a)
	if reason == "" {
		return nil
	}
	if g.opened(a) {
		return nil
	}
	// A transition form is opened when every embedded address that
	// refused it is: opening the Teredo server's range must not open a
	// loopback client.
	if len(embedded) > 0 {
		all := true
		for _, e := range embedded {
			all = all && g.opened(e)
		}
		if all {
			return nil
		}
	}
	return &Refusal{Dest: a.String(), Reason: reason}
}

func (g *Guard) opened(a netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// DialContext resolves addr's host once, refuses all of it if any answer
// is refused (a mixed answer is an attack, not bad luck) and dials the
// checked addresses in turn, so the address checked is the address used.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	lookupNet := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	if lookupNet == "" {
		return nil, fmt.Errorf("netguard: network %q is not dialed", network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netguard: %w", err)
	}
	if err := checkPort(host, port); err != nil {
		return nil, err
	}
	hostInURL := host
	if strings.Contains(host, ":") {
		hostInURL = "[" + host + "]"
	}
	lit, err := g.checkHost(hostInURL)
	if err != nil {
		return nil, err
	}
	addrs := []netip.Addr{lit}
	if !lit.IsValid() {
		addrs, err = g.resolve(ctx, lookupNet, host)
		if err != nil {
			return nil, err
		}
	}
	var firstErr error
	for _, a := range addrs {
		conn, err := g.dial(ctx, network, netip.AddrPortFrom(a, mustPort(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

func mustPort(s string) uint16 {
	n, _ := strconv.ParseUint(s, 10, 16)
	return uint16(n)
}

func (g *Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	addrs, err := g.resolver.LookupNetIP(ctx, network, host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return nil, err
		}
		return nil, &net.DNSError{Err: err.Error(), Name: host, IsNotFound: true}
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			var r *Refusal
			errors.As(err, &r)
			return nil, &Refusal{Dest: host, Reason: "it resolves to " + r.Dest + ", which " + strings.TrimPrefix(r.Reason, "it ")}
		}
	}
	return addrs, nil
}

// CheckRedirect is an http.Client's CheckRedirect: at most MaxRedirects,
// each target checked before it is asked (its addresses are checked again
// when it is dialed).
func (g *Guard) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects: %w", MaxRedirects, ErrTooManyRedirects)
	}
	return g.CheckURL(req.URL)
}

// Transport is an http.Transport that dials only through the guard and
// never through a proxy (a proxy would resolve names the guard never saw).
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    4,
		MaxResponseHeaderBytes: 1 << 20,
	}
}
