package web

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
)

// hangGuard bounds every wait of these tests; what they wait for happens
// in milliseconds, and no heartbeat or timeout of the channel is shorter.
const hangGuard = 30 * time.Second

func withHeartbeat(d time.Duration) harnessOpt {
	return func(_ *Config, o *Options) { o.heartbeat = d }
}

func withLimits(f func(*Config)) harnessOpt {
	return func(c *Config, _ *Options) { f(c) }
}

func withBudget(b *diskbudget.Budget) harnessOpt {
	return func(_ *Config, o *Options) { o.Budget = b }
}

// guest makes a room link into room and joins through it.
func (h *harness) guest(admin *http.Client, room string) (*http.Client, Link) {
	h.t.Helper()
	l, err := h.w.auth.createLink(context.Background(), room)
	if err != nil {
		h.t.Fatal(err)
	}
	c := h.client()
	_, body := h.get(c, "/join")
	resp, _ := h.postForm(c, "/join", url.Values{"csrf": {hiddenCSRF.FindStringSubmatch(body)[1]}, "link": {l.Token}})
	if resp.StatusCode != http.StatusSeeOther {
		h.t.Fatalf("join: %d", resp.StatusCode)
	}
	return c, l
}

// ended reads the stream to its end in the background; the channel is
// closed when the server has ended it.
func (s *stream) ended() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, s.r)
	}()
	return done
}

func waitEnded(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("%s: the event stream is still open after %v", what, hangGuard)
	}
}

// A session's end reaches its open event streams at once: no heartbeat
// (an hour here) is waited for.
func TestSessionEndClosesStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(h *harness, admin, guest *http.Client, l Link)
	}{
		{"revoked link", func(h *harness, admin, _ *http.Client, l Link) {
			_, page := h.get(admin, "/admin")
			csrf := hiddenCSRF.FindStringSubmatch(page)[1]
			if resp, body := h.postForm(admin, "/admin/links/"+l.ID+"/revoke", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("revoke: %d %s", resp.StatusCode, body)
			}
		}},
		{"logout", func(h *harness, _, guest *http.Client, _ Link) {
			csrf := h.roomCSRF(guest, "main")
			if resp, body := h.postForm(guest, "/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("logout: %d %s", resp.StatusCode, body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withHeartbeat(time.Hour))
			admin := h.admin()
			guest, l := h.guest(admin, "main")
			st := h.events(guest, "main", 0)
			adminSt := h.events(admin, "main", 0)
			ended := st.ended()
			tc.end(h, admin, guest, l)
			waitEnded(t, tc.name, ended)
			// The admin's stream is another session's: it stays and hears on.
			if _, err := h.w.Send(context.Background(), channels.OutMessage{Chat: "web:main", Text: "still here"}); err != nil {
				t.Fatal(err)
			}
			if m := adminSt.message(); m.Text != "still here" {
				t.Fatalf("admin stream got %+v", m)
			}
		})
	}
}

// After logout the old cookie is refused, though its signature is good:
// the server forgot the session.
func TestLogoutEndsTheSessionOnTheServer(t *testing.T) {
	h := newHarness(t)
	admin := h.admin()
	csrf := h.roomCSRF(admin, "main")
	u, _ := url.Parse(h.base)
	old := admin.Jar.Cookies(u)
	if resp, body := h.postForm(admin, "/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d %s", resp.StatusCode, body)
	}
	replay := h.client()
	replay.Jar.SetCookies(u, old)
	if resp, _ := h.get(replay, "/r/main"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("the old cookie after logout: %d to %q, want a redirect to the login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := h.post(replay, "main", csrf, "Ann", "after logout"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("post with the old cookie: %d %s", resp.StatusCode, body)
	}
	// And after a restart too: the table is on disk.
	h.stop()
	h2 := startHarness(t, h.dir)
	replay2 := h2.client()
	u2, _ := url.Parse(h2.base)
	replay2.Jar.SetCookies(u2, old)
	if resp, _ := h2.get(replay2, "/r/main"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the old cookie after logout and a restart: %d", resp.StatusCode)
	}
	if h.sink.Total() != 0 {
		t.Fatalf("%d messages delivered after logout", h.sink.Total())
	}
}

