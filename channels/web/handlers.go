package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/internal/connlimit"
	"github.com/botd-dev/botd/mediaregistry"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

func parseTemplates() (*template.Template, error) {
	return template.New("").Funcs(template.FuncMap{
		"size": mediaregistry.FormatSize,
	}).ParseFS(templateFS, "templates/*.html")
}

const (
	// maxFiles bounds the files of one message.
	maxFiles = 10
	// formOverhead is what a message may add to its files: the text, the
	// name, multipart headers.
	formOverhead = 256 << 10
	// maxNameRunes caps a sender's display name.
	maxSenderRunes = 64
	// pageMessages is how many messages a room page opens with.
	pageMessages = 200
)

// Handler serves the rooms, the login and the dashboard. Start must have
// run: it loads the token and the rooms.
func (w *Web) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", w.home)
	mux.HandleFunc("GET /login", w.loginPage)
	mux.HandleFunc("POST /login", w.login)
	mux.HandleFunc("GET /join", w.joinPage)
	mux.HandleFunc("POST /join", w.join)
	mux.HandleFunc("POST /logout", w.logout)
	mux.HandleFunc("GET /r/{room}", w.roomPage)
	mux.HandleFunc("GET /r/{room}/events", w.events)
	mux.HandleFunc("POST /r/{room}/messages", w.post)
	mux.HandleFunc("POST /r/{room}/stop", w.stop)
	mux.HandleFunc("POST /r/{room}/name", w.setName)
	mux.HandleFunc("GET /r/{room}/tools", w.toolsOf)
	mux.HandleFunc("GET /r/{room}/files/{id}", w.file)
	mux.HandleFunc("GET /admin", w.dashboard)
	mux.HandleFunc("GET /admin/live", w.dashboardLive)
	mux.HandleFunc("GET /admin/runs/{id}", w.runPage)
	mux.HandleFunc("GET /favicon.ico", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "/static/favicon.svg", http.StatusMovedPermanently)
	})
	mux.HandleFunc("POST /admin/links", w.createLink)
	mux.HandleFunc("POST /admin/links/{id}/revoke", w.revokeLink)
	mux.HandleFunc("POST /admin/chats/{verb}", w.decideChat)
	mux.HandleFunc("POST /admin/settings", w.setSetting)
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	if w.o.Standby {
		return w.guard(w.standbyGuard(mux))
	}
	return w.guard(mux)
}

// standbyGuard refuses, on an instance standing by, every request that
// would reach the assistant or change the rooms: another instance
// answers, and this one's channels are not running. Logging in and out
// works, so the dashboard can be read.
func (w *Web) standbyGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login", "/logout", "/join":
		default:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				rw.Header().Set("Retry-After", "5")
				w.fail(rw, r, http.StatusServiceUnavailable, w.standbyNotice()+" Nothing was posted.")
				return
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// standbyNotice says that this instance stands by and which one answers.
func (w *Web) standbyNotice() string {
	var v LeaseView
	if w.o.Lease != nil {
		v = w.o.Lease()
	}
	this := "This botd instance"
	if v.This != "" {
		this += " (" + v.This + ")"
	}
	if v.Active == "" || v.Active == v.This {
		return this + " is standing by and no instance answers right now; it takes over when the lease stays free."
	}
	return fmt.Sprintf("%s is standing by: %s answers, active since %s (lease epoch %d). Post on its web room, or here once this one takes over.",
		this, v.Active, v.Since.UTC().Format("2006-01-02 15:04:05 UTC"), v.Epoch)
}

