package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/internal/settings"
	"github.com/botd-dev/botd/mediaregistry"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		wantOK bool
	}{
		{"default", DefaultConfig(), true},
		{"ipv4 loopback", Config{Listen: "127.0.0.1:9000"}, true},
		{"ipv6 loopback", Config{Listen: "[::1]:9000"}, true},
		{"localhost", Config{Listen: "localhost:9000"}, true},
		{"every interface", Config{Listen: ":8080"}, false},
		{"unspecified", Config{Listen: "0.0.0.0:8080"}, false},
		{"lan address", Config{Listen: "192.168.1.5:8080"}, false},
		{"lan address allowed", Config{Listen: "192.168.1.5:8080", AllowRemote: true}, true},
		{"every interface allowed", Config{Listen: ":8080", AllowRemote: true}, true},
		{"no port", Config{Listen: "127.0.0.1"}, false},
		{"admin token", Config{Listen: DefaultListen, AdminToken: strings.Repeat("k", 32)}, true},
		{"short admin token", Config{Listen: DefaultListen, AdminToken: " " + strings.Repeat("k", 31) + "\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := settings.Of(tc.cfg.Validate())
			if (len(ps) == 0) != tc.wantOK {
				t.Fatalf("Validate(%+v) = %v", tc.cfg, ps)
			}
			for _, p := range ps {
				if p.Path == "channels.web.admin_token" && strings.Contains(p.Msg, "at least 32 characters") {
					continue
				}
				if p.Path != "channels.web.listen" || (!strings.Contains(p.Msg, "allow_remote") && !strings.Contains(p.Msg, "host:port")) {
					t.Errorf("problem %+v does not say what to do", p)
				}
			}
		})
	}
}

func TestRoomNames(t *testing.T) {
	for _, tc := range []struct {
		chat string
		ok   bool
	}{
		{"web:main", true}, {"web:team-2", true}, {"web:", false}, {"web:../x", false},
		{"web:a b", false}, {"telegram:main", false}, {"web:" + strings.Repeat("a", 65), false},
	} {
		if _, ok := RoomOf(tc.chat); ok != tc.ok {
			t.Errorf("RoomOf(%q) ok = %v, want %v", tc.chat, ok, tc.ok)
		}
	}
}

// The admin token is made once, 0600, and shown once: the next start
// prints the address without it.
func TestAdminTokenCreatedOnceShownOnce(t *testing.T) {
	dir := t.TempDir()
	h := startHarness(t, dir)
	if h.token == "" || len(h.token) < 40 {
		t.Fatalf("first start printed no token: %q", h.out.String())
	}
	if n := strings.Count(h.out.String(), "\n"); n != 1 {
		t.Errorf("first start printed %d lines, want exactly one: %q", n, h.out.String())
	}
	p := filepath.Join(dir, "web", adminTokenFile)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	h.stop()
	chantest.WaitReturns(t, h.w)

	again := startHarness(t, dir)
	if strings.Contains(again.out.String(), h.token) {
		t.Fatalf("second start printed the token again: %q", again.out.String())
	}
	if !strings.Contains(again.out.String(), again.base+"/") {
		t.Errorf("second start does not print the address: %q", again.out.String())
	}
	raw, _ := os.ReadFile(p)
	if strings.TrimSpace(string(raw)) != h.token {
		t.Error("the token changed across restarts")
	}
	again.token = h.token
	// A session from before the restart still works: the cookie is
	// signed with a key derived from the token.
	c := again.admin()
	if resp, _ := again.get(c, "/r/main"); resp.StatusCode != http.StatusOK {
		t.Fatalf("room after restart: %d", resp.StatusCode)
	}
}

func TestAdminTokenReadableByOthersIsRefused(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "web"), 0o700)
	os.WriteFile(filepath.Join(dir, "web", adminTokenFile), []byte(strings.Repeat("x", 43)), 0o644)
	w, err := New(Config{Listen: "127.0.0.1:0"}, channels.Env{Registry: mediaregistry.New(nil, 0), Sink: chantest.NewSink()},
		Options{DataDir: dir, Groups: testGroups(t), Store: openStore(t, filepath.Join(dir, "botd.db"))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = w.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Start = %v, want a refusal that says chmod 600", err)
	}
}

