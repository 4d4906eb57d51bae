package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func withStore(st *store.Store) harnessOpt {
	return func(_ *Config, o *Options) { o.Store = st }
}

// withSessionCheck sets how long a session read is trusted; negative:
// every request reads the database.
func withSessionCheck(d time.Duration) harnessOpt {
	return func(_ *Config, o *Options) { o.sessionCheck = d }
}

func withClock(now func() time.Time) harnessOpt {
	return func(_ *Config, o *Options) { o.now = now }
}

// pair starts two instances on the database c names, each with its own
// connection and data_dir (two machines) and the same admin token, as
// the operator copies it. Both read the database at every request unless
// opts say otherwise for b.
func pair(t *testing.T, c store.Config, bOpts ...harnessOpt) (a, b *harness) {
	t.Helper()
	// Both are given the same channels.web.admin_token, as a deployment
	// of two instances does; neither makes a token file.
	tok := withAdminToken(randomToken())
	a = newHarness(t, withStore(storetest.Open(t, c)), withSessionCheck(-1), tok)
	opts := append([]harnessOpt{withStore(storetest.Open(t, c)), withSessionCheck(-1), tok}, bOpts...)
	b = newHarness(t, opts...)
	for _, h := range []*harness{a, b} {
		if _, err := os.Stat(filepath.Join(h.dir, "web", adminTokenFile)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("an instance given channels.web.admin_token made a token file (%v)", err)
		}
	}
	return a, b
}

func withAdminToken(tok string) harnessOpt {
	return func(c *Config, _ *Options) { c.AdminToken = tok }
}

// A browser's cookies for 127.0.0.1 go to both instances (ports do not
// scope cookies), as they would through one address in front of both.