// guard applies what holds for every request: the page may only be
// framed, scripted and styled by itself; a request for another host name
// is refused unless remote access was allowed (a DNS rebinding page
// cannot borrow the browser's way into a loopback server); a POST that a
// browser says came from another site is refused before any handler.
func (w *Web) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "+
			"media-src 'self' blob:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: with no-referrer a browser sends
		// "Origin: null" on its own form posts, which the check below refuses.
		h.Set("Referrer-Policy", "same-origin")
		// A connection earns its keep-alive with a session: every answer
		// without one (the login page, its static files, a redirect to it,
		// 401 and 403) closes the connection, so that connections of
		// strangers cannot pile up.
		if w.auth.session(r) == nil {
			connlimit.Refuse(rw)
		} else {
			connlimit.Authorise(r.Context())
		}
		if !w.cfg.AllowRemote && !loopbackHost(r.Host) {
			http.Error(rw, "unknown host: open the address botd printed (127.0.0.1 or localhost)", http.StatusMisdirectedRequest)
			return
		}
		// The standard library's check refuses a POST whose Sec-Fetch-Site
		// is not same-origin, or (from a browser too old to send that) whose
		// Origin names another host, "null" included. It trusts
		// Sec-Fetch-Site alone where it is sent, while botd's rule is that
		// an Origin naming another host is refused whatever else the
		// request says, so that rule is checked too. Neither binds a POST
		// to a page botd served (a request with neither header passes):
		// the session's CSRF token, and the login form's, still do that.
		if err := crossOrigin.Check(r); err != nil || (!readOnly(r) && !sameOrigin(r)) {
			http.Error(rw, "cross-site request refused: post from botd's own page", http.StatusForbidden)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// crossOrigin has no trusted origins: only botd's own pages post to it.
var crossOrigin = http.NewCrossOriginProtection()

// readOnly: a GET or HEAD, which a page of any site may send (a link, an
// image) and which changes nothing.
func readOnly(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// sameOrigin: r has no Origin header, or one naming r's own host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return IsLoopback(strings.Trim(host, "[]"))
}

// page is what every template gets.
type page struct {
	Title     string
	Notice    string
	Session   *session
	CSRF      string
	Rooms     []roomLink
	Assistant string
	Error     string
	Body      any
}

type roomLink struct {
	Name, Title string
	Current     bool
}

func (w *Web) page(title string, s *session, current string) page {
	p := page{Title: title, Notice: w.o.Notice, Session: s, Assistant: w.env.AssistantName}
	if w.o.Standby {
		p.Notice = strings.TrimSpace(w.standbyNotice() + " " + p.Notice)
	}
	if s != nil {
		p.CSRF = w.auth.csrf(s)
		for _, name := range w.order {
			if s.canUse(name) {
				p.Rooms = append(p.Rooms, roomLink{Name: name, Title: w.rooms[name].title, Current: name == current})
			}
		}
	}
	return p
}

func (w *Web) render(rw http.ResponseWriter, status int, name string, p page) {
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	if err := w.tmpl.ExecuteTemplate(rw, name, p); err != nil {
		w.log.Warn("web page failed", "page", name, "err", err)
	}
}

func (w *Web) fail(rw http.ResponseWriter, r *http.Request, status int, msg string) {
	if wantsJSON(r) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		json.NewEncoder(rw).Encode(map[string]string{"error": msg})
		return
	}
	p := w.page(http.StatusText(status), w.auth.session(r), "")
	p.Error = msg
	w.render(rw, status, "error.html", p)
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json") || r.Header.Get("Accept") == "text/event-stream"
}

func (w *Web) home(rw http.ResponseWriter, r *http.Request) {
	s := w.auth.session(r)
	switch {
	case s == nil:
		http.Redirect(rw, r, "/login", http.StatusSeeOther)
	case s.Role == roleGuest:
		http.Redirect(rw, r, "/r/"+s.Room, http.StatusSeeOther)
	case w.mainRoom() != "":
		http.Redirect(rw, r, "/r/"+w.mainRoom(), http.StatusSeeOther)
	default:
		http.Redirect(rw, r, "/admin", http.StatusSeeOther)
	}
}

// loginForm is the body of the login and join pages.
type loginForm struct {
	Action string // "/login" or "/join"
	Field  string // the form field the token goes in
	Token  string // the pre-session CSRF token
}

func (w *Web) loginPage(rw http.ResponseWriter, r *http.Request) {
	if s := w.auth.session(r); s.Admin() {
		http.Redirect(rw, r, "/", http.StatusSeeOther)
		return
	}
	p := w.page("Log in", nil, "")
	p.Body = loginForm{Action: "/login", Field: "token", Token: preCSRF(rw, r)}
	w.render(rw, http.StatusOK, "login.html", p)
}

func (w *Web) joinPage(rw http.ResponseWriter, r *http.Request) {
	p := w.page("Join a room", nil, "")
	p.Body = loginForm{Action: "/join", Field: "link", Token: preCSRF(rw, r)}
	w.render(rw, http.StatusOK, "login.html", p)
}

// loginFailed answers a wrong or missing token with the form again.
func (w *Web) loginFailed(rw http.ResponseWriter, r *http.Request, status int, action, field, msg string) {
	p := w.page("Log in", nil, "")
	p.Error = msg
	p.Body = loginForm{Action: action, Field: field, Token: preCSRF(rw, r)}
	w.render(rw, status, "login.html", p)
}