func TestLogin(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name       string
		csrf       func(c *http.Client) string
		token      string
		wantStatus int
	}{
		{"no token", h.loginCSRF, "", http.StatusUnauthorized},
		{"wrong token", h.loginCSRF, "not-the-token-" + strings.Repeat("x", 30), http.StatusUnauthorized},
		{"token with a character changed", h.loginCSRF, h.token[:len(h.token)-1] + "!", http.StatusUnauthorized},
		{"csrf missing", func(*http.Client) string { return "" }, h.token, http.StatusForbidden},
		{"csrf wrong", func(*http.Client) string { return randomToken() }, h.token, http.StatusForbidden},
		{"right token", h.loginCSRF, h.token, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.client()
			h.loginCSRF(c) // the cookie half of the form token
			resp, body := h.postForm(c, "/login", map[string][]string{"csrf": {tc.csrf(c)}, "token": {tc.token}})
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d\n%s", resp.StatusCode, tc.wantStatus, body)
			}
			var session *http.Cookie
			for _, ck := range resp.Cookies() {
				if ck.Name == sessionCookie {
					session = ck
				}
			}
			if tc.wantStatus != http.StatusSeeOther {
				if session != nil {
					t.Fatal("a failed login set a session cookie")
				}
				if resp, _ := h.get(c, "/r/main"); resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("room after a failed login: %d, want a redirect to the login", resp.StatusCode)
				}
				return
			}
			if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
				t.Fatalf("session cookie %+v, want HttpOnly and SameSite=Strict", session)
			}
			if resp, _ := h.get(c, "/r/main"); resp.StatusCode != http.StatusOK {
				t.Fatalf("room after login: %d", resp.StatusCode)
			}
		})
	}
}

// Without a valid session nothing of a room is served.
func TestNoSession(t *testing.T) {
	h := newHarness(t)
	forged := h.client()
	u := mustURL(t, h.base)
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: "eyJyIjoiYWRtaW4iLCJleHAiOjQxMDI0NDQ4MDB9.AAAA"}})
	for name, c := range map[string]*http.Client{"no cookie": h.client(), "forged cookie": forged} {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				method, path string
				want         int
			}{
				{"GET", "/r/main", http.StatusSeeOther},
				{"GET", "/admin", http.StatusSeeOther},
				{"GET", "/r/main/events", http.StatusUnauthorized},
				{"GET", "/r/main/files/0123456789abcdef0123456789abcdef", http.StatusUnauthorized},
				{"POST", "/r/main/messages", http.StatusUnauthorized},
				{"POST", "/admin/links", http.StatusUnauthorized},
			} {
				req, _ := http.NewRequest(tc.method, h.base+tc.path, nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
				}
			}
		})
	}
	if got := h.sink.Total(); got != 0 {
		t.Fatalf("%d messages delivered without a session", got)
	}
}

// Every POST of a session needs its CSRF token, and a browser's word that
// the request came from another site is enough to refuse it.
func TestCSRF(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	good := h.roomCSRF(c, "main")
	other := h.admin() // another session's token is no good either
	otherTok := h.roomCSRF(other, "main")
	accepted := 0
	for _, tc := range []struct {
		name   string
		token  string
		header map[string]string
		want   int
	}{
		{"missing", "", nil, http.StatusForbidden},
		{"wrong", "0123456789abcdef0123456789abcdef", nil, http.StatusForbidden},
		{"another session's", otherTok, nil, http.StatusForbidden},
		{"cross-site fetch", good, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", good, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign origin", good, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"null origin", good, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"foreign origin despite same-origin fetch", good, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"right", good, nil, http.StatusOK},
		{"right, same-origin fetch", good, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.base+"/r/main/messages", strings.NewReader("--x\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhello\r\n--x--\r\n"))
			req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
			req.Header.Set("Accept", "application/json")
			if tc.token != "" {
				req.Header.Set(csrfHeader, tc.token)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == http.StatusOK {
				accepted++
			}
		})
	}
	if got := h.sink.Total(); got != accepted {
		t.Fatalf("%d messages delivered, want only the %d with the right token from botd's page", got, accepted)
	}
	// The dashboard's forms and logout need it too.
	for _, path := range []string{"/admin/links", "/logout"} {
		resp, _ := h.postForm(c, path, map[string][]string{"room": {"main"}})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without a token: %d, want 403", path, resp.StatusCode)
		}
	}
	if links, err := h.w.auth.Links(context.Background()); err != nil || len(links) != 0 {
		t.Fatal("a link was created without a CSRF token")
	}
}

