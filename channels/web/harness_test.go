package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/textproto"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

// harness is a started web channel on a loopback port, with a recording
// sink, a real store and registry.
type harness struct {
	t     *testing.T
	w     *Web
	sink  *chantest.Sink
	reg   *mediaregistry.Registry
	st    *store.Store
	dir   string
	base  string
	out   *syncBuffer
	stop  context.CancelFunc
	token string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harnessOpt func(*Config, *Options)

func withMaxUpload(n int64) harnessOpt {
	return func(_ *Config, o *Options) { o.MaxUploadBytes = n }
}

var tokenLine = regexp.MustCompile(`botd web: open (http://[^/]+)/login#token=([A-Za-z0-9_-]+)\n`)

func testGroups(t testing.TB) *groups.Set {
	t.Helper()
	set, err := groups.NewSet("Andy", []groups.Group{
		{Folder: "main", Name: "Main", Chat: "web:main", Main: true},
		{Folder: "team", Name: "Team", Chat: "web:team", RequiresTrigger: true},
		{Folder: "family", Name: "Family", Chat: "telegram:-100", RequiresTrigger: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// openStore opens the SQLite database at path, closed when t ends.
func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	dir := t.TempDir()
	return startHarness(t, dir, opts...)
}

// startHarness starts a channel over dir (again, for restart tests).
func startHarness(t *testing.T, dir string, opts ...harnessOpt) *harness {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, filepath.Join(dir, "botd.db"))
	reg := mediaregistry.New(st.DB, 0)
	sink := chantest.NewSink("web:main", "web:team")
	// Tests post as fast as they can; the rate tests set their own.
	cfg := Config{Enabled: true, Listen: "127.0.0.1:0", PostsPerMinute: 1 << 20, RoomPostsPerMinute: 1 << 20}
	o := Options{DataDir: dir, MaxUploadBytes: 1 << 20, Groups: testGroups(t), Store: st, Model: "fake/model"}
	for _, f := range opts {
		f(&cfg, &o)
	}
	out := &syncBuffer{}
	o.Out = out
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := New(cfg, channels.Env{Registry: reg, Sink: sink, Log: log, AssistantName: "Andy"}, o)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	if err := w.Start(runCtx); err != nil {
		stop()
		t.Fatal(err)
	}
	h := &harness{t: t, w: w, sink: sink, reg: reg, st: st, dir: dir, base: w.BaseURL(), out: out, stop: stop}
	if m := tokenLine.FindStringSubmatch(out.String()); m != nil {
		h.token = m[2]
	}
	if cfg.AdminToken != "" {
		h.token = cfg.AdminToken
	}
	t.Cleanup(func() {
		stop()
		chantest.WaitReturns(t, w)
	})
	return h
}

// client is a browser: its own cookie jar, no redirects followed.
func (h *harness) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var (
	hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	dataCSRF   = regexp.MustCompile(`data-csrf="([^"]+)"`)
)

func (h *harness) get(c *http.Client, path string) (*http.Response, string) {
	h.t.Helper()
	resp, err := c.Get(h.base + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// postForm posts a urlencoded form as a page of the server would.
func (h *harness) postForm(c *http.Client, path string, form url.Values) (*http.Response, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.base)
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// loginCSRF opens the login page and returns its form token.
func (h *harness) loginCSRF(c *http.Client) string {
	h.t.Helper()
	_, body := h.get(c, "/login")
	m := hiddenCSRF.FindStringSubmatch(body)
	if m == nil {
		h.t.Fatalf("no csrf field on the login page:\n%s", body)
	}
	return m[1]
}

// admin returns a client logged in with the admin token.
func (h *harness) admin() *http.Client {
	h.t.Helper()
	c := h.client()
	resp, body := h.postForm(c, "/login", url.Values{"csrf": {h.loginCSRF(c)}, "token": {h.token}})
	if resp.StatusCode != http.StatusSeeOther {
		h.t.Fatalf("login: %d\n%s", resp.StatusCode, body)
	}
	return c
}

// roomCSRF opens a room page and returns the token its posts carry.
func (h *harness) roomCSRF(c *http.Client, room string) string {
	h.t.Helper()
	resp, body := h.get(c, "/r/"+room)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("room %s: %d\n%s", room, resp.StatusCode, body)
	}
	m := dataCSRF.FindStringSubmatch(body)
	if m == nil {
		h.t.Fatalf("no csrf on the room page:\n%s", body)
	}
	return m[1]
}

type upload struct {
	name, ctype string
	data        []byte
}

// post sends a message the way the page's script does.
func (h *harness) post(c *http.Client, room, csrf, name, text string, files ...upload) (*http.Response, string) {
	h.t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", name)
	mw.WriteField("text", text)
	for _, f := range files {
		hdr := textproto.MIMEHeader{}
		// Written by hand: multipart.Writer.CreateFormFile would escape
		// the very names the hostile tests need to send.
		cd := fmt.Sprintf(`form-data; name="file"; filename="%s"`, strings.NewReplacer(`"`, `\"`).Replace(f.name))
		if strings.ContainsFunc(f.name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			// Raw control characters are not allowed in a header at all;
			// RFC 2231 encoding carries them through to the channel.
			cd = `form-data; name="file"; filename*=UTF-8''` + url.PathEscape(f.name)
		}
		hdr.Set("Content-Disposition", cd)
		hdr.Set("Content-Type", f.ctype)
		pw, _ := mw.CreatePart(hdr)
		pw.Write(f.data)
	}
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, h.base+"/r/"+room+"/messages", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	if csrf != "" {
		req.Header.Set(csrfHeader, csrf)
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

// stream is a room's event stream as a page reads it.
type stream struct {
	t    *testing.T
	r    *bufio.Reader
	stop func()
}

func (h *harness) events(c *http.Client, room string, lastID int64) *stream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/r/"+room+"/events", nil)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", fmt.Sprint(lastID))
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		h.t.Fatalf("events: %d", resp.StatusCode)
	}
	s := &stream{t: h.t, r: bufio.NewReader(resp.Body), stop: func() { cancel(); resp.Body.Close() }}
	h.t.Cleanup(s.stop)
	return s
}

// next returns the next event's name and data, skipping comments; the
// read ends with the test's deadline.
func (s *stream) next() (string, string) {
	s.t.Helper()
	name, data := "", ""
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("event stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			// The list of drafts every connect begins with says nothing
			// while no answer is being written.
			if name == "drafts" && data == "[]" {
				name, data = "", ""
				continue
			}
			if data != "" {
				return name, data
			}
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

// message returns the next message event, skipping typing signals.
func (s *stream) message() msgView {
	s.t.Helper()
	for {
		name, data := s.next()
		if name != "message" {
			continue
		}
		var m msgView
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			s.t.Fatal(err)
		}
		return m
	}
}

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 9), uint8(y * 5), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
