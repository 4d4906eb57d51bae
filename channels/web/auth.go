package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/store"
)

const (
	// adminTokenFile holds the admin token, created on the first start.
	// Deleting it (and restarting) makes a new token and ends every
	// session and room link session signed with the old one. Instances
	// sharing a database need the same file to accept each other's
	// sessions.
	adminTokenFile = "admin-token"
	// minTokenLen is the shortest admin token accepted.
	minTokenLen = 32
	// maxSessions bounds the live sessions in the database; past it the
	// oldest ends.
	maxSessions = 1000
	// maxKnown bounds the sessions an instance remembers (the cache of
	// database reads, with each one's open streams and post bucket).
	maxKnown = 2 * maxSessions

	// sessionCheck is how long an instance trusts what it read of a
	// session before reading it again, and how often it re-reads the
	// sessions whose event streams it holds open: a logout or a revoked
	// link on another instance sharing the database is refused here
	// within this time. Ended on this instance, a session is refused at
	// once.
	sessionCheck = 5 * time.Second

	sessionCookie = "botd_session"
	// preCSRFCookie protects the login and join forms, posted before
	// there is a session (double submit: cookie and form field agree).
	preCSRFCookie = "botd_csrf"
	csrfHeader    = "X-CSRF-Token"
	csrfField     = "csrf"

	sessionLifetime = 30 * 24 * time.Hour
)

// Roles a session can have: the admin reaches every room and the
// dashboard; a guest came through a room link and reaches that room.
const (
	roleAdmin = "admin"
	roleGuest = "guest"
)

// auth is the channel's access control: the admin token, signed session
// cookies backed by the live sessions in botd's database, and room links
// (in the database too). Instances sharing the database, with the same
// admin token, accept each other's sessions.
type auth struct {
	dir   string
	token string
	key   []byte // signs sessions; derived from the token
	keyID string // names key in the database without revealing it
	now   func() time.Time
	st    *store.Store
	log   *slog.Logger
	check time.Duration // sessionCheck; 0 reads the database every time (tests)

	mu    sync.Mutex
	known map[string]*liveSession // by session nonce
}

// liveSession is what this instance knows of a session: its row as last
// read, and what it holds open here.
type liveSession struct {
	row   store.WebSession
	read  time.Time // when row was read; an ended session is never re-read
	ended bool
	// done is closed when the session ends: its event streams here end.
	done    chan struct{}
	streams int
	posts   bucket
}

// Link lets whoever has its URL into one room, until it is revoked.
type Link struct {
	ID      string    `json:"id"`
	Room    string    `json:"room"`
	Token   string    `json:"token"`
	Created time.Time `json:"created"`
}

// session is what a signed cookie says.
type session struct {
	Role    string `json:"r"`
	Room    string `json:"room,omitempty"`
	Link    string `json:"link,omitempty"`
	Expires int64  `json:"exp"`
	// Nonce makes every login a session of its own, with its own CSRF
	// token.
	Nonce string `json:"n"`
	// raw is the cookie value, from which the CSRF token is derived.
	raw string
	// done is closed when the session ends.
	done <-chan struct{}
	// live is what this instance holds of the session.
	live *liveSession
}

func (s *session) Admin() bool { return s != nil && s.Role == roleAdmin }

// canUse reports whether the session may read and post in room.
func (s *session) canUse(room string) bool {
	return s != nil && (s.Role == roleAdmin || (s.Role == roleGuest && s.Room == room))
}

