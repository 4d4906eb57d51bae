package web

import (
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
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/atomicfile"
)

const (
	// adminTokenFile holds the admin token, created on the first start.
	// Deleting it (and restarting) makes a new token and ends every
	// session and room link session.
	adminTokenFile = "admin-token"
	linksFile      = "links.json"
	// sessionsFile is the server's table of live sessions: a cookie whose
	// session is not in it (logged out, its link revoked) is refused
	// however well signed.
	sessionsFile = "sessions.json"
	// maxSessions bounds the table; past it the oldest session ends.
	maxSessions = 1000

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
// cookies backed by the server's table of live sessions (saved, so both
// survive a restart) and room links.
type auth struct {
	dir   string
	token string
	key   []byte // signs sessions; derived from the token
	now   func() time.Time

	mu       sync.Mutex
	links    []Link
	sessions map[string]*liveSession // by session nonce
}

// liveSession is a session the server knows, as sessionsFile keeps it,
// and what it holds open.
type liveSession struct {
	Role    string `json:"r"`
	Room    string `json:"room,omitempty"`
	Link    string `json:"link,omitempty"`
	Expires int64  `json:"exp"`
	Issued  int64  `json:"iat"`

	// done is closed when the session ends: its event streams end at once.
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
	// done is closed when the server ends the session.
	done <-chan struct{}
}

func (s *session) Admin() bool { return s != nil && s.Role == roleAdmin }

// canUse reports whether the session may read and post in room.
func (s *session) canUse(room string) bool {
	return s != nil && (s.Role == roleAdmin || (s.Role == roleGuest && s.Room == room))
}

// openAuth reads the admin token from dir, creating it (0600) when there
// is none; created reports that, so the token is shown once. A token file
// others can read is refused: it is the key to every room.
func openAuth(dir string, now func() time.Time) (*auth, bool, error) {
	p := filepath.Join(dir, adminTokenFile)
	created := false
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		tok := randomToken()
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, false, fmt.Errorf("create admin token: %w", err)
		}
		_, err = f.WriteString(tok + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
			return nil, false, fmt.Errorf("create admin token: %w", err)
		}
		raw, created = []byte(tok), true
	} else if err != nil {
		return nil, false, fmt.Errorf("read admin token: %w", err)
	}
	st, err := os.Lstat(p)
	if err != nil {
		return nil, false, fmt.Errorf("admin token: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("admin token %s is not a regular file; remove it and restart for a new one", p)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, false, fmt.Errorf("admin token %s can be read by other users (mode %v); chmod 600 it, or remove it and restart for a new one", p, st.Mode().Perm())
	}
	tok := strings.TrimSpace(string(raw))
	if len(tok) < 32 {
		return nil, false, fmt.Errorf("admin token %s is shorter than 32 characters; remove it and restart for a new one", p)
	}
	mac := hmac.New(sha256.New, []byte(tok))
	mac.Write([]byte("botd web session key v1"))
	a := &auth{dir: dir, token: tok, key: mac.Sum(nil), now: now, sessions: map[string]*liveSession{}}
	if err := a.loadLinks(); err != nil {
		return nil, false, err
	}
	if err := a.loadSessions(); err != nil {
		return nil, false, err
	}
	return a, created, nil
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

// linkByToken finds the live link whose URL carried tok.
func (a *auth) linkByToken(tok string) (Link, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tok = strings.TrimSpace(tok)
	for _, l := range a.links {
		if equal(tok, l.Token) {
			return l, true
		}
	}
	return Link{}, false
}

func (a *auth) linkAlive(id, room string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.links, func(l Link) bool { return l.ID == id && l.Room == room })
}

// Links lists the live room links, oldest first.
func (a *auth) Links() []Link {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.links)
}

// createLink makes a new link into room and saves the list.
func (a *auth) createLink(room string) (Link, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := Link{ID: newID()[:12], Room: room, Token: randomToken(), Created: a.now().UTC()}
	links := append(slices.Clone(a.links), l)
	if err := a.saveLinks(links); err != nil {
		return Link{}, err
	}
	a.links = links
	return l, nil
}

// revokeLink removes a link and ends the sessions opened through it at
// once, open event streams included.
func (a *auth) revokeLink(id string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	links := slices.DeleteFunc(slices.Clone(a.links), func(l Link) bool { return l.ID == id })
	if len(links) == len(a.links) {
		return false, nil
	}
	if err := a.saveLinks(links); err != nil {
		return false, err
	}
	a.links = links
	for nonce, ls := range a.sessions {
		if ls.Role == roleGuest && ls.Link == id {
			a.endLocked(nonce)
		}
	}
	if err := a.saveSessionsLocked(); err != nil {
		return true, err
	}
	return true, nil
}

