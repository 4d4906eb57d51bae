package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/internal/testwait"
)

// fakeResolver answers names from a table; a name with several answers
// gives them in turn (the last one repeats), which is how a rebinding DNS
// server behaves. It remembers every question.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	asked   []string
}

func newResolver(m map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}}
	for name, seq := range m {
		for _, answer := range seq {
			var addrs []netip.Addr
			for _, s := range strings.Split(answer, ",") {
				addrs = append(addrs, netip.MustParseAddr(s))
			}
			r.answers[name] = append(r.answers[name], addrs)
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	seq := r.answers[host]
	if len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	a := seq[0]
	if len(seq) > 1 {
		r.answers[host] = seq[1:]
	}
	return a, nil
}

func (r *fakeResolver) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// recordingDial dials for real (loopback only in these tests) and keeps
// every address it was asked for.
type recordingDial struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDial) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: %q is not a loopback IP:port; tests never leave the machine", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *recordingDial) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

func loopbackOnly(t *testing.T) []netip.Prefix {
	t.Helper()
	p, err := ParsePrefixes([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// watchedServer is an httptest server on addr that records the remote
// address of every connection it accepts, so a test can prove that none
// came from the client under test.
type watchedServer struct {
	*httptest.Server
	mu       sync.Mutex
	accepted []string
}

func newWatchedServer(t *testing.T, ip string, h http.Handler) *watchedServer {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	w := &watchedServer{Server: httptest.NewUnstartedServer(h)}
	w.Listener.Close()
	w.Listener = l
	w.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.mu.Lock()
			w.accepted = append(w.accepted, c.RemoteAddr().String())
			w.mu.Unlock()
		}
	}
	w.Start()
	t.Cleanup(w.Close)
	return w
}

// acceptedBefore connects once more and waits until the server has
// accepted that connection; connections are accepted in order, so what is
// returned is everything accepted before it.
func (w *watchedServer) acceptedBefore(t *testing.T) []string {
	t.Helper()
	c, err := net.Dial("tcp", w.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sentinel := c.LocalAddr().String()
	var before []string
	testwait.Until(t, "the sentinel connection to be accepted", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, a := range w.accepted {
			if a == sentinel {
				before = append([]string(nil), w.accepted[:i]...)
				return true
			}
		}
		return false
	})
	return before
}

func portOf(t *testing.T, s *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func client(g *Guard) *http.Client {
	tr := g.Transport()
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr, CheckRedirect: g.CheckRedirect}
}

func TestRedirectChains(t *testing.T) {
	// The "private" server listens on 127.0.0.2, outside the opened
	// 127.0.0.1/32; the "public" ones on 127.0.0.1 under names the fake
	// resolver maps there.
	private := newWatchedServer(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "secret")
	}))
	pport := portOf(t, private.Server)
	final := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "final page") }))
	t.Cleanup(final.Close)
	fport := portOf(t, final)
	hop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	t.Cleanup(hop.Close)
	hport := portOf(t, hop)

	res := newResolver(map[string][]string{
		"hop.example": {"127.0.0.1"}, "final.example": {"127.0.0.1"}, "intranet.example": {"127.0.0.2"},
	})
	dial := &recordingDial{}
	g := New(Options{AllowPrivate: loopbackOnly(t), Resolver: res, Dial: dial.Dial})

	for _, tt := range []struct {
		name, to string
		body     string // "" when the chain must be refused
	}{
		{"allowed to allowed is followed", "http://final.example:" + fport + "/", "final page"},
		{"allowed to a private literal", "http://127.0.0.2:" + pport + "/", ""},
		{"allowed to a private name", "http://intranet.example:" + pport + "/", ""},
		{"allowed to localhost", "http://localhost:" + pport + "/", ""},
		{"allowed to a mapped private literal", "http://[::ffff:127.0.0.2]:" + pport + "/", ""},
		{"allowed to an octal literal", "http://0177.0.0.2:" + pport + "/", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := "http://hop.example:" + hport + "/?to=" + url.QueryEscape(tt.to)
			resp, err := client(g).Get(start)
			if tt.body != "" {
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if string(b) != tt.body {
					t.Fatalf("body %q, want %q", b, tt.body)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("followed the redirect to %s (status %d)", tt.to, resp.StatusCode)
			}
			if !errors.Is(err, ErrForbidden) {
				t.Fatalf("err %v, want ErrForbidden", err)
			}
			for _, a := range dial.dialed() {
				if strings.HasPrefix(a, "127.0.0.2:") {
					t.Fatalf("dialed the private server at %s", a)
				}
			}
		})
	}
	if got := private.acceptedBefore(t); len(got) != 0 {
		t.Fatalf("the private server accepted connections from %v", got)
	}
}

