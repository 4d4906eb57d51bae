package webfetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/internal/testwait"
)

// world is the network a test's Fetcher sees: names from a table, every
// dial recorded and kept on loopback.
type world struct {
	mu     sync.Mutex
	names  map[string][]netip.Addr
	dialed []string
}

func (w *world) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (w *world) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	w.mu.Lock()
	w.dialed = append(w.dialed, addr)
	w.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: %q is not loopback; tests never leave the machine", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (w *world) dials() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.dialed...)
}

// newFetcher opens 127.0.0.1 only (not all of 127/8) and maps
// public.example there.
func newFetcher(t testing.TB, edit func(*Config), o Options) (*Fetcher, *world) {
	t.Helper()
	c := DefaultConfig()
	c.AllowPrivate = []string{"127.0.0.1"}
	if edit != nil {
		edit(&c)
	}
	w := &world{names: map[string][]netip.Addr{
		"public.example": {netip.MustParseAddr("127.0.0.1")},
		"inside.example": {netip.MustParseAddr("192.168.1.10")},
	}}
	o.Resolver, o.Dial = w, w.Dial
	f, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return f, w
}

func serve(t testing.TB, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return s, "http://public.example:" + port
}

func mustParse(t testing.TB, f *Fetcher, raw string) *url.URL {
	t.Helper()
	u, err := f.Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%q): %v", raw, err)
	}
	return u
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(b)
	z.Close()
	return buf.Bytes()
}

func br(b []byte) []byte {
	var buf bytes.Buffer
	z := brotli.NewWriterLevel(&buf, 5)
	z.Write(b)
	z.Close()
	return buf.Bytes()
}

func page(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "<p>paragraph %d: the pharmacy on Main Street closes at six.</p>\n", i)
	}
	return b.Bytes()[:n]
}

func TestGetDecodes(t *testing.T) {
	body := page(300 << 10)
	for _, tt := range []struct {
		encoding string
		wire     []byte
	}{{"", body}, {"gzip", gz(body)}, {"br", br(body)}} {
		t.Run("encoding "+tt.encoding, func(t *testing.T) {
			var got http.Header
			var mu sync.Mutex
			_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = r.Header.Clone()
				mu.Unlock()
				w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
				if tt.encoding != "" {
					w.Header().Set("Content-Encoding", tt.encoding)
				}
				w.Write(tt.wire)
			})
			f, _ := newFetcher(t, nil, Options{UserAgent: "botd/1.2.3 (+https://github.com/botd-dev/botd)"})
			var out bytes.Buffer
			r, err := f.Get(context.Background(), mustParse(t, f, base+"/article"), Validators{}, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), body) || r.Bytes != int64(len(body)) {
				t.Fatalf("got %d bytes (Bytes %d), want the %d-byte page", out.Len(), r.Bytes, len(body))
			}
			if r.ContentType != "text/html; charset=ISO-8859-1" || r.Status != 200 || r.URL != base+"/article" {
				t.Fatalf("response %+v", r)
			}
			mu.Lock()
			defer mu.Unlock()
			if got.Get("User-Agent") != "botd/1.2.3 (+https://github.com/botd-dev/botd)" || got.Get("Accept-Encoding") != "gzip, br" {
				t.Fatalf("request headers %v", got)
			}
		})
	}
}

func TestDefaultUserAgent(t *testing.T) {
	ua := defaultUserAgent()
	if !strings.HasPrefix(ua, "botd/") || !strings.HasSuffix(ua, " (+https://github.com/botd-dev/botd)") {
		t.Fatalf("User-Agent %q", ua)
	}
}

