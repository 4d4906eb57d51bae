// Package webfetch is the bounded HTTP GET behind fetch_url: every request
// goes through netguard, bodies are decoded (gzip, brotli) and capped at
// max_bytes while they stream, conditional requests reuse what the cache
// holds, and each group has an hourly budget of network fetches. Bytes are
// passed on as the server sent them once decoded: charset conversion and
// reading the page belong to the page reader.
package webfetch

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/net/idna"

	"github.com/botd-dev/botd/netguard"
)

// The errors a caller maps to tool error codes: ErrForbidden is forbidden,
// ErrDownloadFailed download_failed; each wraps a sentence a chat member
// can read.
var (
	ErrForbidden      = netguard.ErrForbidden
	ErrDownloadFailed = errors.New("download failed")
	ErrTooLarge       = errors.New("too large")
	ErrRateLimited    = errors.New("rate limited")
	ErrDisabled       = errors.New("fetching links is turned off")
	ErrBadURL         = errors.New("not a link")
)

// Options are the Fetcher's seams; the zero value is the real network.
type Options struct {
	Resolver  netguard.Resolver
	Dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	UserAgent string // "": botd/<version> (+https://github.com/botd-dev/botd)
	Log       *slog.Logger
	Now       func() time.Time
}

// Fetcher fetches web pages for the groups.
type Fetcher struct {
	cfg    Config
	guard  *netguard.Guard
	client *http.Client
	ua     string
	log    *slog.Logger
	now    func() time.Time

	mu     sync.Mutex
	recent map[string][]time.Time // per group: the fetches of the last hour, oldest first
}

// New builds a Fetcher from a valid Config; it has no side effects.
func New(c Config, o Options) (*Fetcher, error) {
	if err := c.Validate().Err(); err != nil {
		return nil, fmt.Errorf("webfetch: %w", err)
	}
	allow, err := netguard.ParsePrefixes(c.AllowPrivate)
	if err != nil {
		return nil, fmt.Errorf("webfetch: %w", err)
	}
	g := netguard.New(netguard.Options{AllowPrivate: allow, Resolver: o.Resolver, Dial: o.Dial})
	tr := g.Transport()
	// Decoding is done here, under the cap, not transparently.
	tr.DisableCompression = true
	tr.MaxResponseHeaderBytes = 64 << 10
	f := &Fetcher{
		cfg:    c,
		guard:  g,
		client: &http.Client{Transport: tr, CheckRedirect: g.CheckRedirect},
		ua:     o.UserAgent,
		log:    o.Log,
		now:    o.Now,
		recent: map[string][]time.Time{},
	}
	if f.ua == "" {
		f.ua = defaultUserAgent()
	}
	if f.log == nil {
		f.log = slog.Default()
	}
	if f.now == nil {
		f.now = time.Now
	}
	return f, nil
}

func defaultUserAgent() string {
	v := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "botd/" + v + " (+https://github.com/botd-dev/botd)"
}

// Config is the configuration the Fetcher was built with.
func (f *Fetcher) Config() Config { return f.cfg }

// Parse reads a link as a chat member or model wrote it into the one form
// that is fetched and cached: trimmed, scheme and host lower-cased, the
// host in ASCII (IDNA), the default port and the fragment dropped, an
// empty path made "/". A link without a scheme is taken as https. Errors
// are ErrBadURL or a refusal (ErrForbidden).
func (f *Fetcher) Parse(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, fmt.Errorf("%w: the link is empty", ErrBadURL)
	}
	if !strings.Contains(s, "://") && !strings.HasPrefix(s, "/") && !strings.Contains(strings.SplitN(s, "/", 2)[0], ":") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a valid link", ErrBadURL, clip(raw))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Fragment, u.RawFragment = "", ""
	if u.Host != "" && u.Opaque == "" {
		host, port := u.Hostname(), u.Port()
		if !strings.HasPrefix(u.Host, "[") {
			host = strings.TrimSuffix(host, ".")
			if !isASCII(host) {
				ascii, err := idna.Lookup.ToASCII(host)
				if err != nil {
					return nil, fmt.Errorf("%w: %q is not a valid host name", ErrBadURL, clip(host))
				}
				host = ascii
			}
		}
		host = strings.ToLower(host)
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
			port = ""
		}
		u.Host = host
		if port != "" {
			u.Host += ":" + port
		}
		if u.Path == "" {
			u.Path = "/"
		}
	}
	if err := f.guard.CheckURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Validators are what a cached copy is revalidated with.
type Validators struct{ ETag, LastModified string }

// Response describes one fetch.
type Response struct {
	URL         string // final URL after redirects
	Status      int
	ContentType string // as the server sent it (params kept: charset)
	Validators
	NotModified bool          // 304 to a conditional request: nothing written
	Fresh       time.Duration // how long to reuse it without asking again
	Bytes       int64         // decoded bytes written
}

