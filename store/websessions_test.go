package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"
)

const webLife = 30 * 24 * time.Hour

func webSession(nonce string, at time.Time) WebSession {
	return WebSession{Nonce: nonce, Role: "admin", KeyID: "k1", Created: at, Expires: at.Add(webLife)}
}

// Two instances on one database see each other's sessions: made on one,
// read, ended and re-checked on the other.
func TestWebSessionsShared(t *testing.T) { drivers(t, testWebSessionsShared) }

func testWebSessionsShared(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	g := WebSession{Nonce: "n-guest", Role: "guest", Room: "main", Link: "l1", KeyID: "k1", Created: t0, Expires: t0.Add(webLife)}
	for _, w := range []WebSession{webSession("n-admin", t0), g} {
		if ended, err := a.CreateWebSession(ctx, w, 10, t0); err != nil || len(ended) != 0 {
			t.Fatalf("create %s: ended %v, %v", w.Nonce, ended, err)
		}
	}
	got, ok, err := b.WebSession(ctx, "n-guest")
	if err != nil || !ok || got != g || !got.Live(t0) || got.Live(t0.Add(webLife)) {
		t.Fatalf("the guest's session on the other instance = %+v, %v, %v; want %+v", got, ok, err, g)
	}
	if _, ok, err := b.WebSession(ctx, "n-none"); err != nil || ok {
		t.Fatalf("an unknown nonce: ok=%v, %v", ok, err)
	}
	if _, err := a.CreateWebSession(ctx, webSession("n-admin", t0), 10, t0); err == nil {
		t.Error("a second session with a taken nonce was recorded")
	}

	// Ended on B: A reads it ended, and ending it again changes nothing.
	at := t0.Add(time.Hour)
	if ok, err := b.EndWebSession(ctx, "n-admin", at); err != nil || !ok {
		t.Fatalf("end = %v, %v", ok, err)
	}
	if ok, err := a.EndWebSession(ctx, "n-admin", at.Add(time.Minute)); err != nil || ok {
		t.Fatalf("ending it again = %v, %v", ok, err)
	}
	got, ok, err = a.WebSession(ctx, "n-admin")
	if err != nil || !ok || !got.Ended.Equal(at) || got.Live(at) {
		t.Fatalf("the ended session on the other instance = %+v, %v, %v", got, ok, err)
	}

	// The batch read returns what exists, by nonce, over several queries.
	nonces := []string{"n-admin", "n-guest", "n-none"}
	for i := range 1200 {
		nonces = append(nonces, fmt.Sprintf("missing-%d", i))
	}
	m, err := b.WebSessions(ctx, nonces)
	if err != nil || len(m) != 2 || !m["n-admin"].Ended.Equal(at) || m["n-guest"] != g {
		t.Fatalf("batch = %+v, %v", m, err)
	}

	keys, err := a.LiveWebSessionKeys(ctx, at)
	if err != nil || len(keys) != 1 || keys["k1"] != 1 {
		t.Fatalf("live keys = %v, %v; want the guest's k1", keys, err)
	}
}

// Past the bound the oldest live sessions end, whichever instance made
// them; expired ones are dropped and ended ones kept up to a bound.
func TestWebSessionsBounded(t *testing.T) { drivers(t, testWebSessionsBounded) }