// A page of another site that resolves its name to 127.0.0.1 (DNS
// rebinding) is turned away by name.
func TestForeignHostRefused(t *testing.T) {
	h := newHarness(t)
	req, _ := http.NewRequest(http.MethodGet, h.base+"/login", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("status %d, want 421", resp.StatusCode)
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		req.Host = host + ":" + mustURL(t, h.base).Port()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s: %d", req.Host, resp.StatusCode)
		}
	}
}

// A photo with a caption arrives as a Telegram photo does: a registered
// ref, a placeholder with the caption, and the bytes only when asked.
func TestPostImageBecomesRef(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	ev := h.events(c, "main", 0)
	img := pngBytes(t, 40, 30)
	resp, body := h.post(c, "main", h.roomCSRF(c, "main"), "Ann", "look at this", upload{"sunset.png", "image/png", img})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	in := h.sink.Next(t)
	chantest.CheckInbound(t, h.reg, in, true)
	if len(in.Refs) != 1 || in.SenderName != "Ann" || in.ChatID != "web:main" || !in.IsGroup {
		t.Fatalf("inbound %+v", in)
	}
	ref := in.Refs[0]
	want := "[Image: sunset.png, " + mediaregistry.FormatSize(int64(len(img))) + ", image/png, ref:" + ref.ID + "] look at this"
	if in.Text != want || !strings.HasPrefix(ref.ID, "wb_") {
		t.Fatalf("text %q, want %q", in.Text, want)
	}
	// Lazy: the channel hands the bytes over only through Download.
	body2, size, err := h.w.Download(context.Background(), &ref)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(body2)
	body2.Close()
	if !bytes.Equal(got, img) || size != int64(len(img)) {
		t.Fatalf("download: %d bytes (size %d), want the %d posted", len(got), size, len(img))
	}
	// The room shows it, from the log, with the sender's name.
	m := ev.message()
	if m.From != "Ann" || m.Text != "look at this" || len(m.Files) != 1 || !m.Files[0].Image {
		t.Fatalf("event %+v", m)
	}
	fresp, fbody := h.get(c, m.Files[0].URL)
	if fresp.StatusCode != http.StatusOK || fresp.Header.Get("Content-Type") != "image/png" || fbody != string(img) {
		t.Fatalf("file: %d %s", fresp.StatusCode, fresp.Header.Get("Content-Type"))
	}
	// Another session's forged ref to the same file cannot reach another room's.
	forgedRef := ref
	forgedRef.Chat = "web:team"
	if _, _, err := h.w.Download(context.Background(), &forgedRef); err == nil {
		t.Fatal("a ref of another room downloaded this room's file")
	}
}

// A long or multi-line text stays text: a caption would fold and cut it.
func TestLongTextWithFileStaysText(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	text := "first line\nsecond line"
	if resp, body := h.post(c, "main", h.roomCSRF(c, "main"), "Ann", text, upload{"a.txt", "text/plain", []byte("hello")}); resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d %s", resp.StatusCode, body)
	}
	in := h.sink.Next(t)
	chantest.CheckInbound(t, h.reg, in, true)
	if !strings.HasSuffix(in.Text, "]\n"+text) || in.Refs[0].Caption != "" {
		t.Fatalf("text %q", in.Text)
	}
}