// openAuth takes the admin token from the config or from dir, creating it
// (0600) when there is none; created reports that, so the token is shown
// once. A token file others can read is refused: it is the key to every
// room. Room links and sessions of an older botd (files in dir) are
// imported into st once.
func openAuth(ctx context.Context, dir, configured string, st *store.Store, now func() time.Time, log *slog.Logger) (*auth, bool, error) {
	tok, created, err := adminToken(dir, configured)
	if err != nil {
		return nil, false, err
	}
	key := sessionKey(tok)
	id := hmac.New(sha256.New, key)
	id.Write([]byte("key id"))
	a := &auth{dir: dir, token: tok, key: key, keyID: hex.EncodeToString(id.Sum(nil)[:8]), now: now, st: st, log: log,
		check: sessionCheck, known: map[string]*liveSession{}}
	if err := a.importFiles(ctx); err != nil {
		return nil, false, err
	}
	// Sessions signed with another token are refused here: say so once,
	// for the instance that was given a token of its own.
	if keys, err := st.LiveWebSessionKeys(ctx, now()); err != nil {
		return nil, false, fmt.Errorf("web sessions: %w", err)
	} else if n := others(keys, a.keyID); n > 0 {
		log.Warn("live web sessions were signed with another admin token and are refused here; if another instance shares this database, "+
			"give both the same channels.web.admin_token (or the same data/web/"+adminTokenFile+")", "sessions", n)
	}
	return a, created, nil
}

// sessionKey is the key that signs sessions, derived from the admin
// token: instances given the same token sign alike.
func sessionKey(tok string) []byte {
	mac := hmac.New(sha256.New, []byte(tok))
	mac.Write([]byte("botd web session key v1"))
	return mac.Sum(nil)
}

// others counts the sessions of keys not signed with key.
func others(keys map[string]int, key string) int {
	n := 0
	for k, c := range keys {
		if k != key {
			n += c
		}
	}
	return n
}

// adminToken is channels.web.admin_token when set, else the token of
// dir's admin-token file, made at the first start (created).
func adminToken(dir, configured string) (tok string, created bool, err error) {
	if configured != "" {
		return strings.TrimSpace(configured), false, nil
	}
	p := filepath.Join(dir, adminTokenFile)
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		tok := randomToken()
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, fmt.Errorf("create admin token: %w", err)
		}
		_, err = f.WriteString(tok + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
			return "", false, fmt.Errorf("create admin token: %w", err)
		}
		raw, created = []byte(tok), true
	} else if err != nil {
		return "", false, fmt.Errorf("read admin token: %w", err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return "", false, fmt.Errorf("admin token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("admin token %s is not a regular file; remove it and restart for a new one", p)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("admin token %s can be read by other users (mode %v); chmod 600 it, or remove it and restart for a new one", p, fi.Mode().Perm())
	}
	tok = strings.TrimSpace(string(raw))
	if len(tok) < minTokenLen {
		return "", false, fmt.Errorf("admin token %s is shorter than %d characters; remove it and restart for a new one", p, minTokenLen)
	}
	return tok, created, nil
}

func (a *auth) adminToken() string { return a.token }

// randomToken is 256 random bits, URL-safe.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func equal(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// checkAdmin reports whether tok is the admin token.
func (a *auth) checkAdmin(tok string) bool { return equal(strings.TrimSpace(tok), a.token) }

func linkOf(l store.RoomLink) Link {
	return Link{ID: l.ID, Room: l.Room, Token: l.Token, Created: l.Created}
}

// linkByToken finds the working link whose URL carried tok.
func (a *auth) linkByToken(ctx context.Context, tok string) (Link, bool, error) {
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return Link{}, false, nil
	}
	l, ok, err := a.st.RoomLinkByToken(ctx, tok)
	if err != nil || !ok || !equal(tok, l.Token) {
		return Link{}, false, err
	}
	return linkOf(l), true, nil
}

// Links lists the working room links, oldest first.
func (a *auth) Links(ctx context.Context) ([]Link, error) {
	ls, err := a.st.RoomLinks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Link, len(ls))
	for i, l := range ls {
		out[i] = linkOf(l)
	}
	return out, nil
}

// createLink makes a new link into room.
func (a *auth) createLink(ctx context.Context, room string) (Link, error) {
	l := store.RoomLink{ID: newID()[:12], Room: room, Token: randomToken(), Created: a.now().UTC()}
	if err := a.st.CreateRoomLink(ctx, l); err != nil {
		return Link{}, err
	}
	return linkOf(l), nil
}