func TestTooLarge(t *testing.T) {
	const limit = 1 << 20
	zeros := make([]byte, 16<<20)
	brBomb, gzBomb := br(zeros), gz(zeros)
	if len(brBomb) > 64<<10 || len(gzBomb) > limit {
		t.Fatalf("bombs are %d and %d bytes on the wire; they must be small", len(brBomb), len(gzBomb))
	}
	exact, exactBr := page(limit), br(page(limit))
	// Stored (level 0) gzip of almost the cap: decoded it fits, on the
	// wire it does not, and the wire is capped too.
	var stored bytes.Buffer
	z, _ := gzip.NewWriterLevel(&stored, gzip.NoCompression)
	z.Write(page(limit - 16))
	z.Close()
	endlessDone := make(chan struct{})
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		tooBig  bool
	}{
		{"brotli bomb", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			w.Write(brBomb)
		}, true},
		{"gzip bomb", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzBomb)
		}, true},
		{"compressed bytes over the cap", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.(http.Flusher).Flush() // chunked: no Content-Length to refuse early
			w.Write(stored.Bytes())
		}, true},
		{"declared length over the cap", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(limit+1))
			w.Write(make([]byte, limit+1))
		}, true},
		{"a body that never ends", func(w http.ResponseWriter, r *http.Request) {
			defer close(endlessDone)
			chunk := page(32 << 10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, true},
		{"exactly the cap", func(w http.ResponseWriter, _ *http.Request) { w.Write(exact) }, false},
		{"exactly the cap, compressed", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			w.Write(exactBr)
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, base := serve(t, tt.handler)
			f, _ := newFetcher(t, func(c *Config) { c.MaxBytes = limit }, Options{})
			var out bytes.Buffer
			r, err := f.Get(context.Background(), mustParse(t, f, base+"/"), Validators{}, &out)
			if out.Len() > limit {
				t.Fatalf("wrote %d bytes past the %d cap", out.Len(), limit)
			}
			if !tt.tooBig {
				if err != nil || r.Bytes != limit {
					t.Fatalf("err %v, Bytes %d; want the whole %d-byte page", err, r.Bytes, limit)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err %v, want ErrTooLarge", err)
			}
			if want := "public.example is larger than 1 MB (internet.fetch.max_bytes)"; !strings.Contains(err.Error(), want) {
				t.Fatalf("err %q does not say %q", err, want)
			}
		})
	}
	// The endless handler only returns when the client hung up.
	select {
	case <-endlessDone:
	case <-time.After(testwait.HangGuard):
		t.Fatal("the endless body was still being read")
	}
}