func TestTooManyRedirects(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	g := New(Options{AllowPrivate: loopbackOnly(t)})
	_, err := client(g).Get(srv.URL)
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("err %v, want ErrTooManyRedirects", err)
	}
}

func TestMixedAnswerRefusesAll(t *testing.T) {
	for _, answer := range []string{"93.184.216.34,10.0.0.1", "10.0.0.1,93.184.216.34", "2606:4700::1,::1", "127.0.0.1,169.254.169.254"} {
		res := newResolver(map[string][]string{"mixed.example": {answer}})
		dial := &recordingDial{}
		g := New(Options{AllowPrivate: loopbackOnly(t), Resolver: res, Dial: dial.Dial})
		_, err := g.DialContext(context.Background(), "tcp", "mixed.example:80")
		if !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: err %v, want ErrForbidden", answer, err)
		}
		if err != nil && !strings.Contains(err.Error(), "mixed.example: it resolves to ") {
			t.Errorf("%s: refusal %q does not say what the name resolves to", answer, err)
		}
		if d := dial.dialed(); len(d) != 0 {
			t.Errorf("%s: dialed %v", answer, d)
		}
	}
}

func TestRebindingIsCheckedAtEveryDial(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	port := portOf(t, srv)
	// First answer: the opened loopback address. Second: a private one.
	res := newResolver(map[string][]string{"rebind.example": {"127.0.0.1", "10.0.0.1"}})
	dial := &recordingDial{}
	g := New(Options{AllowPrivate: loopbackOnly(t), Resolver: res, Dial: dial.Dial})
	c := client(g)

	resp, err := c.Get("http://rebind.example:" + port + "/")
	if err != nil {
		t.Fatalf("first GET: %v", err)
	}
	resp.Body.Close()
	if q := res.questions(); len(q) != 1 {
		t.Fatalf("the first dial asked the resolver %v; it must ask once", q)
	}
	if d := dial.dialed(); len(d) != 1 || d[0] != "127.0.0.1:"+port {
		t.Fatalf("dialed %v, want only the checked 127.0.0.1:%s", d, port)
	}

	_, err = c.Get("http://rebind.example:" + port + "/")
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("second GET after rebinding: %v, want ErrForbidden", err)
	}
	if q := res.questions(); len(q) != 2 {
		t.Fatalf("resolver asked %v; want one question per dial", q)
	}
	if d := dial.dialed(); len(d) != 1 {
		t.Fatalf("dialed %v after the private answer", d)
	}
}

func TestDialContext(t *testing.T) {
	for _, tt := range []struct {
		name, addr string
		forbidden  bool
	}{
		{"a name always inside", "localhost:80", true},
		{"an octal literal", "0177.0.0.1:80", true},
		{"a private literal", "10.0.0.1:80", true},
		{"a v6 loopback", "[::1]:80", true},
		{"a zone", "[fe80::1%eth0]:80", true},
		{"an unknown name", "nowhere.invalid:80", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := newResolver(nil)
			dial := &recordingDial{}
			g := New(Options{Resolver: res, Dial: dial.Dial})
			_, err := g.DialContext(context.Background(), "tcp", tt.addr)
			if err == nil {
				t.Fatal("dialed")
			}
			if errors.Is(err, ErrForbidden) != tt.forbidden {
				t.Fatalf("err %v, forbidden want %v", err, tt.forbidden)
			}
			var dnsErr *net.DNSError
			if !tt.forbidden && !errors.As(err, &dnsErr) {
				t.Fatalf("err %v is not a DNS error", err)
			}
			if len(dial.dialed()) != 0 || (tt.forbidden && len(res.questions()) != 0) {
				t.Fatalf("dialed %v, asked %v", dial.dialed(), res.questions())
			}
		})
	}
}