func (w *Web) login(rw http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(rw, r.Body, 4<<10)
	if !checkPreCSRF(r) {
		w.loginFailed(rw, r, http.StatusForbidden, "/login", "token", "The form expired; log in again.")
		return
	}
	tok := r.PostFormValue("token")
	if tok == "" {
		w.loginFailed(rw, r, http.StatusUnauthorized, "/login", "token", "Paste the admin token.")
		return
	}
	if !w.auth.checkAdmin(tok) {
		// Never the token itself: a near miss would be half a secret.
		w.log.Warn("web login with a wrong admin token", "remote", r.RemoteAddr)
		w.loginFailed(rw, r, http.StatusUnauthorized, "/login", "token", "That is not the admin token.")
		return
	}
	if err := w.auth.issue(rw, r, session{Role: roleAdmin}); err != nil {
		w.log.Error("web login: session not saved", "err", err)
		w.loginFailed(rw, r, http.StatusInternalServerError, "/login", "token", "botd could not save the session; try again.")
		return
	}
	http.Redirect(rw, r, "/", http.StatusSeeOther)
}

func (w *Web) join(rw http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(rw, r.Body, 4<<10)
	if !checkPreCSRF(r) {
		w.loginFailed(rw, r, http.StatusForbidden, "/join", "link", "The form expired; open the room link again.")
		return
	}
	l, ok, err := w.auth.linkByToken(r.Context(), r.PostFormValue("link"))
	if err != nil {
		w.log.Error("web join: room links not read", "err", err)
		w.loginFailed(rw, r, http.StatusInternalServerError, "/join", "link", "botd could not read its room links; try again.")
		return
	}
	if !ok || w.rooms[l.Room] == nil {
		w.log.Warn("web join with an unknown or revoked room link", "remote", r.RemoteAddr)
		w.loginFailed(rw, r, http.StatusUnauthorized, "/join", "link", "This room link is not valid (any more). Ask for a new one.")
		return
	}
	if err := w.auth.issue(rw, r, session{Role: roleGuest, Room: l.Room, Link: l.ID}); err != nil {
		w.log.Error("web join: session not saved", "err", err)
		w.loginFailed(rw, r, http.StatusInternalServerError, "/join", "link", "botd could not save the session; try again.")
		return
	}
	http.Redirect(rw, r, "/r/"+l.Room, http.StatusSeeOther)
}