func testWebSessionsBounded(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	const max = 3
	// s0 expires early; s1…s3 are made in order (the same millisecond:
	// insertion order decides which is oldest).
	short := webSession("s0", t0)
	short.Expires = t0.Add(time.Minute)
	if _, err := a.CreateWebSession(ctx, short, max, t0); err != nil {
		t.Fatal(err)
	}
	for i, st := range []*Store{b, a, b} {
		if ended, err := st.CreateWebSession(ctx, webSession(fmt.Sprintf("s%d", i+1), t0), max, t0); err != nil {
			t.Fatal(err)
		} else if i < 2 && len(ended) != 0 {
			t.Fatalf("s%d ended %v under the bound", i+1, ended)
		} else if i == 2 && !slices.Equal(ended, []string{"s0"}) {
			t.Fatalf("s3 ended %v, want the oldest, s0", ended)
		}
	}
	// s0 has expired by now: dropped, so it is not what the bound ends.
	later := t0.Add(2 * time.Minute)
	ended, err := a.CreateWebSession(ctx, webSession("s4", later), max, later)
	if err != nil || !slices.Equal(ended, []string{"s1"}) {
		t.Fatalf("s4 ended %v, %v; want s1", ended, err)
	}
	if _, ok, _ := b.WebSession(ctx, "s0"); ok {
		t.Error("the expired session is still kept")
	}
	live := func() []string {
		t.Helper()
		m, err := a.WebSessions(ctx, []string{"s0", "s1", "s2", "s3", "s4"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for n, w := range m {
			if w.Live(later) {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out
	}
	if got := live(); !slices.Equal(got, []string{"s2", "s3", "s4"}) {
		t.Fatalf("live %v", got)
	}

	// Ended sessions are kept up to keptEndedFactor×max, oldest dropped.
	for i := range keptEndedFactor*max + 5 {
		at := later.Add(time.Duration(i+1) * time.Second)
		if _, err := a.CreateWebSession(ctx, webSession(fmt.Sprintf("e%d", i), at), max, at); err != nil {
			t.Fatal(err)
		}
	}
	var kept, liveN int
	if err := a.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM web_sessions WHERE ended <> 0`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM web_sessions WHERE ended = 0`).Scan(&liveN); err != nil {
		t.Fatal(err)
	}
	if kept != keptEndedFactor*max || liveN != max {
		t.Fatalf("kept %d ended and %d live, want %d and %d", kept, liveN, keptEndedFactor*max, max)
	}
	if _, ok, _ := a.WebSession(ctx, "s1"); ok {
		t.Error("the first ended session is kept past the bound")
	}
}

// Room links: made on one instance, found by token on the other; revoked
// on either, with the sessions opened through them ended in the same
// step.
func TestRoomLinks(t *testing.T) { drivers(t, testRoomLinks) }

func testRoomLinks(t *testing.T, c Config) {
	ctx := context.Background()
	a, b := open(t, c), open(t, c)
	l1 := RoomLink{ID: "l1", Room: "main", Token: "tok-one", Created: t0}
	l2 := RoomLink{ID: "l2", Room: "team", Token: "tok-two", Created: t0} // same instant: insertion order
	for _, l := range []RoomLink{l1, l2} {
		if err := a.CreateRoomLink(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.CreateRoomLink(ctx, RoomLink{ID: "l3", Room: "main", Token: "tok-one", Created: t0}); err == nil {
		t.Error("a second link with a taken token was recorded")
	}
	if err := a.CreateRoomLink(ctx, RoomLink{ID: "l4", Room: "main"}); err == nil {
		t.Error("a link without a token was recorded")
	}
	links, err := b.RoomLinks(ctx)
	if err != nil || !slices.Equal(links, []RoomLink{l1, l2}) {
		t.Fatalf("links on the other instance = %+v, %v", links, err)
	}
	for _, tc := range []struct {
		token string
		want  string
	}{{"tok-one", "l1"}, {"tok-two", "l2"}, {"tok-", ""}, {"", ""}, {"TOK-ONE", ""}} {
		l, ok, err := b.RoomLinkByToken(ctx, tc.token)
		if err != nil || ok != (tc.want != "") || l.ID != tc.want {
			t.Errorf("by token %q = %+v, %v, %v; want %q", tc.token, l, ok, err, tc.want)
		}
	}

	// Two guests through l1, one through l2, and the admin.
	for _, w := range []WebSession{
		{Nonce: "g1", Role: "guest", Room: "main", Link: "l1", Created: t0, Expires: t0.Add(webLife)},
		{Nonce: "g2", Role: "guest", Room: "main", Link: "l1", Created: t0, Expires: t0.Add(webLife)},
		{Nonce: "g3", Role: "guest", Room: "team", Link: "l2", Created: t0, Expires: t0.Add(webLife)},
		webSession("adm", t0),
	} {
		if _, err := a.CreateWebSession(ctx, w, 100, t0); err != nil {
			t.Fatal(err)
		}
	}
	at := t0.Add(time.Hour)
	found, ended, err := b.RevokeRoomLink(ctx, "l1", at)
	sort.Strings(ended)
	if err != nil || !found || !slices.Equal(ended, []string{"g1", "g2"}) {
		t.Fatalf("revoke = %v, %v, %v; want g1 and g2 ended", found, ended, err)
	}
	if found, ended, err := a.RevokeRoomLink(ctx, "l1", at); err != nil || found || len(ended) != 0 {
		t.Fatalf("revoking again = %v, %v, %v", found, ended, err)
	}
	if found, _, err := a.RevokeRoomLink(ctx, "nope", at); err != nil || found {
		t.Fatalf("revoking an unknown link = %v, %v", found, err)
	}
	m, err := a.WebSessions(ctx, []string{"g1", "g2", "g3", "adm"})
	if err != nil {
		t.Fatal(err)
	}
	for n, live := range map[string]bool{"g1": false, "g2": false, "g3": true, "adm": true} {
		if m[n].Live(at) != live {
			t.Errorf("%s live = %v after l1's revocation", n, !live)
		}
	}
	if _, ok, _ := a.RoomLinkByToken(ctx, "tok-one"); ok {
		t.Error("a revoked link is found by its token")
	}
	if links, _ := a.RoomLinks(ctx); !slices.Equal(links, []RoomLink{l2}) {
		t.Errorf("links after the revocation = %+v", links)
	}
	if l, ok, err := a.RoomLink(ctx, "l1"); err != nil || !ok || !l.Revoked.Equal(at) {
		t.Errorf("the revoked link by id = %+v, %v, %v", l, ok, err)
	}
}

// Importing an old file's links and sessions adds each once and never
// revives what was revoked or ended since.
func TestWebImportIdempotent(t *testing.T) { drivers(t, testWebImportIdempotent) }

func testWebImportIdempotent(t *testing.T, c Config) {
	ctx := context.Background()
	a := open(t, c)
	l := RoomLink{ID: "l1", Room: "main", Token: "tok", Created: t0}
	g := WebSession{Nonce: "g1", Role: "guest", Room: "main", Link: "l1", Created: t0, Expires: t0.Add(webLife)}
	for range 2 {
		if err := a.ImportRoomLink(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := a.ImportWebSession(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if links, _ := a.RoomLinks(ctx); len(links) != 1 {
		t.Fatalf("links after two imports: %+v", links)
	}
	if _, _, err := a.RevokeRoomLink(ctx, "l1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The same file imported by another instance later.
	b := open(t, c)
	if err := b.ImportRoomLink(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := b.ImportWebSession(ctx, g); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.RoomLinkByToken(ctx, "tok"); ok {
		t.Error("a second import revived the revoked link")
	}
	if w, _, _ := b.WebSession(ctx, "g1"); w.Live(t0.Add(2 * time.Hour)) {
		t.Error("a second import revived the ended session")
	}
}