// end ends the session s on the server: its cookie no longer works and
// its event streams stop.
func (a *auth) end(s *session) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions[s.Nonce] == nil {
		return nil
	}
	a.endLocked(s.Nonce)
	return a.saveSessionsLocked()
}

func (a *auth) endLocked(nonce string) {
	if ls := a.sessions[nonce]; ls != nil {
		close(ls.done)
		delete(a.sessions, nonce)
	}
}

func (a *auth) loadSessions() error {
	p := filepath.Join(a.dir, sessionsFile)
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("web sessions: %w", err)
	}
	var m map[string]*liveSession
	if err := json.Unmarshal(raw, &m); err != nil {
		// Losing the table only logs everyone out; refusing to start
		// would lose the channel.
		return nil
	}
	now := a.now().Unix()
	for nonce, ls := range m {
		if ls != nil && ls.Expires > now {
			ls.done = make(chan struct{})
			a.sessions[nonce] = ls
		}
	}
	return nil
}

// saveSessionsLocked writes the table (temp file + rename).
func (a *auth) saveSessionsLocked() error {
	raw, err := json.Marshal(a.sessions)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(a.dir, sessionsFile), raw, 0o600); err != nil {
		return fmt.Errorf("save web sessions: %w", err)
	}
	return nil
}

func (a *auth) loadLinks() error {
	raw, err := os.ReadFile(filepath.Join(a.dir, linksFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("room links: %w", err)
	}
	if err := json.Unmarshal(raw, &a.links); err != nil {
		return fmt.Errorf("room links %s: %w", filepath.Join(a.dir, linksFile), err)
	}
	return nil
}

// saveLinks writes the list to a temp file and renames it into place, so
// a crash leaves the old list or the new one.
func (a *auth) saveLinks(links []Link) error {
	raw, err := json.MarshalIndent(links, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(a.dir, linksFile), raw, 0o600); err != nil {
		return fmt.Errorf("save room links: %w", err)
	}
	return nil
}

func (a *auth) sign(payload string) string {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// issue records s in the table of live sessions and sets its cookie.
// Past maxSessions, or with sessions expired, the oldest end first.
func (a *auth) issue(w http.ResponseWriter, r *http.Request, s session) error {
	now := a.now()
	s.Expires = now.Add(sessionLifetime).Unix()
	s.Nonce = newID()[:16]
	a.mu.Lock()
	for nonce, ls := range a.sessions {
		if ls.Expires <= now.Unix() {
			a.endLocked(nonce)
		}
	}
	for len(a.sessions) >= maxSessions {
		oldest := ""
		for nonce, ls := range a.sessions {
			if oldest == "" || ls.Issued < a.sessions[oldest].Issued {
				oldest = nonce
			}
		}
		a.endLocked(oldest)
	}
	a.sessions[s.Nonce] = &liveSession{Role: s.Role, Room: s.Room, Link: s.Link, Expires: s.Expires, Issued: now.UnixNano(),
		done: make(chan struct{})}
	err := a.saveSessionsLocked()
	if err != nil {
		delete(a.sessions, s.Nonce)
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(s)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: payload + "." + a.sign(payload), Path: "/",
		MaxAge: int(sessionLifetime / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return nil
}

// session returns the request's valid session, or nil: no cookie, a
// signature that does not match, an expired one, one the server ended
// (logout, a revoked link), or a revoked link.
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
	if json.Unmarshal(raw, &s) != nil || a.now().Unix() >= s.Expires {
		return nil
	}
	switch s.Role {
	case roleAdmin:
	case roleGuest:
		if !a.linkAlive(s.Link, s.Room) {
			return nil
		}
	default:
		return nil
	}
	a.mu.Lock()
	ls := a.sessions[s.Nonce]
	if ls == nil || ls.Role != s.Role || ls.Room != s.Room || ls.Link != s.Link {
		a.mu.Unlock()
		return nil
	}
	s.done = ls.done
	a.mu.Unlock()
	s.raw = c.Value
	return &s
}

// alive reports whether the server has not ended s.
func (a *auth) alive(s *session) bool {
	select {
	case <-s.done:
		return false
	default:
		return a.now().Unix() < s.Expires
	}
}

// openStream counts an event stream of s; false when s already holds max.
func (a *auth) openStream(s *session, max int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ls := a.sessions[s.Nonce]
	if ls == nil || ls.streams >= max {
		return false
	}
	ls.streams++
	return true
}

func (a *auth) closeStream(s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ls := a.sessions[s.Nonce]; ls != nil && ls.streams > 0 {
		ls.streams--
	}
}

// takePost spends one of the session's posts; when none is left it says
// how long until one is.
func (a *auth) takePost(s *session, perMinute, burst int) (bool, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ls := a.sessions[s.Nonce]
	if ls == nil {
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