func (w *Web) logout(rw http.ResponseWriter, r *http.Request) {
	s := w.auth.session(r)
	if s != nil && !w.auth.checkCSRF(r, s) {
		w.fail(rw, r, http.StatusForbidden, "missing or wrong CSRF token")
		return
	}
	if s != nil {
		// The cookie alone must not work again: the session ends in the
		// database, and its open pages here stop listening at once.
		if err := w.auth.end(r.Context(), s); err != nil {
			w.log.Warn("web logout: the session's end was not saved; another instance may accept it", "err", err)
		}
	}
	connlimit.Refuse(rw)
	http.SetCookie(rw, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(rw, r, "/login", http.StatusSeeOther)
}

// authRoom finds the room of the request and checks the session may use
// it. On failure it has answered: a page sends a browser without a
// session to the login, anything else gets 401 or 403.
func (w *Web) authRoom(rw http.ResponseWriter, r *http.Request, isPage bool) (*room, *session) {
	s := w.auth.session(r)
	if s == nil {
		if isPage {
			http.Redirect(rw, r, "/login", http.StatusSeeOther)
		} else {
			w.fail(rw, r, http.StatusUnauthorized, "log in first")
		}
		return nil, nil
	}
	rm := w.rooms[r.PathValue("room")]
	if rm == nil {
		w.fail(rw, r, http.StatusNotFound, "no such room; a room is a group whose chat is web:<room>")
		return nil, nil
	}
	if !s.canUse(rm.name) {
		w.fail(rw, r, http.StatusForbidden, "this session cannot use that room")
		return nil, nil
	}
	return rm, s
}

// roomBody is the body of a room page.
type roomBody struct {
	Room      string
	Title     string
	Folder    string
	Messages  []msgView
	LastSeq   int64
	MaxUpload int64
	// Guest is a room link's visitor; Name the name they chose for the
	// session ("" until they do: the page asks).
	Guest bool
	Name  string
	// Hint tells an empty room how to reach the assistant.
	Hint string
}

func (w *Web) roomPage(rw http.ResponseWriter, r *http.Request) {
	rm, s := w.authRoom(rw, r, true)
	if rm == nil {
		return
	}
	msgs := rm.recent(pageMessages)
	if w.o.Standby {
		// The active instance adds the messages: the page shows what the
		// database holds, not what this process had at its start.
		var err error
		if msgs, err = rm.stored(r.Context(), 0, pageMessages); err != nil {
			w.log.Error("web room: messages not read", "room", rm.name, "err", err)
			w.fail(rw, r, http.StatusInternalServerError, "botd could not read the room's messages; try again")
			return
		}
	}
	b := roomBody{Room: rm.name, Title: rm.title, Folder: rm.folder, MaxUpload: w.o.MaxUploadBytes, Guest: s.Role == roleGuest,
		Hint: w.roomHint(rm)}
	if b.Guest {
		var err error
		if b.Name, err = w.guestName(r.Context(), s); err != nil {
			w.log.Error("web room: guest name not read", "room", rm.name, "err", err)
			w.fail(rw, r, http.StatusInternalServerError, "botd could not read your name; try again")
			return
		}
	}
	chips, _, err := w.chipsFor(r.Context(), rm, msgs, s.Admin())
	if err != nil {
		// The answers are shown all the same, without what they did.
		w.log.Warn("web room: tool chips not read", "room", rm.name, "err", err)
	}
	for _, m := range msgs {
		v := view(rm.name, m)
		v.Tools = chips[m.Seq]
		b.Messages = append(b.Messages, v)
		b.LastSeq = m.Seq
	}
	p := w.page(rm.title, s, rm.name)
	p.Body = b
	w.render(rw, http.StatusOK, "room.html", p)
}

// msgView is a message as pages render it, in the template and from the
// event stream alike.
type msgView struct {
	Message
	Clock string `json:"clock"`
	// HTML is an assistant's text rendered from markdown (render); other
	// senders' text is shown as written.
	HTML  template.HTML `json:"html,omitempty"`
	Files []fileView    `json:"files,omitempty"`
	// Tools are what the assistant did for an answer (chipsFor).
	Tools []toolChip `json:"tools,omitempty"`
}

type fileView struct {
	FileInfo
	URL      string `json:"url"`
	Image    bool   `json:"image"`
	Inline   bool   `json:"inline"`
	SizeText string `json:"size_text"`
}

func view(room string, m Message) msgView {
	v := msgView{Message: m, Clock: m.Clock()}
	if m.Assistant && m.Text != "" {
		v.HTML = renderHTML(m.Text)
	}
	for _, f := range m.Files {
		v.Files = append(v.Files, fileView{FileInfo: f, URL: "/r/" + room + "/files/" + f.ID,
			Image: f.Image(), Inline: f.Inline(), SizeText: f.SizeText()})
	}
	return v
}

// heartbeat keeps an idle event stream open through proxies and finds
// a page that went away. A session's end needs no heartbeat: logout and
// a revoked link close the session's done channel and the stream ends at
// once; ended on another instance, within sessionCheck (auth.watch).
const heartbeat = 20 * time.Second

// standbyPoll is how often a standby's event stream reads the room's new
// messages from the database: the active instance adds them, and its
// drafts and typing signals stay in its memory.
const standbyPoll = 3 * time.Second

// events streams a room to a page: what it missed (after Last-Event-ID,
// or ?after= on the first connect), then every new message and typing
// signal. On a standby the new messages are read from the database every
// standbyPoll, with no drafts or typing.
func (w *Web) events(rw http.ResponseWriter, r *http.Request) {
	rm, s := w.authRoom(rw, r, false)
	if rm == nil {
		return
	}
	if !w.auth.openStream(s, w.cfg.MaxStreamsPerSession) {
		w.tooMany(rw, r, 5*time.Second, fmt.Sprintf("this session has %d rooms open already (channels.web.max_streams_per_session); close a tab",
			w.cfg.MaxStreamsPerSession))
		return
	}
	defer w.auth.closeStream(s)
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	if after == 0 {
		after, _ = strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	}
	var (
		backlog []Message
		drafts  []draft
		evs     <-chan event // nil on a standby: it never fires
		poll    <-chan time.Time
	)
	if w.o.Standby {
		var err error
		if backlog, err = rm.stored(r.Context(), after, keepMessages); err != nil {
			w.log.Error("web room: messages not read", "room", rm.name, "err", err)
			w.fail(rw, r, http.StatusInternalServerError, "botd could not read the room's messages; try again")
			return
		}
		t := time.NewTicker(w.o.standbyPoll)
		defer t.Stop()
		poll = t.C
	} else {
		var sb *sub
		sb, backlog, drafts = rm.subscribe(after)
		defer rm.unsubscribe(sb)
		evs = sb.ch
	}
	rc := http.NewResponseController(rw)
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rw.WriteHeader(http.StatusOK)
	last := after
	send := func(m Message) error {
		if m.Seq <= last {
			return nil
		}
		last = m.Seq
		raw, _ := json.Marshal(view(rm.name, m))
		_, err := fmt.Fprintf(rw, "id: %d\nevent: message\ndata: %s\n\n", m.Seq, raw)
		return err
	}
	sendJSON := func(name string, v any) error {
		raw, _ := json.Marshal(v)
		_, err := fmt.Fprintf(rw, "event: %s\ndata: %s\n\n", name, raw)
		return err
	}
	fmt.Fprint(rw, "retry: 1000\n\n")
	for _, m := range backlog {
		if send(m) != nil {
			return
		}
	}
	// The answers being written now: a page drops any draft it shows that
	// is not among them (it ended while the page was away).
	ids := make([]string, 0, len(drafts))
	for _, d := range drafts {
		ids = append(ids, d.ID)
	}
	if sendJSON("drafts", ids) != nil {
		return
	}
	for _, d := range drafts {
		if sendJSON("draft", d) != nil {
			return
		}
	}
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(w.o.heartbeat)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-poll:
			if !w.auth.alive(s) {
				return
			}
			msgs, rerr := rm.stored(r.Context(), last, keepMessages)
			if rerr != nil {
				// The next poll tries again; the page keeps what it shows.
				w.log.Warn("web room: new messages not read", "room", rm.name, "err", rerr)
				continue
			}
			for _, m := range msgs {
				if err = send(m); err != nil {
					break
				}
			}
		case ev, ok := <-evs:
			if !ok {
				return // fell behind, or the room closed: the browser reconnects
			}
			if !w.auth.alive(s) {
				return
			}
			switch ev.kind {
			case "message":
				err = send(ev.msg)
			case "typing":
				_, err = fmt.Fprintf(rw, "event: typing\ndata: {\"on\":%t}\n\n", ev.typing)
			case "draft", "draft_end":
				err = sendJSON(ev.kind, ev.draft)
			case "reaction":
				err = sendJSON(ev.kind, ev.reaction)
			}
		case <-tick.C:
			if !w.auth.alive(s) {
				return
			}
			_, err = fmt.Fprint(rw, ": ping\n\n")
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// post takes a message from a page: a name, text and files, as
// multipart/form-data, streamed to disk with the size cap. The files
// become refs and placeholders through channels.Env.Compose, exactly as
// a Telegram photo does.
func (w *Web) post(rw http.ResponseWriter, r *http.Request) {
	rm, s := w.authRoom(rw, r, false)
	if rm == nil {
		return
	}
	if !w.auth.checkCSRF(r, s) {
		w.fail(rw, r, http.StatusForbidden, "missing or wrong CSRF token; reload the page")
		return
	}
	if ok, wait := w.auth.takePost(s, w.cfg.PostsPerMinute, burstOf(w.cfg.PostsPerMinute)); !ok {
		w.tooMany(rw, r, wait, fmt.Sprintf("you are posting too fast (at most %d messages a minute)", w.cfg.PostsPerMinute))
		return
	}
	if ok, wait := rm.rate.take(w.now(), w.cfg.RoomPostsPerMinute, burstOf(w.cfg.RoomPostsPerMinute)); !ok {
		w.tooMany(rw, r, wait, fmt.Sprintf("this room gets too many messages (at most %d a minute)", w.cfg.RoomPostsPerMinute))
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, w.o.MaxUploadBytes+formOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		w.fail(rw, r, http.StatusBadRequest, "expected multipart/form-data")
		return
	}
	var (
		name, text string
		files      []FileInfo
		total      int64
		ok         bool
		// share is the room's group's use of the disk budget, measured
		// at the first file.
		share *diskbudget.GroupUse
	)
	defer func() {
		if !ok {
			for _, f := range files {
				w.files.remove(rm.name, f.ID)
			}
		}
	}()
	tooLarge := func() {
		w.fail(rw, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the files of one message may have %s together (media.max_download_bytes)",
			mediaregistry.FormatSize(w.o.MaxUploadBytes)))
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if isTooLarge(err) {
				tooLarge()
			} else {
				w.fail(rw, r, http.StatusBadRequest, "malformed form")
			}
			return
		}
		switch part.FormName() {
		case "name":
			name, err = readField(part, 4*maxSenderRunes)
		case "text":
			text, err = readField(part, 4*maxTextRunes)
			if err == nil && utf8.RuneCountInString(text) > maxTextRunes {
				err = errTooLarge
			}
		case "file":
			raw := rawFileName(part)
			if raw == "" {
				break // an empty file input
			}
			if len(files) == maxFiles {
				w.fail(rw, r, http.StatusBadRequest, fmt.Sprintf("at most %d files per message", maxFiles))
				return
			}
			if share == nil {
				gu, gerr := w.shareOf(r.Context(), rm)
				if gerr != nil {
					w.log.Warn("web upload: the room's disk use could not be measured", "room", rm.name, "err", gerr)
					w.fail(rw, r, http.StatusInternalServerError, "botd could not check its disk; try again")
					return
				}
				share = &gu
			}
			limit := w.o.MaxUploadBytes - total
			byShare := share.Free() < limit
			if byShare {
				limit = share.Free()
			}
			if limit <= 0 {
				w.shareFull(rw, r, rm, *share)
				return
			}
			var fi FileInfo
			fi, err = w.files.save(rm.name, part, limit, cleanFileName(raw), part.Header.Get("Content-Type"))
			if err == nil {
				files = append(files, fi)
				total += fi.Size
				share.Sole += fi.Size
				w.o.Budget.Added(fi.Size)
			} else if byShare && isTooLarge(err) {
				part.Close()
				w.shareFull(rw, r, rm, *share)
				return
			}
		}
		part.Close()
		if err != nil {
			switch {
			case isTooLarge(err) && part.FormName() == "text":
				w.fail(rw, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("a message may have %d characters", maxTextRunes))
			case isTooLarge(err):
				tooLarge()
			default:
				w.log.Warn("web upload failed", "room", rm.name, "err", err)
				w.fail(rw, r, http.StatusBadRequest, "the upload failed")
			}
			return
		}
	}
	text = strings.TrimSpace(text)
	if text == "" && len(files) == 0 {
		w.fail(rw, r, http.StatusBadRequest, "nothing to send")
		return
	}
	from, status, why := w.senderName(r.Context(), rm.name, s, name)
	if status != 0 {
		w.fail(rw, r, status, why)
		return
	}
	msg := Message{ID: newID(), Time: w.now(), From: from, Text: text, Files: files}
	msg, err = w.deliver(r.Context(), rm, s, msg)
	if err != nil {
		w.fail(rw, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	ok = true
	if wantsJSON(r) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]any{"id": msg.ID, "seq": msg.Seq})
		return
	}
	http.Redirect(rw, r, "/r/"+rm.name, http.StatusSeeOther)
}