// Get fetches u and streams the decoded body into w, at most MaxBytes
// decoded and MaxBytes as sent. With prev set it asks conditionally; a 304
// writes nothing and answers NotModified. On error w may hold a partial
// body, which the caller discards.
func (f *Fetcher) Get(ctx context.Context, u *url.URL, prev Validators, w io.Writer) (Response, error) {
	if !f.cfg.Enabled {
		return Response{}, fmt.Errorf("%w (internet.fetch.enabled is false)", ErrDisabled)
	}
	if err := f.guard.CheckURL(u); err != nil {
		return Response{}, err
	}
	host := u.Hostname()
	timeout := f.cfg.Timeout.D()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %q is not a valid link", ErrBadURL, clip(u.String()))
	}
	req.Header.Set("User-Agent", f.ua)
	req.Header.Set("Accept-Encoding", "gzip, br")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if prev.ETag != "" {
		req.Header.Set("If-None-Match", prev.ETag)
	}
	if prev.LastModified != "" {
		req.Header.Set("If-Modified-Since", prev.LastModified)
	}

	resp, err := f.client.Do(req)
	if err != nil {
		return Response{}, f.failure(ctx, host, err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	r := Response{
		URL:         final.String(),
		Status:      resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"),
		Validators:  Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")},
		Fresh:       f.freshness(resp.Header),
	}
	fhost := final.Hostname()
	switch {
	case resp.StatusCode == http.StatusNotModified && (prev.ETag != "" || prev.LastModified != ""):
		r.NotModified = true
		if r.ETag == "" && r.LastModified == "" {
			r.Validators = prev
		}
		f.log.Debug("web fetch", "host", fhost, "status", resp.StatusCode, "bytes", 0)
		return r, nil
	case resp.StatusCode >= 400:
		return r, fmt.Errorf("%w: %s answered %s", ErrDownloadFailed, fhost, statusText(resp))
	case resp.StatusCode >= 300 || resp.StatusCode < 200:
		return r, fmt.Errorf("%w: %s answered %s, which is not a page", ErrDownloadFailed, fhost, statusText(resp))
	}
	limit := f.cfg.MaxBytes
	if resp.ContentLength > limit {
		return r, f.tooLarge(fhost)
	}
	raw := &capReader{r: resp.Body, left: limit}
	body, err := decoder(resp.Header.Get("Content-Encoding"), raw)
	if err != nil {
		return r, fmt.Errorf("%w: %s sent the page %v", ErrDownloadFailed, fhost, err)
	}
	n, err := io.Copy(markWriter{w}, io.LimitReader(body, limit))
	r.Bytes = n
	if err == nil && n == limit {
		// One byte more than the cap proves the page is larger.
		var one [1]byte
		var m int
		m, err = io.ReadFull(body, one[:])
		if m > 0 {
			return r, f.tooLarge(fhost)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = nil
		}
	}
	if err != nil {
		if errors.Is(err, errCapped) {
			return r, f.tooLarge(fhost)
		}
		if ctx.Err() != nil {
			return r, f.failure(ctx, fhost, err)
		}
		var werr *writeError
		if errors.As(err, &werr) {
			return r, fmt.Errorf("webfetch: keeping the page from %s: %w", fhost, werr.err)
		}
		return r, fmt.Errorf("%w: %s stopped sending the page before its end (%v)", ErrDownloadFailed, fhost, err)
	}
	f.log.Debug("web fetch", "host", fhost, "status", resp.StatusCode, "bytes", n)
	return r, nil
}

func statusText(resp *http.Response) string {
	if t := http.StatusText(resp.StatusCode); t != "" {
		return strconv.Itoa(resp.StatusCode) + " " + t
	}
	return strconv.Itoa(resp.StatusCode)
}

func (f *Fetcher) tooLarge(host string) error {
	return fmt.Errorf("%w: the page at %s is larger than %s (internet.fetch.max_bytes)", ErrTooLarge, host, sizeText(f.cfg.MaxBytes))
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// failure turns what went wrong on the way to a response into a refusal
// (kept as is) or a download failure with a plain sentence.
func (f *Fetcher) failure(ctx context.Context, host string, err error) error {
	if errors.Is(err, ErrForbidden) {
		var r *netguard.Refusal
		if errors.As(err, &r) {
			return r
		}
		return err
	}
	var (
		dnsErr   *net.DNSError
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		opErr    *net.OpError
	)
	var sentence string
	switch {
	case errors.Is(err, netguard.ErrTooManyRedirects):
		sentence = fmt.Sprintf("%s redirected more than %d times", host, netguard.MaxRedirects)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		sentence = fmt.Sprintf("%s did not answer within %v (internet.fetch.timeout)", host, f.cfg.Timeout.D())
	case ctx.Err() != nil:
		return fmt.Errorf("webfetch: %w", ctx.Err())
	case errors.As(err, &dnsErr):
		sentence = fmt.Sprintf("%s could not be found", dnsErr.Name)
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr), errors.As(err, &invalid):
		sentence = fmt.Sprintf("%s's certificate is not trusted, so its secure connection failed", host)
	case errors.As(err, &recErr), errors.As(err, &alertErr):
		sentence = fmt.Sprintf("the secure connection to %s failed", host)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		sentence = fmt.Sprintf("%s could not be reached", host)
	default:
		sentence = fmt.Sprintf("%s could not be read (%v)", host, unwrapURLError(err))
	}
	return fmt.Errorf("%w: %s", ErrDownloadFailed, sentence)
}

// unwrapURLError drops net/http's `Get "URL":` prefix, whose query string
// may hold tokens.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// freshness is how long a response may be reused without asking again:
// no-store / no-cache: 0; max-age (less Age) or Expires; else CacheTTL;
// never more than CacheTTL.
func (f *Fetcher) freshness(h http.Header) time.Duration {
	ttl := f.cfg.CacheTTL.D()
	fresh := ttl
	cc := strings.ToLower(h.Get("Cache-Control"))
	directives := map[string]string{}
	for _, d := range strings.Split(cc, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(d), "=")
		directives[k] = strings.Trim(v, `"`)
	}
	_, noStore := directives["no-store"]
	_, noCache := directives["no-cache"]
	if noStore || noCache {
		return 0
	}
	if v, ok := directives["max-age"]; ok {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs < 0 {
			return 0
		}
		age, _ := strconv.ParseInt(h.Get("Age"), 10, 64)
		left := secs - max(age, 0)
		if left <= 0 {
			return 0
		}
		if left >= int64(ttl/time.Second) {
			return ttl
		}
		fresh = time.Duration(left) * time.Second
	} else if exp := h.Get("Expires"); exp != "" {
		t, err := http.ParseTime(exp)
		if err != nil {
			return 0 // an invalid Expires means already expired (RFC 9111 5.3)
		}
		now := f.now()
		if d, err := http.ParseTime(h.Get("Date")); err == nil {
			now = d
		}
		fresh = max(0, t.Sub(now))
	}
	return min(fresh, ttl)
}