func TestOversizeUpload(t *testing.T) {
	const max = 4 << 10
	for _, tc := range []struct {
		name  string
		files []upload
		want  int
	}{
		{"one file just fits", []upload{{"a.bin", "application/octet-stream", make([]byte, max)}}, http.StatusOK},
		{"one file a byte over", []upload{{"a.bin", "application/octet-stream", make([]byte, max+1)}}, http.StatusRequestEntityTooLarge},
		{"two files over together", []upload{{"a.bin", "", make([]byte, max/2+10)}, {"b.bin", "", make([]byte, max/2+10)}}, http.StatusRequestEntityTooLarge},
		{"body far over the cap", []upload{{"a.bin", "", make([]byte, 3*max+formOverhead)}}, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withMaxUpload(max))
			c := h.admin()
			resp, body := h.post(c, "main", h.roomCSRF(c, "main"), "Ann", "", tc.files...)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == http.StatusOK {
				return
			}
			if !strings.Contains(body, "4KB") {
				t.Errorf("the refusal does not name the limit: %s", body)
			}
			if n := h.sink.Total(); n != 0 {
				t.Fatalf("%d messages delivered", n)
			}
			entries, _ := os.ReadDir(filepath.Join(h.dir, "web", "files", "main"))
			if len(entries) != 0 {
				t.Fatalf("%d files left behind by a refused upload", len(entries))
			}
		})
	}
}

func TestTextTooLong(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	resp, _ := h.post(c, "main", h.roomCSRF(c, "main"), "Ann", strings.Repeat("é", maxTextRunes+1))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || h.sink.Total() != 0 {
		t.Fatalf("status %d, %d delivered", resp.StatusCode, h.sink.Total())
	}
}

// Assistant answers and files appear in the room as they are sent;
// images inline, anything else (HTML above all) only as a download.
func TestAssistantSends(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	ev := h.events(c, "main", 0)
	ctx := context.Background()
	if err := h.w.SetTyping(ctx, "web:main", true); err != nil {
		t.Fatal(err)
	}
	if name, data := ev.next(); name != "typing" || data != `{"on":true}` {
		t.Fatalf("event %s %s", name, data)
	}
	d, err := h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: "Hello <b>there</b>"})
	if err != nil || len(d.MessageIDs) != 1 {
		t.Fatalf("send: %v %v", d, err)
	}
	if name, data := ev.next(); name != "typing" || data != `{"on":false}` {
		t.Fatalf("an answer did not end typing: %s %s", name, data)
	}
	if m := ev.message(); !m.Assistant || m.From != "Andy" || m.Text != "Hello <b>there</b>" {
		t.Fatalf("message %+v", m)
	}
	for _, tc := range []struct {
		name, file, ctype string
		data              []byte
		wantType, disp    string
	}{
		{"image", "chart.png", "image/png", pngBytes(t, 8, 8), "image/png", "inline"},
		{"html", "page.html", "text/html", []byte("<html><script>alert(1)</script></html>"), "application/octet-stream", "attachment"},
		{"svg", "x.svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "application/octet-stream", "attachment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tc.file)
			os.WriteFile(p, tc.data, 0o600)
			f := chantest.OpenFile(t, p)
			if _, err := h.w.SendMedia(ctx, channels.OutMedia{Chat: "web:main", File: f, FileName: tc.file, MIME: tc.ctype, Caption: "here"}); err != nil {
				t.Fatal(err)
			}
			m := ev.message()
			if len(m.Files) != 1 || m.Text != "here" || m.Files[0].Image != (tc.disp == "inline") {
				t.Fatalf("message %+v", m)
			}
			resp, body := h.get(c, m.Files[0].URL)
			if resp.Header.Get("Content-Type") != tc.wantType || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), tc.disp) ||
				!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") || body != string(tc.data) {
				t.Fatalf("served as %s, %s, csp %q", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
	if _, err := h.w.Send(ctx, channels.OutMessage{Chat: "web:nowhere", Text: "x"}); err == nil {
		t.Fatal("send to an unknown room succeeded")
	}
}

// A reconnecting page gets what it missed, and nothing twice.
func TestEventsResume(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	ctx := context.Background()
	for _, txt := range []string{"one", "two", "three"} {
		h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: txt})
	}
	ev := h.events(c, "main", 1)
	if a, b := ev.message(), ev.message(); a.Text != "two" || b.Text != "three" {
		t.Fatalf("resumed with %q, %q", a.Text, b.Text)
	}
	h.w.Send(ctx, channels.OutMessage{Chat: "web:main", Text: "four"})
	if m := ev.message(); m.Text != "four" || m.Seq != 4 {
		t.Fatalf("live %+v", m)
	}
}