// shareOf measures the room's group against its share of the disk
// budget; without a budget the share is unbounded.
func (w *Web) shareOf(ctx context.Context, rm *room) (diskbudget.GroupUse, error) {
	if w.o.Budget == nil {
		return diskbudget.GroupUse{Group: rm.folder, Share: math.MaxInt64}, nil
	}
	return w.o.Budget.GroupUse(ctx, rm.folder)
}

// shareFull refuses an upload past the room's share: the room's files
// are the only copies, so the sweeper may not make room for them by
// evicting another room's, and the admin has to decide.
func (w *Web) shareFull(rw http.ResponseWriter, r *http.Request, rm *room, gu diskbudget.GroupUse) {
	w.log.Warn("web upload refused: the room used its share of the disk budget", "room", rm.name, "group", rm.folder,
		"share", gu.Share, "used", gu.Sole)
	w.fail(rw, r, http.StatusInsufficientStorage, fmt.Sprintf(
		"this room has used its share of botd's disk (%s); ask the admin to free space", mediaregistry.FormatSize(gu.Share)))
}

func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe) || errors.Is(err, errTooLarge)
}

// readField reads a form field of at most max bytes.
func readField(r io.Reader, max int) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return "", err
	}
	if len(b) > max {
		return "", errTooLarge
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// rawFileName is the name the browser gave a file part, as sent:
// Part.FileName would already drop directories but turns a name that is
// only ".." into "..", and the cleaning belongs in one place,
// cleanFileName. A part without a filename parameter is no file.
func rawFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return p.FileName()
	}
	return params["filename"]
}