// revokeLink revokes a link and ends the sessions opened through it: at
// once here, open event streams included; on another instance within
// sessionCheck.
func (a *auth) revokeLink(ctx context.Context, id string) (bool, error) {
	found, ended, err := a.st.RevokeRoomLink(ctx, id, a.now())
	if err != nil || !found {
		return false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, nonce := range ended {
		if ls := a.known[nonce]; ls != nil {
			a.endLocked(ls)
		}
	}
	return true, nil
}

// end ends the session s: its cookie no longer works, here at once, and
// its event streams here stop; another instance refuses it within
// sessionCheck.
func (a *auth) end(ctx context.Context, s *session) error {
	a.mu.Lock()
	if ls := a.known[s.Nonce]; ls != nil {
		a.endLocked(ls)
	}
	if s.live != nil {
		a.endLocked(s.live)
	}
	a.mu.Unlock()
	if _, err := a.st.EndWebSession(ctx, s.Nonce, a.now()); err != nil {
		return err
	}
	return nil
}

func (a *auth) endLocked(ls *liveSession) {
	if !ls.ended {
		ls.ended = true
		close(ls.done)
	}
}

func (a *auth) sign(payload string) string {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// issue records s in the database's live sessions and sets its cookie.
// Past maxSessions the oldest end first (at once here, on another
// instance within sessionCheck).
func (a *auth) issue(w http.ResponseWriter, r *http.Request, s session) error {
	now := a.now()
	s.Expires = now.Add(sessionLifetime).Unix()
	s.Nonce = newID()[:16]
	row := store.WebSession{Nonce: s.Nonce, Role: s.Role, Room: s.Room, Link: s.Link, KeyID: a.keyID,
		Created: now, Expires: time.Unix(s.Expires, 0)}
	ended, err := a.st.CreateWebSession(r.Context(), row, maxSessions, now)
	if err != nil {
		return err
	}
	a.mu.Lock()
	for _, nonce := range ended {
		if ls := a.known[nonce]; ls != nil {
			a.endLocked(ls)
		}
	}
	a.rememberLocked(s.Nonce, &liveSession{row: row, read: now, done: make(chan struct{})})
	a.mu.Unlock()
	raw, _ := json.Marshal(s)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: payload + "." + a.sign(payload), Path: "/",
		MaxAge: int(sessionLifetime / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return nil
}

// rememberLocked keeps ls as what this instance knows of nonce. At
// maxKnown it first forgets ended sessions, then sessions not read within
// sessionCheck; never one with an open stream (its count and done channel
// are in use). A forgotten live session is read again at its next request.
func (a *auth) rememberLocked(nonce string, ls *liveSession) {
	if len(a.known) >= maxKnown {
		now := a.now()
		for n, k := range a.known {
			if k.streams == 0 && k.ended {
				delete(a.known, n)
			}
		}
		for n, k := range a.known {
			if len(a.known) < maxKnown*3/4 {
				break
			}
			if k.streams == 0 && now.Sub(k.read) >= a.check {
				delete(a.known, n)
			}
		}
	}
	a.known[nonce] = ls
}

// lookup returns what this instance knows of the session nonce names,
// reading it from the database when it was not read within sessionCheck.
// An ended session is final: it is never read again.
func (a *auth) lookup(ctx context.Context, nonce string) (*liveSession, error) {
	now := a.now()
	a.mu.Lock()
	ls := a.known[nonce]
	if ls != nil && (ls.ended || now.Sub(ls.read) < a.check) {
		a.mu.Unlock()
		return ls, nil
	}
	a.mu.Unlock()
	row, ok, err := a.st.WebSession(ctx, nonce)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ls = a.known[nonce]; ls == nil {
		ls = &liveSession{done: make(chan struct{})}
		a.rememberLocked(nonce, ls)
	}
	if ls.ended {
		return ls, nil // ended here while the database was read
	}
	// A nonce the database does not have is final too: a cookie is only
	// set once its session is recorded.
	ls.row, ls.read = row, now
	if !ok || !row.Live(now) {
		a.endLocked(ls)
	}
	return ls, nil
}

// session returns the request's valid session, or nil: no cookie, a
// signature that does not match, an expired one, one that was ended
// (logout, a revoked link, the bound on sessions) here or on another
// instance, or the database could not be read.
func (a *auth) session(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	payload, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !equal(sig, a.sign(payload)) {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil
	}
	var s session
	if json.Unmarshal(raw, &s) != nil || a.now().Unix() >= s.Expires || s.Nonce == "" {
		return nil
	}
	if s.Role != roleAdmin && s.Role != roleGuest {
		return nil
	}
	ls, err := a.lookup(r.Context(), s.Nonce)
	if err != nil {
		// Refused rather than trusted unread: the page asks to log in
		// again, the cookie works once the database answers.
		a.log.Warn("web session not read", "err", err)
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ls.ended || ls.row.Role != s.Role || ls.row.Room != s.Room || ls.row.Link != s.Link {
		return nil
	}
	s.done, s.live, s.raw = ls.done, ls, c.Value
	return &s
}

// alive reports whether s has not ended: read from memory, never the
// database, so an event stream checks it at every event for free (the
// watch loop ends the sessions ended elsewhere).
func (a *auth) alive(s *session) bool {
	select {
	case <-s.done:
		return false
	default:
		return a.now().Unix() < s.Expires
	}
}

// watch re-reads, every sessionCheck until ctx ends, the sessions this
// instance holds event streams of, and ends those ended on another
// instance: one query per sessionCheck, however many streams are open.
func (a *auth) watch(ctx context.Context, every time.Duration) {
	clock.Every(ctx, every, func() {
		if err := a.recheck(ctx); err != nil && ctx.Err() == nil {
			// The streams stay open; the next round tries again.
			a.log.Warn("web sessions not re-read", "err", err)
		}
	})
}

// recheck reads the sessions with open streams here and ends those no
// longer live.
func (a *auth) recheck(ctx context.Context) error {
	a.mu.Lock()
	var nonces []string
	for n, ls := range a.known {
		if ls.streams > 0 && !ls.ended {
			nonces = append(nonces, n)
		}
	}
	a.mu.Unlock()
	if len(nonces) == 0 {
		return nil
	}
	rows, err := a.st.WebSessions(ctx, nonces)
	if err != nil {
		return err
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range nonces {
		ls := a.known[n]
		if ls == nil || ls.ended {
			continue
		}
		row, ok := rows[n]
		ls.row, ls.read = row, now
		if !ok || !row.Live(now) {
			a.endLocked(ls)
		}
	}
	return nil
}

// openStream counts an event stream of s; false when s already holds max
// or has ended.
func (a *auth) openStream(s *session, max int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ls := s.live
	if ls == nil || ls.ended || ls.streams >= max {
		return false
	}
	ls.streams++
	if a.known[s.Nonce] == nil {
		a.known[s.Nonce] = ls // forgotten since session(): the watch loop must see it
	}
	return true
}

func (a *auth) closeStream(s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ls := s.live; ls != nil && ls.streams > 0 {
		ls.streams--
	}
}

// takePost spends one of the session's posts; when none is left it says
// how long until one is. The bucket is this instance's: two instances
// serving one session would each allow the rate.
func (a *auth) takePost(s *session, perMinute, burst int) (bool, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ls := s.live
	if ls == nil || ls.ended {
		return false, time.Minute
	}
	return ls.posts.take(a.now(), perMinute, burst)
}

// csrf is the token a session's pages send back with every POST: bound
// to the session cookie, which a page of another site can neither read
// nor, with SameSite=Strict, have sent along.
func (a *auth) csrf(s *session) string {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte("csrf\x00" + s.raw))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// checkCSRF accepts a POST of s whose token (header, or the form field of
// a page without script) matches.
func (a *auth) checkCSRF(r *http.Request, s *session) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.URL.Query().Get(csrfField)
	}
	if got == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		got = r.PostFormValue(csrfField)
	}
	return equal(got, a.csrf(s))
}

// preCSRF returns the login form's token, setting its cookie when the
// browser has none.
func preCSRF(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(preCSRFCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{Name: preCSRFCookie, Value: tok, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return tok
}

// checkPreCSRF accepts a login or join form whose field matches its cookie.
func checkPreCSRF(r *http.Request) bool {
	c, err := r.Cookie(preCSRFCookie)
	if err != nil {
		return false
	}
	return equal(r.PostFormValue(csrfField), c.Value)
}