func TestConditional(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("If-None-Match")+"|"+r.Header.Get("If-Modified-Since"))
		mu.Unlock()
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2026 15:04:05 GMT")
		w.Header().Set("Cache-Control", "max-age=120")
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, "the page")
	})
	f, _ := newFetcher(t, nil, Options{})
	u := mustParse(t, f, base+"/a")
	var first bytes.Buffer
	r1, err := f.Get(context.Background(), u, Validators{}, &first)
	if err != nil || r1.NotModified || first.String() != "the page" {
		t.Fatalf("first: %+v, %v, %q", r1, err, first.String())
	}
	want := Validators{ETag: `"v1"`, LastModified: "Mon, 02 Jan 2026 15:04:05 GMT"}
	if r1.Validators != want || r1.Fresh != 2*time.Minute {
		t.Fatalf("first: validators %+v fresh %v", r1.Validators, r1.Fresh)
	}
	var second bytes.Buffer
	r2, err := f.Get(context.Background(), u, r1.Validators, &second)
	if err != nil || !r2.NotModified || second.Len() != 0 || r2.Bytes != 0 || r2.Validators != want {
		t.Fatalf("second: %+v, %v, wrote %q", r2, err, second.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if asked[1] != `"v1"|Mon, 02 Jan 2026 15:04:05 GMT` {
		t.Fatalf("the conditional request sent %q", asked[1])
	}
}

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"nothing said: cache_ttl", nil, 24 * time.Hour},
		{"max-age", map[string]string{"Cache-Control": "public, max-age=600"}, 10 * time.Minute},
		{"max-age less Age", map[string]string{"Cache-Control": "max-age=600", "Age": "100"}, 500 * time.Second},
		{"max-age capped at cache_ttl", map[string]string{"Cache-Control": "max-age=31536000"}, 24 * time.Hour},
		{"max-age=0", map[string]string{"Cache-Control": "max-age=0"}, 0},
		{"no-store", map[string]string{"Cache-Control": "no-store, max-age=600"}, 0},
		{"no-cache", map[string]string{"Cache-Control": "No-Cache"}, 0},
		{"Expires", map[string]string{"Date": date, "Expires": now.Add(time.Hour).Format(http.TimeFormat)}, time.Hour},
		{"Expires in the past", map[string]string{"Date": date, "Expires": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"invalid Expires", map[string]string{"Expires": "0"}, 0},
		{"max-age beats Expires", map[string]string{"Cache-Control": "max-age=60", "Expires": "0"}, time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, base := serve(t, func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.headers {
					w.Header()[k] = []string{v}
				}
				io.WriteString(w, "x")
			})
			f, _ := newFetcher(t, nil, Options{Now: func() time.Time { return now }})
			r, err := f.Get(context.Background(), mustParse(t, f, base+"/"), Validators{}, io.Discard)
			if err != nil || r.Fresh != tt.want {
				t.Fatalf("Fresh %v, err %v; want %v", r.Fresh, err, tt.want)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select { // never answers before the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	f, _ := newFetcher(t, func(c *Config) { c.Timeout = settings.Duration(time.Second) }, Options{})
	_, err := f.Get(context.Background(), mustParse(t, f, base+"/slow"), Validators{}, io.Discard)
	if !errors.Is(err, ErrDownloadFailed) || !strings.Contains(err.Error(), "public.example did not answer within 1s (internet.fetch.timeout)") {
		t.Fatalf("err %v", err)
	}
}

func TestRedirects(t *testing.T) {
	final, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "landed") })
	_, fport, _ := net.SplitHostPort(final.Listener.Addr().String())
	_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusMovedPermanently)
	})
	for _, tt := range []struct {
		to        string
		forbidden bool
	}{
		{"http://public.example:" + fport + "/end", false},
		{"http://10.0.0.5/", true},
		{"http://inside.example/", true},
		{"http://localhost:" + fport + "/", true},
		{"http://127.0.0.2:" + fport + "/", true},
		{"http://[::1]:" + fport + "/", true},
		{"http://169.254.169.254/latest/meta-data/", true},
		{"ftp://public.example/", true},
	} {
		t.Run(tt.to, func(t *testing.T) {
			f, w := newFetcher(t, nil, Options{})
			var out bytes.Buffer
			r, err := f.Get(context.Background(), mustParse(t, f, base+"/?to="+url.QueryEscape(tt.to)), Validators{}, &out)
			if !tt.forbidden {
				if err != nil || out.String() != "landed" || r.URL != tt.to {
					t.Fatalf("%+v, %v, %q", r, err, out.String())
				}
				return
			}
			if !errors.Is(err, ErrForbidden) || !strings.HasPrefix(err.Error(), "botd does not open ") {
				t.Fatalf("err %v, want a refusal", err)
			}
			for _, d := range w.dials() {
				if !strings.HasPrefix(d, "127.0.0.1:") {
					t.Fatalf("dialed %s after the refusal", d)
				}
			}
		})
	}
}

func TestDownloadFailures(t *testing.T) {
	_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/teapot":
			w.WriteHeader(599)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/zstd":
			w.Header().Set("Content-Encoding", "zstd")
			io.WriteString(w, "x")
		case "/badgzip":
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, "not gzip at all")
		case "/cut":
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "only part")
		}
	})
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	_, tport, _ := net.SplitHostPort(tlsSrv.Listener.Addr().String())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, cport, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()

	for _, tt := range []struct{ raw, want string }{
		{base + "/missing", "public.example answered 404 Not Found"},
		{base + "/teapot", "public.example answered 599"},
		{base + "/loop", "public.example redirected more than 5 times"},
		{base + "/zstd", `public.example sent the page in an encoding botd does not read ("zstd")`},
		{base + "/badgzip", "public.example sent the page as damaged gzip"},
		{base + "/cut", "public.example stopped sending the page before its end"},
		{"http://example.invalid/", "example.invalid could not be found"},
		{"https://public.example:" + tport + "/", "public.example's certificate is not trusted"},
		{"http://public.example:" + cport + "/", "public.example could not be reached"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			f, _ := newFetcher(t, nil, Options{})
			_, err := f.Get(context.Background(), mustParse(t, f, tt.raw), Validators{}, io.Discard)
			if !errors.Is(err, ErrDownloadFailed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want download failed saying %q", err, tt.want)
			}
		})
	}
}

func TestDisabled(t *testing.T) {
	f, w := newFetcher(t, func(c *Config) { c.Enabled = false }, Options{})
	_, err := f.Get(context.Background(), mustParse(t, f, "http://public.example/"), Validators{}, io.Discard)
	if !errors.Is(err, ErrDisabled) || len(w.dials()) != 0 {
		t.Fatalf("err %v, dialed %v", err, w.dials())
	}
}