// A live session survives a restart: the table is saved.
func TestSessionSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	admin := h.admin()
	h.stop()
	chantest.WaitReturns(t, h.w)
	h2 := startHarness(t, h.dir)
	u, _ := url.Parse(h.base)
	c := h2.client()
	u2, _ := url.Parse(h2.base)
	c.Jar.SetCookies(u2, admin.Jar.Cookies(u))
	if resp, _ := h2.get(c, "/r/main"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a session after a restart: %d", resp.StatusCode)
	}
}

func TestPostRate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		session     int
		room        int
		twoSessions bool
		wantMsg     string
	}{
		{"one session", 20, 1 << 20, false, "you are posting too fast (at most 20 messages a minute)"},
		{"the room, over two sessions", 1 << 20, 20, true, "this room gets too many messages (at most 20 a minute)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The clock stands still: no post comes back during the test.
			fake := clock.NewFake(time.Now())
			h := newHarness(t, withLimits(func(c *Config) { c.PostsPerMinute, c.RoomPostsPerMinute = tc.session, tc.room }),
				func(_ *Config, o *Options) { o.now = fake.Now })
			a, b := h.admin(), h.admin()
			csrf := map[*http.Client]string{a: h.roomCSRF(a, "main"), b: h.roomCSRF(b, "main")}
			burst := burstOf(20)
			var last *http.Response
			var body string
			for i := range burst + 1 {
				c := a
				if tc.twoSessions && i%2 == 1 {
					c = b
				}
				last, body = h.post(c, "main", csrf[c], "Ann", "message "+strconv.Itoa(i))
				if i < burst && last.StatusCode != http.StatusOK {
					t.Fatalf("post %d of the burst of %d: %d %s", i, burst, last.StatusCode, body)
				}
			}
			if last.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("post past the burst: %d %s", last.StatusCode, body)
			}
			if ra, err := strconv.Atoi(last.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
				t.Errorf("Retry-After %q, want 1..60 seconds", last.Header.Get("Retry-After"))
			}
			if !strings.Contains(body, tc.wantMsg) {
				t.Errorf("429 says %s; want it to say %q", body, tc.wantMsg)
			}
			if n := h.sink.Total(); n != burst {
				t.Errorf("%d messages delivered, want the %d of the burst", n, burst)
			}
			// Three seconds later (20 a minute) one more may go.
			fake.Advance(3 * time.Second)
			if resp, body := h.post(a, "main", csrf[a], "Ann", "later"); resp.StatusCode != http.StatusOK {
				t.Errorf("post after the refill: %d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestStreamsPerSession(t *testing.T) {
	h := newHarness(t, withLimits(func(c *Config) { c.MaxStreamsPerSession = 2 }))
	admin := h.admin()
	first := h.events(admin, "main", 0)
	h.events(admin, "team", 0)
	resp, err := admin.Get(h.base + "/r/main/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream: %d %s", resp.StatusCode, body)
	}
	// Another session has its own streams.
	h.events(h.admin(), "main", 0)
	// A closed stream frees its slot.
	ended := first.ended()
	first.stop()
	waitEnded(t, "closed by the client", ended)
	testwait.Until(t, "the slot freed", func() bool {
		resp, err := admin.Get(h.base + "/r/main/events")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// Every answer without a session closes its connection.
func TestAnswersWithoutSessionCloseTheConnection(t *testing.T) {
	h := newHarness(t)
	admin := h.admin()
	for _, path := range []string{"/", "/login", "/r/main", "/r/main/events", "/static/app.js", "/admin", "/nowhere"} {
		resp, err := http.Get(h.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !resp.Close {
			t.Errorf("GET %s without a session: %d kept the connection open", path, resp.StatusCode)
		}
	}
	resp, err := admin.Get(h.base + "/r/main")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Close {
		t.Error("a request with a session closed its connection")
	}
}

// Past max_conns the oldest connection without a session goes first: a
// flood of idle strangers cannot lock out a logged-in browser.
func TestConnectionCap(t *testing.T) {
	const max = 8
	h := newHarness(t, withLimits(func(c *Config) { c.MaxConns = max }))
	admin := h.admin()
	st := h.events(admin, "main", 0) // a busy authorised connection
	var flood []net.Conn
	for range 3 * max {
		c, err := net.Dial("tcp", h.w.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		flood = append(flood, c)
	}
	// The oldest strangers were closed to make room.
	c := flood[0]
	c.SetReadDeadline(time.Now().Add(hangGuard))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeoutErr(err) {
		t.Fatalf("the oldest idle stranger is still open: %v", err)
	}
	// The logged-in browser's stream is still live, and it can post.
	if resp, body := h.post(admin, "main", h.roomCSRF(admin, "main"), "Ann", "through the flood"); resp.StatusCode != http.StatusOK {
		t.Fatalf("post during the flood: %d %s", resp.StatusCode, body)
	}
	if m := st.message(); m.Text != "through the flood" {
		t.Fatalf("stream got %+v", m)
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A flood of posts cannot grow a room past what is kept: its rows are
// trimmed as it grows (at most trimEvery-1 past keepMessages), its memory
// is bounded, and a restart shows the newest messages.
func TestRoomBounded(t *testing.T) {
	h := newHarness(t)
	admin := h.admin()
	csrf := h.roomCSRF(admin, "team")
	text := strings.Repeat("x", 1000)
	posts := 2*keepMessages + 50
	for i := range posts {
		if resp, body := h.post(admin, "team", csrf, "Ann", text+strconv.Itoa(i)); resp.StatusCode != http.StatusOK {
			t.Fatalf("post %d: %d %s", i, resp.StatusCode, body)
		}
	}
	rows := func(st *store.Store) int {
		t.Helper()
		var n int
		if err := st.DB.QueryRow(`SELECT COUNT(*) FROM web_room_messages WHERE room = 'team'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(h.st); n < keepMessages || n > keepMessages+trimEvery-1 {
		t.Errorf("the room holds %d messages after %d posts, want %d to %d", n, posts, keepMessages, keepMessages+trimEvery-1)
	}
	if n := len(h.w.rooms["team"].recent(10 * keepMessages)); n > 2*keepMessages {
		t.Errorf("the room keeps %d messages in memory", n)
	}
	// What a restart shows is the newest messages, and only what is kept.
	h.stop()
	h2 := startHarness(t, h.dir)
	msgs := h2.w.rooms["team"].recent(10 * keepMessages)
	if len(msgs) != keepMessages || msgs[len(msgs)-1].Text != text+strconv.Itoa(posts-1) {
		t.Fatalf("after a restart the room shows %d messages, the newest %.20q", len(msgs), msgs[len(msgs)-1].Text)
	}
	if n := rows(h2.st); n != keepMessages {
		t.Errorf("after a restart the room holds %d messages, want %d", n, keepMessages)
	}
}

// Past its share a room's uploads are refused with a sentence the page
// shows; nothing of the refused message stays, and the other room's files
// are untouched.
func TestUploadRefusedPastTheShare(t *testing.T) {
	dir := t.TempDir()
	b := diskbudget.New(1<<30, DiskAreas(dir, testGroups(t).All()), nil)
	b.SetShares(1, 64<<10, 0) // 64 KB for each group
	h := startHarness(t, dir, withBudget(b))
	admin := h.admin()
	own := bytes.Repeat([]byte("o"), 20<<10)
	if resp, body := h.post(admin, "team", h.roomCSRF(admin, "team"), "Owner", "", upload{"own.bin", "application/octet-stream", own}); resp.StatusCode != http.StatusOK {
		t.Fatalf("owner upload: %d %s", resp.StatusCode, body)
	}
	ownRef := h.sink.Next(t).Refs[0]

	guest, _ := h.guest(admin, "main")
	gcsrf := h.roomCSRF(guest, "main")
	var refused string
	for i := range 10 {
		resp, body := h.post(guest, "main", gcsrf, "Gina", "", upload{"g.bin", "application/octet-stream", bytes.Repeat([]byte{'g'}, 20<<10)})
		if resp.StatusCode == http.StatusInsufficientStorage {
			refused = body
			break
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("guest upload %d: %d %s", i, resp.StatusCode, body)
		}
		h.sink.Next(t)
	}
	if want := "this room has used its share of botd's disk (64KB); ask the admin to free space"; !strings.Contains(refused, want) {
		t.Fatalf("refusal %q, want it to say %q", refused, want)
	}
	gu, err := b.GroupUse(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if gu.Sole > gu.Share {
		t.Errorf("the guest's room holds %d bytes, over its share of %d", gu.Sole, gu.Share)
	}
	// No half-written file of the refused upload is left behind.
	entries, _ := os.ReadDir(filepath.Join(dir, "web", "files", "main"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".part") {
			t.Errorf("a partial upload stayed: %s", e.Name())
		}
	}
	f, _, err := h.w.Download(context.Background(), &ownRef)
	if err != nil {
		t.Fatalf("the owner's upload: %v", err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, own) {
		t.Fatal("the owner's upload changed")
	}
}