// cleanName is the display name a sender chose: no control or format
// characters, one line, capped; "" when nothing is left.
func cleanName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case unicode.IsSpace(r), r == '\u2028', r == '\u2029':
			b.WriteByte(' ')
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == utf8.RuneError:
		default:
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	if rs := []rune(out); len(rs) > maxSenderRunes {
		out = string(rs[:maxSenderRunes])
	}
	return out
}

// deliver shows the message in the room, then hands it to the sink: first
// the room, so that an answer (which may come back before Deliver
// returns) is never shown above its question.
func (w *Web) deliver(ctx context.Context, rm *room, s *session, msg Message) (Message, error) {
	w.deliverMu.Lock()
	defer w.deliverMu.Unlock()
	if w.stopped {
		return Message{}, errors.New("botd is shutting down; send it again in a moment")
	}
	msg, err := rm.add(msg)
	if err != nil {
		return Message{}, err
	}
	sender := "web:admin"
	if s.Role == roleGuest {
		sender = "web:link:" + s.Link
	}
	in := channels.Inbound{ChatID: ChatID(rm.name), ChatName: rm.title, IsGroup: true, ID: msg.ID,
		SenderID: sender, SenderName: msg.From, Time: msg.Time}
	text := mediaregistry.Neutralize(msg.Text)
	var refs []mediaregistry.MediaReference
	for i, f := range msg.Files {
		ref := mediaregistry.MediaReference{Channel: Name, Chat: in.ChatID, MessageID: msg.ID, Sender: msg.From,
			Kind: kindOf(f.MIME), MIME: f.MIME, FileName: f.Name, Size: f.Size, Private: []byte(f.ID)}
		// A short one-line text travels as the first file's caption, the
		// way a photo with a caption arrives from Telegram; a longer one
		// stays text, which a caption would cut and fold.
		if i == 0 && text != "" && utf8.RuneCountInString(text) <= mediaregistry.MaxCaptionRunes && !strings.ContainsAny(text, "\r\n") {
			ref.Caption, text = text, ""
		}
		refs = append(refs, ref)
	}
	w.env.Compose(ctx, &in, text, refs)
	if err := w.env.Sink.Deliver(ctx, in); err != nil {
		w.log.Error("web message not stored", "room", rm.name, "id", msg.ID, "err", err)
		rm.add(Message{ID: newID(), Time: w.now(), From: "botd", System: true,
			Text: "The message above could not be stored, so the assistant will not see it. Send it again."})
		return Message{}, errors.New("the message could not be stored; send it again")
	}
	return msg, nil
}