func TestAdmit(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	f, _ := newFetcher(t, func(c *Config) { c.PerGroupPerHour = 3 }, Options{Now: clock})

	for i := 0; i < 3; i++ {
		if err := f.Admit("family"); err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
		advance(10 * time.Minute)
	}
	// 30 minutes in: the first fetch leaves the window in 30 minutes.
	err := f.Admit("family")
	if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "opened 3 links in the last hour (internet.fetch.per_group_per_hour); the next is possible in 30 minutes") {
		t.Fatalf("fourth fetch: %v", err)
	}
	if err := f.Admit("work"); err != nil {
		t.Fatalf("another group is limited too: %v", err)
	}
	advance(29*time.Minute + 30*time.Second)
	if err := f.Admit("family"); !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "in 30 seconds") {
		t.Fatalf("30 s before the window slides: %v", err)
	}
	advance(30 * time.Second)
	if err := f.Admit("family"); err != nil {
		t.Fatalf("after the first fetch left the hour: %v", err)
	}
	if err := f.Admit("family"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("the window is full again: %v", err)
	}
}

func TestParse(t *testing.T) {
	f, _ := newFetcher(t, nil, Options{})
	for _, tt := range []struct {
		in, want string
		err      error
	}{
		{"  https://Example.COM/Path?q=1#section  ", "https://example.com/Path?q=1", nil},
		{"HTTP://example.com:80", "http://example.com/", nil},
		{"https://example.com:443/a", "https://example.com/a", nil},
		{"https://example.com:8443/a", "https://example.com:8443/a", nil},
		{"example.com/article", "https://example.com/article", nil},
		{"https://bücher.example/", "https://xn--bcher-kva.example/", nil},
		{"https://example.com./", "https://example.com/", nil},
		{"http://[2606:4700:4700::1111]:80/", "http://[2606:4700:4700::1111]/", nil},
		{"", "", ErrBadURL},
		{"   ", "", ErrBadURL},
		{"http://exa mple.com/", "", ErrBadURL},
		{"http://10.0.0.1/", "", ErrForbidden},
		{"http://localhost:8080/", "", ErrForbidden},
		{"http://0x7f.1/", "", ErrForbidden},
		{"http://user:pw@example.com/", "", ErrForbidden},
		{"file:///etc/passwd", "", ErrForbidden},
		{"javascript:alert(1)", "", ErrForbidden},
	} {
		u, err := f.Parse(tt.in)
		switch {
		case tt.err != nil && !errors.Is(err, tt.err):
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, u, err, tt.err)
		case tt.err == nil && (err != nil || u.String() != tt.want):
			t.Errorf("Parse(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name  string
		edit  func(*Config)
		paths []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"ranges", func(c *Config) { c.AllowPrivate = []string{"10.0.0.0/8", "intranet", "::1", "10.0.0.0/99"} },
			[]string{"allow_private[1]", "allow_private[3]"}},
		{"zero and absurd", func(c *Config) {
			c.MaxBytes, c.Timeout, c.PerGroupPerHour, c.CacheTTL = 0, 0, 0, settings.Duration(-time.Hour)
		}, []string{"max_bytes", "timeout", "per_group_per_hour", "cache_ttl"}},
		{"too large", func(c *Config) {
			c.MaxBytes, c.Timeout, c.PerGroupPerHour, c.CacheTTL = 2<<30, settings.Duration(time.Hour), 1e6, settings.Duration(1e5*time.Hour)
		}, []string{"max_bytes", "timeout", "per_group_per_hour", "cache_ttl"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			ps := c.Validate()
			var got []string
			for _, p := range ps {
				got = append(got, p.Path)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.paths) {
				t.Fatalf("problems %v, want at %v", ps, tt.paths)
			}
			if _, err := New(c, Options{}); (err == nil) != (len(tt.paths) == 0) {
				t.Fatalf("New: %v", err)
			}
		})
	}
}

func BenchmarkGet1MB(b *testing.B) {
	body := page(1 << 20)
	_, base := serve(b, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	})
	f, _ := newFetcher(b, nil, Options{})
	u := mustParse(b, f, base+"/page")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Get(context.Background(), u, Validators{}, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