// A session made on one instance is accepted by the other; a link made
// on one works on the other; a logout or a revocation on one is refused
// by the other, and the other's open event streams end.
func TestSessionsSharedByTwoInstances(t *testing.T) {
	storetest.EachDialect(t, func(t *testing.T, d sqldialect.Dialect) {
		a, b := pair(t, storetest.Config(t, d), withHeartbeat(time.Hour))
		admin := a.admin()
		if resp, body := b.get(admin, "/r/main"); resp.StatusCode != http.StatusOK {
			t.Fatalf("A's admin on B: %d\n%s", resp.StatusCode, body)
		}
		// The CSRF token is derived from the key and the cookie: one page's
		// token works on either instance.
		csrf := a.roomCSRF(admin, "main")
		if resp, body := b.post(admin, "main", csrf, "Ann", "posted on B"); resp.StatusCode != http.StatusOK {
			t.Fatalf("post on B with A's session: %d %s", resp.StatusCode, body)
		}
		if in := b.sink.Next(t); in.Text != "posted on B" {
			t.Fatalf("B delivered %+v", in)
		}

		// A link made on A, joined on B.
		_, page := a.get(admin, "/admin")
		acsrf := hiddenCSRF.FindStringSubmatch(page)[1]
		if resp, body := a.postForm(admin, "/admin/links", url.Values{"csrf": {acsrf}, "room": {"main"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("create link on A: %d %s", resp.StatusCode, body)
		}
		links, err := b.w.auth.Links(context.Background())
		if err != nil || len(links) != 1 {
			t.Fatalf("B's links = %+v, %v", links, err)
		}
		guest := b.client()
		_, body := b.get(guest, "/join")
		if resp, _ := b.postForm(guest, "/join", url.Values{"csrf": {hiddenCSRF.FindStringSubmatch(body)[1]}, "link": {links[0].Token}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("join on B through A's link: %d", resp.StatusCode)
		}
		if resp, _ := a.get(guest, "/r/main"); resp.StatusCode != http.StatusOK {
			t.Fatalf("B's guest on A: %d", resp.StatusCode)
		}

		// Revoked on A: the guest's stream on B ends, and B refuses it.
		guestStream := b.events(guest, "main", 0)
		adminStream := b.events(admin, "main", 0)
		ended := guestStream.ended()
		if resp, body := a.postForm(admin, "/admin/links/"+links[0].ID+"/revoke", url.Values{"csrf": {acsrf}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke on A: %d %s", resp.StatusCode, body)
		}
		waitEnded(t, "the guest's stream on B after A revoked the link", ended)
		if resp, _ := b.get(guest, "/r/main"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the revoked guest on B: %d, want a redirect to the login", resp.StatusCode)
		}
		if links, _ := b.w.auth.Links(context.Background()); len(links) != 0 {
			t.Fatalf("B still lists %+v", links)
		}

		// Logged out on B: A refuses the old cookie, B's stream of it ends.
		u, _ := url.Parse(a.base)
		old := admin.Jar.Cookies(u)
		ended = adminStream.ended()
		bcsrf := b.roomCSRF(admin, "main")
		if resp, body := b.postForm(admin, "/logout", url.Values{"csrf": {bcsrf}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout on B: %d %s", resp.StatusCode, body)
		}
		waitEnded(t, "the admin's stream on B after logout on B", ended)
		replay := a.client()
		replay.Jar.SetCookies(u, old)
		if resp, _ := a.get(replay, "/r/main"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the logged-out cookie on A: %d", resp.StatusCode)
		}
		if resp, body := a.post(replay, "main", csrf, "Ann", "after logout"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("post on A after logout on B: %d %s", resp.StatusCode, body)
		}
		if a.sink.Total() != 0 {
			t.Fatalf("A delivered %d messages", a.sink.Total())
		}
	})
}

// An open stream on one instance ends when its session is ended on the
// other, though no event comes and its heartbeat is an hour away: the
// instance re-reads the sessions it streams to.
func TestStreamEndsOnLogoutElsewhere(t *testing.T) {
	a, b := pair(t, storetest.Config(t, sqldialect.SQLite), withHeartbeat(time.Hour), withSessionCheck(20*time.Millisecond))
	admin := a.admin()
	ended := b.events(admin, "main", 0).ended()
	if resp, body := a.postForm(admin, "/logout", url.Values{"csrf": {a.roomCSRF(admin, "main")}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout on A: %d %s", resp.StatusCode, body)
	}
	waitEnded(t, "B's stream after logout on A", ended)
}

// What an instance read of a session it trusts for sessionCheck: a logout
// on the other instance is refused here sessionCheck after this one last
// read the session, not before (the price of not reading the database at
// every request), and at once when this instance ended it.
func TestSessionCheckWindow(t *testing.T) {
	fake := clock.NewFake(time.Now())
	a, b := pair(t, storetest.Config(t, sqldialect.SQLite), withClock(fake.Now), withSessionCheck(sessionCheck))
	admin := a.admin()
	u, _ := url.Parse(a.base)
	old := admin.Jar.Cookies(u)
	if resp, _ := b.get(admin, "/r/main"); resp.StatusCode != http.StatusOK {
		t.Fatalf("A's admin on B: %d", resp.StatusCode)
	}
	if resp, _ := a.postForm(admin, "/logout", url.Values{"csrf": {a.roomCSRF(admin, "main")}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout on A: %d", resp.StatusCode)
	}
	replay := b.client()
	replay.Jar.SetCookies(u, old)
	fake.Advance(sessionCheck - time.Millisecond)
	if resp, _ := b.get(replay, "/r/main"); resp.StatusCode != http.StatusOK {
		t.Fatalf("B within %v of its read: %d, want the session still trusted", sessionCheck, resp.StatusCode)
	}
	fake.Advance(time.Millisecond)
	if resp, _ := b.get(replay, "/r/main"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("B %v after its read: %d, want the logout seen", sessionCheck, resp.StatusCode)
	}
}

// oldCookie is the cookie an older botd set for the session nonce of
// sessions.json: the same signing, so it must keep working.
func oldCookie(tok, nonce string, s oldSession) *http.Cookie {
	raw, _ := json.Marshal(session{Role: s.Role, Room: s.Room, Link: s.Link, Expires: s.Expires, Nonce: nonce})
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return &http.Cookie{Name: sessionCookie, Value: payload + "." + (&auth{key: sessionKey(tok)}).sign(payload)}
}

// An upgrade logs nobody out: the links and sessions files of an older
// botd are imported at the first start and renamed; what they held that
// no longer worked (expired, its link revoked) stays out.
func TestImportOldFiles(t *testing.T) {
	dir := t.TempDir()
	wdir := filepath.Join(dir, "web")
	if err := os.MkdirAll(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	tok := randomToken()
	now := time.Now()
	link := Link{ID: "0123456789ab", Room: "main", Token: randomToken(), Created: now.Add(-2 * time.Hour).UTC().Truncate(time.Millisecond)}
	old := map[string]oldSession{
		"admin-nonce-0001": {Role: roleAdmin, Expires: now.Add(24 * time.Hour).Unix(), Issued: now.Add(-time.Hour).UnixNano()},
		"guest-nonce-0001": {Role: roleGuest, Room: "main", Link: link.ID, Expires: now.Add(24 * time.Hour).Unix(), Issued: now.Add(-time.Hour).UnixNano()},
		"orphan-nonce-001": {Role: roleGuest, Room: "main", Link: "revokedlink1", Expires: now.Add(24 * time.Hour).Unix(), Issued: now.UnixNano()},
		"expired-nonce-01": {Role: roleAdmin, Expires: now.Add(-time.Minute).Unix(), Issued: now.Add(-31 * 24 * time.Hour).UnixNano()},
	}
	for name, v := range map[string]any{adminTokenFile: nil, linksFile: []Link{link}, sessionsFile: old} {
		raw := []byte(tok + "\n")
		if v != nil {
			raw, _ = json.Marshal(v)
		}
		if err := os.WriteFile(filepath.Join(wdir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	check := func(h *harness) {
		t.Helper()
		u, _ := url.Parse(h.base)
		for nonce, want := range map[string]int{
			"admin-nonce-0001": http.StatusOK, "guest-nonce-0001": http.StatusOK,
			"orphan-nonce-001": http.StatusSeeOther, "expired-nonce-01": http.StatusSeeOther,
		} {
			c := h.client()
			c.Jar.SetCookies(u, []*http.Cookie{oldCookie(tok, nonce, old[nonce])})
			if resp, _ := h.get(c, "/r/main"); resp.StatusCode != want {
				t.Errorf("%s's old cookie: %d, want %d", nonce, resp.StatusCode, want)
			}
		}
		links, err := h.w.auth.Links(context.Background())
		if err != nil || len(links) != 1 || links[0] != link {
			t.Errorf("links = %+v, %v; want %+v", links, err, link)
		}
		for _, f := range []string{linksFile, sessionsFile} {
			if _, err := os.Stat(filepath.Join(wdir, f)); !os.IsNotExist(err) {
				t.Errorf("%s is still there (%v)", f, err)
			}
			if _, err := os.Stat(filepath.Join(wdir, f+importedSuffix)); err != nil {
				t.Errorf("%s: %v", f+importedSuffix, err)
			}
		}
	}
	h := startHarness(t, dir)
	check(h)
	// A restart reads the database; the renamed files are not imported
	// again.
	h.stop()
	chantest.WaitReturns(t, h.w)
	check(startHarness(t, dir))
}

// A sessions file that cannot be parsed only logs people out: it is set
// aside and the channel starts. A links file that cannot be parsed stops
// the start: it holds links people use.
func TestImportUnreadableFiles(t *testing.T) {
	for _, tc := range []struct {
		file    string
		starts  bool
		renamed bool
	}{
		{sessionsFile, true, true},
		{linksFile, false, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			wdir := filepath.Join(dir, "web")
			if err := os.MkdirAll(wdir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wdir, tc.file), []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			w, err := New(Config{Listen: "127.0.0.1:0"}, channels.Env{Registry: mediaregistry.New(nil, 0), Sink: chantest.NewSink(), Log: quiet},
				Options{DataDir: dir, Groups: testGroups(t), Store: openStore(t, filepath.Join(dir, "botd.db"))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			err = w.Start(ctx)
			cancel()
			if err == nil {
				w.Wait()
			}
			if (err == nil) != tc.starts {
				t.Fatalf("Start = %v, want a start: %v", err, tc.starts)
			}
			if _, err := os.Stat(filepath.Join(wdir, tc.file+importedSuffix)); (err == nil) != tc.renamed {
				t.Fatalf("renamed: %v, want %v", err == nil, tc.renamed)
			}
		})
	}
}

// A sessions file padded past what the old table could hold imports only
// its newest maxSessions live sessions: the start does no more work than
// for a full table.
func TestImportPaddedSessionsFile(t *testing.T) {
	dir := t.TempDir()
	wdir := filepath.Join(dir, "web")
	if err := os.MkdirAll(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := map[string]oldSession{}
	for i := range maxSessions + 500 {
		old[fmt.Sprintf("padded-nonce-%05d", i)] = oldSession{Role: roleAdmin, Expires: now.Add(time.Hour).Unix(),
			Issued: now.Add(time.Duration(i-maxSessions-500) * time.Second).UnixNano()}
	}
	raw, _ := json.Marshal(old)
	if err := os.WriteFile(filepath.Join(wdir, sessionsFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, dir)
	keys, err := h.st.LiveWebSessionKeys(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if n := keys[h.w.auth.keyID]; n != maxSessions {
		t.Fatalf("%d sessions imported, want %d", n, maxSessions)
	}
	for nonce, want := range map[string]bool{"padded-nonce-00499": false, "padded-nonce-00500": true, fmt.Sprintf("padded-nonce-%05d", maxSessions+499): true} {
		if _, ok, err := h.st.WebSession(context.Background(), nonce); err != nil || ok != want {
			t.Errorf("%s imported %v (%v), want %v", nonce, ok, err, want)
		}
	}
}