func kindOf(mime string) mediaregistry.Kind {
	switch {
	case strings.HasPrefix(mime, "image/") && mime != "image/svg+xml":
		return mediaregistry.Image
	case strings.HasPrefix(mime, "audio/"):
		return mediaregistry.Audio
	case strings.HasPrefix(mime, "video/"):
		return mediaregistry.Video
	}
	return mediaregistry.Document
}

// file serves a file of a room: images, audio and video inline, anything
// else as a download, and never as something that could run script in
// the page's origin.
func (w *Web) file(rw http.ResponseWriter, r *http.Request) {
	rm, _ := w.authRoom(rw, r, false)
	if rm == nil {
		return
	}
	f, fi, err := w.files.open(rm.name, r.PathValue("id"))
	if err != nil {
		w.fail(rw, r, http.StatusNotFound, "this file is no longer kept")
		return
	}
	defer f.Close()
	ctype, disp := "application/octet-stream", "attachment"
	if fi.Inline() {
		ctype, disp = fi.MIME, "inline"
	}
	h := rw.Header()
	h.Set("Content-Type", ctype)
	if cd := mime.FormatMediaType(disp, map[string]string{"filename": fi.Name}); cd != "" {
		h.Set("Content-Disposition", cd)
	} else {
		h.Set("Content-Disposition", disp)
	}
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=86400")
	st, err := f.Stat()
	if err != nil {
		w.fail(rw, r, http.StatusNotFound, "this file is no longer kept")
		return
	}
	http.ServeContent(rw, r, "", st.ModTime(), f)
}