// The room's log survives a restart, numbering included.
func TestRoomLogSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	h := startHarness(t, dir)
	h.w.Send(context.Background(), channels.OutMessage{Chat: "web:main", Text: "before the restart"})
	h.stop()
	chantest.WaitReturns(t, h.w)
	again := startHarness(t, dir)
	again.token = h.token
	c := again.admin()
	_, body := again.get(c, "/r/main")
	if !strings.Contains(body, "before the restart") {
		t.Fatal("the room forgot its messages")
	}
	d, _ := again.w.Send(context.Background(), channels.OutMessage{Chat: "web:main", Text: "after"})
	if m := again.events(c, "main", 1).message(); m.Seq != 2 || m.ID != d.MessageIDs[0] {
		t.Fatalf("numbering restarted: %+v", m)
	}
}

func TestSweepRemovesExpiredFiles(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	h.post(c, "main", h.roomCSRF(c, "main"), "Ann", "", upload{"a.txt", "text/plain", []byte("old")})
	in := h.sink.Next(t)
	if n, err := h.w.files.sweep(time.Now().Add(h.reg.TTL(Name) + time.Hour)); n != 1 || err != nil {
		t.Fatalf("swept %d files (%v)", n, err)
	}
	if _, _, err := h.w.Download(context.Background(), &in.Refs[0]); err == nil || !errors.Is(err, channels.ErrUnavailable) {
		t.Fatalf("download after the sweep: %v", err)
	}
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The web channel's files count toward media.max_disk_bytes: over it, the
// least recently written upload goes first (its ref then answers that the
// file is no longer kept), and an upload still being written stays.
func TestUploadsUnderTheDiskBudget(t *testing.T) {
	h := newHarness(t)
	c := h.admin()
	var refs []mediaregistry.MediaReference
	for i, name := range []string{"old.txt", "new.txt"} {
		h.post(c, "main", h.roomCSRF(c, "main"), "Ann", "", upload{name, "text/plain", bytes.Repeat([]byte{'a' + byte(i)}, 4000)})
		refs = append(refs, h.sink.Next(t).Refs[0])
	}
	// Make the first the least recently written, whatever the clock's grain.
	old := time.Now().Add(-time.Hour)
	if err := filepath.WalkDir(filepath.Join(h.dir, "web", "files"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, string(refs[0].Private)) {
			return os.Chtimes(p, old, old)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// An upload being written, the oldest of all.
	partial := filepath.Join(h.dir, "web", "files", "main", partialName(strings.Repeat("0", 32)))
	if err := os.WriteFile(partial, bytes.Repeat([]byte("p"), 4000), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(partial, old.Add(-time.Hour), old.Add(-time.Hour))

	b := diskbudget.New(10000, DiskAreas(h.dir, testGroups(t).All()), nil)
	u, err := b.Scan(context.Background())
	if err != nil || u.Total < 12000 {
		t.Fatalf("scan: %+v %v; want the three files counted", u, err)
	}
	if _, err := b.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(partial); err != nil {
		t.Errorf("the upload in progress was evicted: %v", err)
	}
	if _, _, err := h.w.Download(context.Background(), &refs[0]); !errors.Is(err, channels.ErrUnavailable) {
		t.Errorf("the oldest upload should be gone: %v", err)
	}
	if body, _, err := h.w.Download(context.Background(), &refs[1]); err != nil {
		t.Errorf("the newest upload should stay: %v", err)
	} else {
		body.Close()
	}
}

// Reading is open to any page's links and images: the Origin and
// Sec-Fetch-Site rules hold for what changes state, not for a GET.
func TestCrossSiteGetIsServed(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	for _, header := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "cross-site"},
	} {
		req, _ := http.NewRequest(http.MethodGet, h.base+"/login", nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /login with %v: status %d, want 200", header, resp.StatusCode)
		}
	}
}