var errCapped = errors.New("response larger than the cap")

// capReader fails once more than left bytes come off the wire, so a body
// without a Content-Length is cut at the cap before decoding.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errCapped
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errCapped
	}
	return n, err
}

// writeError marks a failure of the caller's writer, which is not the
// server's fault.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

type markWriter struct{ w io.Writer }

func (m markWriter) Write(p []byte) (int, error) {
	n, err := m.w.Write(p)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

func decoder(encoding string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return r, nil
	case "gzip", "x-gzip":
		z, err := gzip.NewReader(r)
		if err != nil {
			if errors.Is(err, errCapped) {
				return nil, err
			}
			return nil, fmt.Errorf("as damaged gzip (%v)", err)
		}
		return z, nil
	case "br":
		return brotli.NewReader(r), nil
	}
	return nil, fmt.Errorf("in an encoding botd does not read (%q)", encoding)
}

// Admit counts one network fetch for group against per_group_per_hour
// over a sliding hour; over it, ErrRateLimited says when the next one is
// possible. Cached answers are not admitted (the caller does not ask).
func (f *Fetcher) Admit(group string) error {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	times := f.recent[group]
	i := 0
	for i < len(times) && !times[i].After(now.Add(-time.Hour)) {
		i++
	}
	times = times[i:]
	if len(times) >= f.cfg.PerGroupPerHour {
		f.recent[group] = times
		wait := times[0].Add(time.Hour).Sub(now)
		return fmt.Errorf("%w: this group has opened %d links in the last hour (internet.fetch.per_group_per_hour); the next is possible in %s",
			ErrRateLimited, len(times), waitText(wait))
	}
	f.recent[group] = append(times, now)
	f.pruneLocked(now)
	return nil
}

// pruneLocked forgets groups whose last fetch is more than an hour old,
// so the map does not grow with every group ever seen.
func (f *Fetcher) pruneLocked(now time.Time) {
	if len(f.recent) < 64 {
		return
	}
	for g, times := range f.recent {
		if len(times) == 0 || !times[len(times)-1].After(now.Add(-time.Hour)) {
			delete(f.recent, g)
		}
	}
}

func waitText(d time.Duration) string {
	switch {
	case d <= time.Minute:
		secs := max(1, int((d+time.Second-1)/time.Second))
		if secs == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", secs)
	default:
		mins := int((d + time.Minute - 1) / time.Minute)
		return fmt.Sprintf("%d minutes", mins)
	}
}
