// Package matrixfake is an in-process fake of the parts of a Matrix
// homeserver botd talks to, served over loopback HTTP: /versions,
// /account/whoami, /login, a long-polling /sync with next_batch tokens,
// sending events (idempotent by transaction id, as the spec asks),
// typing, joining, the authenticated and legacy media downloads and
// uploads, and what end-to-end encryption needs: more users with their
// own tokens and devices, /keys/upload, /keys/query, /keys/claim,
// /sendToDevice, to-device events, device_lists and one-time key counts
// in /sync, and a room's /members. It records what it was sent so tests assert on real HTTP
// traffic driven by the real mautrix client. Exported so end-to-end
// tests elsewhere in botd can reuse it.
package matrixfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Default identities the fake answers with.
const (
	UserID   = "@botd:fake.local"
	DeviceID = "FAKEDEVICE"
	Token    = "syt_fake_secret_access_token_0001"
	Password = "fake-password-secret"
	// ServerName is the server part of the mxc:// URIs the fake makes.
	ServerName = "fake.local"
)

// Event is one event in the fake's stream.
type Event struct {
	Pos     int
	Room    string
	ID      string
	Type    string
	Sender  string
	State   *string // state key; nil for a message event
	Content json.RawMessage
	TS      int64
	// Invite marks a stripped invite for the bot rather than a room event.
	Invite bool
	// ToUser and ToDevice address a to-device event (Room is empty);
	// ToDevice "*" is every device of ToUser.
	ToUser, ToDevice string
	// KeysChanged marks a change of that user's device keys: /sync
	// reports it in device_lists.changed.
	KeysChanged string
}

// account is who a token belongs to.
type account struct{ user, device string }

// deviceKeys is what one device uploaded to /keys/upload.
type deviceKeys struct {
	keys     json.RawMessage            // the signed device_keys object
	otks     map[string]json.RawMessage // "signed_curve25519:AAAAAQ" → the key object
	fallback map[string]json.RawMessage
	uploads  int // uploads that carried device_keys
}

// Send is one PUT /send the fake accepted (retries of a transaction
// included, with Repeat set).
type Send struct {
	Room, Type, Txn, EventID string
	Content                  json.RawMessage
	Repeat                   bool
}

// Typing is one PUT /typing.
type Typing struct {
	Room    string
	On      bool
	Timeout int
}

type media struct {
	data        []byte
	contentType string
}

// Server is the fake homeserver.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced whenever anything is recorded
	events    []Event
	joined    map[string]bool
	txns      map[string]string // txn → event id
	sends     []Send
	typing    []Typing
	media     map[string]media // "server/id"
	uploads   int
	syncs     []string // since of every /sync, "" for an initial one
	logins    int
	noAuthV1  bool
	failSend  int // sends stored and then answered 502
	failSync  int // syncs answered 503
	dl        map[string]int
	nextID    int
	tokens    map[string]account
	keys      map[string]*deviceKeys // "user|device"
	toDevTxn  map[string]bool        // "sender|txn" of sendToDevice calls done
	hold      map[string][]Event     // to-device events held back per user
	stateGets int
	redacted  []string // event ids redacted by the bot
}

// New starts a fake homeserver on loopback, stopped when the test ends.
func New(t testing.TB) *Server {
	s := &Server{changed: make(chan struct{}), joined: map[string]bool{}, txns: map[string]string{},
		media: map[string]media{}, dl: map[string]int{}, tokens: map[string]account{Token: {UserID, DeviceID}},
		keys: map[string]*deviceKeys{}, toDevTxn: map[string]bool{}, hold: map[string][]Event{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_matrix/client/versions", s.versions)
	mux.HandleFunc("GET /_matrix/client/v3/account/whoami", s.auth(s.whoami))
	mux.HandleFunc("POST /_matrix/client/v3/login", s.login)
	mux.HandleFunc("GET /_matrix/client/v3/sync", s.auth(s.sync))
	mux.HandleFunc("PUT /_matrix/client/v3/rooms/{room}/send/{type}/{txn}", s.auth(s.send))
	mux.HandleFunc("PUT /_matrix/client/v3/rooms/{room}/typing/{user}", s.auth(s.typingCall))
	mux.HandleFunc("PUT /_matrix/client/v3/rooms/{room}/redact/{event}/{txn}", s.auth(s.redact))
	mux.HandleFunc("POST /_matrix/client/v3/join/{room}", s.auth(s.join))
	mux.HandleFunc("POST /_matrix/client/v3/rooms/{room}/join", s.auth(s.join))
	mux.HandleFunc("GET /_matrix/client/v1/media/download/{server}/{id}", s.downloadV1)
	mux.HandleFunc("GET /_matrix/media/v3/download/{server}/{id}", s.downloadV3)
	mux.HandleFunc("POST /_matrix/media/v3/upload", s.auth(s.upload))
	mux.HandleFunc("POST /_matrix/client/v3/keys/upload", s.auth(s.keysUpload))
	mux.HandleFunc("POST /_matrix/client/v3/keys/query", s.auth(s.keysQuery))
	mux.HandleFunc("POST /_matrix/client/v3/keys/claim", s.auth(s.keysClaim))
	mux.HandleFunc("PUT /_matrix/client/v3/sendToDevice/{type}/{txn}", s.auth(s.sendToDevice))
	mux.HandleFunc("GET /_matrix/client/v3/rooms/{room}/members", s.auth(s.members))
	mux.HandleFunc("GET /_matrix/client/v3/rooms/{room}/state/{type}/{key...}", s.auth(s.stateEvent))
	mux.HandleFunc("GET /_matrix/client/v3/rooms/{room}/state/{type}", s.auth(s.stateEvent))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "M_UNRECOGNIZED", "unrecognized request")
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// URL is the homeserver's client API base URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server; long-polling syncs end.
func (s *Server) Close() {
	s.mu.Lock()
	s.bump()
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// bump wakes long polls and waiters; mu is held.
func (s *Server) bump() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait blocks until cond holds (checked after every change the fake
// records) or a guard of 20 seconds passes, and fails the test then.
// cond may call the fake's methods.
func (s *Server) Wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	for {
		s.mu.Lock()
		ch := s.changed // taken first: a change after it closes it
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("matrixfake: gave up waiting for %s", what)
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, errcode, msg string) {
	writeJSON(w, code, map[string]string{"errcode": errcode, "error": msg})
}

func (s *Server) authorized(r *http.Request) bool {
	_, ok := s.who(r)
	return ok
}

// who is the account of the request's token.
func (s *Server) who(r *http.Request) (account, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return account{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.tokens[tok]
	return a, ok
}

// AddUser gives another user (the other side of an encrypted chat, say)
// an access token for device, and returns it.
func (s *Server) AddUser(user, device string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := fmt.Sprintf("syt_fake_%d_%s", len(s.tokens), device)
	s.tokens[tok] = account{user, device}
	return tok
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			writeErr(w, http.StatusUnauthorized, "M_MISSING_TOKEN", "missing access token")
			return
		}
		if !s.authorized(r) {
			writeErr(w, http.StatusUnauthorized, "M_UNKNOWN_TOKEN", "unknown access token")
			return
		}
		h(w, r)
	}
}

func (s *Server) versions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"versions": []string{"v1.11", "v1.12"}})
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	a, _ := s.who(r)
	writeJSON(w, http.StatusOK, map[string]string{"user_id": a.user, "device_id": a.device})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Type       string `json:"type"`
		Identifier struct {
			User string `json:"user"`
		} `json:"identifier"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Type != "m.login.password" {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad login")
		return
	}
	if req.Password != Password || (req.Identifier.User != UserID && req.Identifier.User != "botd") {
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "invalid password")
		return
	}
	s.mu.Lock()
	s.logins++
	s.bump()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"user_id": UserID, "device_id": DeviceID, "access_token": Token})
}

// Logins counts password logins.
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// add appends an event to the stream; mu is held.
func (s *Server) add(e Event) Event {
	s.nextID++
	e.Pos = len(s.events) + 1
	if e.ID == "" {
		e.ID = fmt.Sprintf("$fake%d", s.nextID)
	}
	if e.TS == 0 {
		e.TS = time.Now().UnixMilli()
	}
	s.events = append(s.events, e)
	s.bump()
	return e
}

func mustJSON(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Join makes the bot a member of room, named name, with the given
// members (user id → display name) besides itself.
func (s *Server) Join(room, name string, members map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joined[room] = true
	empty := ""
	if name != "" {
		s.add(Event{Room: room, Type: "m.room.name", Sender: UserID, State: &empty, Content: mustJSON(map[string]string{"name": name})})
	}
	me := UserID
	s.add(Event{Room: room, Type: "m.room.member", Sender: UserID, State: &me, Content: mustJSON(map[string]string{"membership": "join", "displayname": "botd"})})
	for u, dn := range members {
		u := u
		s.add(Event{Room: room, Type: "m.room.member", Sender: u, State: &u, Content: mustJSON(map[string]string{"membership": "join", "displayname": dn})})
	}
}

// Post adds a message event from sender to room and returns its id.
func (s *Server) Post(room, sender string, content any) string {
	return s.PostType(room, "m.room.message", sender, content)
}

// PostType adds a message event of any type.
func (s *Server) PostType(room, typ, sender string, content any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(Event{Room: room, Type: typ, Sender: sender, Content: mustJSON(content)}).ID
}

// SetState adds a state event.
func (s *Server) SetState(room, typ, sender, key string, content any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(Event{Room: room, Type: typ, Sender: sender, State: &key, Content: mustJSON(content)})
}

// Invite invites the bot to room.
func (s *Server) Invite(room, inviter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	me := UserID
	s.add(Event{Room: room, Type: "m.room.member", Sender: inviter, State: &me, Invite: true,
		Content: mustJSON(map[string]string{"membership": "invite"})})
}

// Joined reports whether the bot is in room.
func (s *Server) Joined(room string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joined[room]
}

func (e Event) wire() map[string]any {
	m := map[string]any{"event_id": e.ID, "type": e.Type, "sender": e.Sender, "origin_server_ts": e.TS, "content": e.Content}
	if e.State != nil {
		m["state_key"] = *e.State
	}
	return m
}

// sync answers /sync: every event after since (all of them for an
// initial sync), rooms the bot joined, invites pending, the to-device
// events addressed to the caller's device, the users whose device keys
// changed, and the device's count of one-time keys left. Users other
// than the bot see no rooms (their tests read the stream with Events).
// With nothing new it holds the request up to the timeout parameter.
func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	since := r.URL.Query().Get("since")
	from := 0
	if since != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(since, "s"))
		if err != nil || n < 0 {
			writeErr(w, http.StatusBadRequest, "M_INVALID_PARAM", "bad since token")
			return
		}
		from = n
	}
	me, _ := s.who(r)
	timeout, _ := strconv.Atoi(r.URL.Query().Get("timeout"))
	s.mu.Lock()
	if me.user == UserID {
		s.syncs = append(s.syncs, since)
	}
	fail := s.failSync > 0 && me.user == UserID
	if fail {
		s.failSync--
	}
	s.bump()
	s.mu.Unlock()
	if fail {
		writeErr(w, http.StatusServiceUnavailable, "M_UNKNOWN", "homeserver restarting")
		return
	}
	deadline := time.NewTimer(time.Duration(max(timeout, 0)) * time.Millisecond)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		evs := append([]Event(nil), s.events[min(from, len(s.events)):]...)
		joined := make(map[string]bool, len(s.joined))
		if me.user == UserID {
			for k, v := range s.joined {
				joined[k] = v
			}
		}
		otks := 0
		if dk := s.keys[me.user+"|"+me.device]; dk != nil {
			otks = len(dk.otks)
		}
		pos := len(s.events)
		s.mu.Unlock()
		if len(evs) > 0 || timeout <= 0 {
			writeJSON(w, http.StatusOK, syncBody(me, pos, evs, joined, otks))
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			writeJSON(w, http.StatusOK, syncBody(me, pos, nil, joined, otks))
			return
		case <-r.Context().Done():
			return
		}
	}
}

func syncBody(me account, pos int, evs []Event, joined map[string]bool, otks int) map[string]any {
	join := map[string]any{}
	invite := map[string]any{}
	type roomEvents struct{ timeline []any }
	rooms := map[string]*roomEvents{}
	toDevice := []any{}
	changed := []string{}
	for _, e := range evs {
		switch {
		case e.KeysChanged != "":
			changed = append(changed, e.KeysChanged)
			continue
		case e.ToUser != "":
			if e.ToUser == me.user && (e.ToDevice == me.device || e.ToDevice == "*") {
				toDevice = append(toDevice, map[string]any{"type": e.Type, "sender": e.Sender, "content": e.Content})
			}
			continue
		}
		if e.Invite {
			if me.user == UserID && !joined[e.Room] {
				invite[e.Room] = map[string]any{"invite_state": map[string]any{"events": []any{e.wire()}}}
			}
			continue
		}
		if !joined[e.Room] {
			continue
		}
		re := rooms[e.Room]
		if re == nil {
			re = &roomEvents{}
			rooms[e.Room] = re
		}
		re.timeline = append(re.timeline, e.wire())
	}
	for room, re := range rooms {
		join[room] = map[string]any{"timeline": map[string]any{"events": re.timeline}}
	}
	return map[string]any{
		"next_batch":                 "s" + strconv.Itoa(pos),
		"rooms":                      map[string]any{"join": join, "invite": invite},
		"to_device":                  map[string]any{"events": toDevice},
		"device_lists":               map[string]any{"changed": changed},
		"device_one_time_keys_count": map[string]int{"signed_curve25519": otks},
	}
}

// Syncs lists the since parameter of every /sync so far.
func (s *Server) Syncs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.syncs...)
}

// SyncedFrom reports whether a /sync asked for events after since.
func (s *Server) SyncedFrom(since string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.syncs {
		if x == since {
			return true
		}
	}
	return false
}

// Position is the next_batch token of the stream as it is now.
func (s *Server) Position() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "s" + strconv.Itoa(len(s.events))
}

// FailSyncs makes the next n syncs answer 503, as a restarting
// homeserver does.
func (s *Server) FailSyncs(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failSync = n
}

// FailSends makes the next n sends store their event and then answer
// 502, as a proxy that lost the answer would: the client retries with
// the same transaction id and must get the same event, not a second one.
func (s *Server) FailSends(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failSend = n
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	room, typ, txn := r.PathValue("room"), r.PathValue("type"), r.PathValue("txn")
	body, err := io.ReadAll(io.LimitReader(r.Body, 65536+1))
	if err != nil || len(body) > 65536 || !json.Valid(body) {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad event content")
		return
	}
	s.mu.Lock()
	if !s.joined[room] {
		s.mu.Unlock()
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "not in room")
		return
	}
	evID, repeat := s.txns[txn]
	if !repeat {
		evID = s.add(Event{Room: room, Type: typ, Sender: UserID, Content: body}).ID
		s.txns[txn] = evID
	}
	s.sends = append(s.sends, Send{Room: room, Type: typ, Txn: txn, EventID: evID, Content: body, Repeat: repeat})
	fail := s.failSend > 0
	if fail {
		s.failSend--
	}
	s.bump()
	s.mu.Unlock()
	if fail {
		writeErr(w, http.StatusBadGateway, "M_UNKNOWN", "bad gateway")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"event_id": evID})
}

func (s *Server) redact(w http.ResponseWriter, r *http.Request) {
	room, evID := r.PathValue("room"), r.PathValue("event")
	s.mu.Lock()
	if !s.joined[room] {
		s.mu.Unlock()
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "not in room")
		return
	}
	s.redacted = append(s.redacted, evID)
	red := s.add(Event{Room: room, Type: "m.room.redaction", Sender: UserID, Content: mustJSON(map[string]string{"redacts": evID})})
	s.bump()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"event_id": red.ID})
}

// Redacted lists the event ids the bot redacted, in order.
func (s *Server) Redacted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.redacted...)
}

// Sends lists every PUT /send, retries included.
func (s *Server) Sends() []Send {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Send(nil), s.sends...)
}

// Events lists the events of room of type typ the stream holds (what a
// client would see), in order.
func (s *Server) Events(room, typ string) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, e := range s.events {
		if e.Room == room && e.Type == typ && !e.Invite {
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) typingCall(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Typing  bool `json:"typing"`
		Timeout int  `json:"timeout"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad typing body")
		return
	}
	if r.PathValue("user") != UserID {
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "cannot set another user's typing")
		return
	}
	s.mu.Lock()
	s.typing = append(s.typing, Typing{Room: r.PathValue("room"), On: req.Typing, Timeout: req.Timeout})
	s.bump()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{})
}

// TypingCalls lists every PUT /typing.
func (s *Server) TypingCalls() []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Typing(nil), s.typing...)
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	s.mu.Lock()
	invited := false
	for _, e := range s.events {
		if e.Invite && e.Room == room {
			invited = true
		}
	}
	if !invited && !s.joined[room] {
		s.mu.Unlock()
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "not invited")
		return
	}
	s.joined[room] = true
	me := UserID
	s.add(Event{Room: room, Type: "m.room.member", Sender: UserID, State: &me, Content: mustJSON(map[string]string{"membership": "join"})})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"room_id": room})
}

// AddMedia stores bytes as the homeserver's media and returns the mxc URI.
func (s *Server) AddMedia(data []byte, contentType string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	mid := fmt.Sprintf("media%d", s.nextID)
	s.media[ServerName+"/"+mid] = media{data: data, contentType: contentType}
	return "mxc://" + ServerName + "/" + mid
}

// ReplaceMedia changes what an mxc URI serves (a tampered file).
func (s *Server) ReplaceMedia(mxc string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.TrimPrefix(mxc, "mxc://")
	m := s.media[key]
	m.data = data
	s.media[key] = m
}

// Media returns the bytes an mxc URI serves (an upload, say).
func (s *Server) Media(mxc string) ([]byte, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.media[strings.TrimPrefix(mxc, "mxc://")]
	return m.data, m.contentType, ok
}

// LegacyMediaOnly makes the server answer the authenticated media
// endpoints 404 M_UNRECOGNIZED, as one older than Matrix 1.11 does.
func (s *Server) LegacyMediaOnly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAuthV1 = true
}

// Downloads counts the downloads served by endpoint: "v1" (the
// authenticated one) or "v3" (legacy).
func (s *Server) Downloads(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dl[endpoint]
}

func (s *Server) downloadV1(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	legacy := s.noAuthV1
	s.mu.Unlock()
	if legacy {
		writeErr(w, http.StatusNotFound, "M_UNRECOGNIZED", "unrecognized request")
		return
	}
	if !s.authorized(r) {
		writeErr(w, http.StatusUnauthorized, "M_MISSING_TOKEN", "authenticated media needs a token")
		return
	}
	s.serveMedia(w, r, "v1")
}

func (s *Server) downloadV3(w http.ResponseWriter, r *http.Request) { s.serveMedia(w, r, "v3") }

func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request, endpoint string) {
	key := r.PathValue("server") + "/" + r.PathValue("id")
	s.mu.Lock()
	m, ok := s.media[key]
	if ok {
		s.dl[endpoint]++
		s.bump()
	}
	s.mu.Unlock()
	if !ok {
		writeErr(w, http.StatusNotFound, "M_NOT_FOUND", "media not found")
		return
	}
	w.Header().Set("Content-Type", m.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(m.data)))
	_, _ = w.Write(m.data)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 50<<20))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "M_UNKNOWN", "upload failed")
		return
	}
	mxc := s.AddMedia(data, r.Header.Get("Content-Type"))
	s.mu.Lock()
	s.uploads++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"content_uri": mxc})
}

// Uploads counts media uploads.
func (s *Server) Uploads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploads
}

// keysUpload stores the caller's device keys, one-time keys and
// fallback keys, and answers how many one-time keys it holds. New or
// changed device keys are reported to every syncing client in
// device_lists.changed.
func (s *Server) keysUpload(w http.ResponseWriter, r *http.Request) {
	me, _ := s.who(r)
	var req struct {
		DeviceKeys   json.RawMessage            `json:"device_keys"`
		OneTimeKeys  map[string]json.RawMessage `json:"one_time_keys"`
		FallbackKeys map[string]json.RawMessage `json:"fallback_keys"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad keys upload")
		return
	}
	s.mu.Lock()
	k := me.user + "|" + me.device
	dk := s.keys[k]
	if dk == nil {
		dk = &deviceKeys{otks: map[string]json.RawMessage{}, fallback: map[string]json.RawMessage{}}
		s.keys[k] = dk
	}
	if len(req.DeviceKeys) > 0 && string(req.DeviceKeys) != "null" {
		dk.keys = req.DeviceKeys
		dk.uploads++
		s.add(Event{KeysChanged: me.user, Type: "keys_changed"})
	}
	for id, v := range req.OneTimeKeys {
		dk.otks[id] = v
	}
	if len(req.FallbackKeys) > 0 {
		dk.fallback = req.FallbackKeys
	}
	n := len(dk.otks)
	s.bump()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"one_time_key_counts": map[string]int{"signed_curve25519": n}})
}

// keysQuery answers the device keys of the users asked for (every
// device when the list is empty).
func (s *Server) keysQuery(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceKeys map[string][]string `json:"device_keys"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad keys query")
		return
	}
	out := map[string]map[string]json.RawMessage{}
	s.mu.Lock()
	for user, devices := range req.DeviceKeys {
		out[user] = map[string]json.RawMessage{}
		for k, dk := range s.keys {
			u, dev, _ := strings.Cut(k, "|")
			if u != user || dk.keys == nil || (len(devices) > 0 && !contains(devices, dev)) {
				continue
			}
			out[user][dev] = dk.keys
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"device_keys": out, "failures": map[string]any{}})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// keysClaim hands out one one-time key per device asked for, each once,
// and the device's fallback key when none is left.
func (s *Server) keysClaim(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OneTimeKeys map[string]map[string]string `json:"one_time_keys"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad keys claim")
		return
	}
	out := map[string]map[string]map[string]json.RawMessage{}
	s.mu.Lock()
	for user, devices := range req.OneTimeKeys {
		for dev, alg := range devices {
			dk := s.keys[user+"|"+dev]
			if dk == nil {
				continue
			}
			id, key := pick(dk.otks, alg)
			if id != "" {
				delete(dk.otks, id)
			} else if id, key = pick(dk.fallback, alg); id == "" {
				continue
			}
			if out[user] == nil {
				out[user] = map[string]map[string]json.RawMessage{}
			}
			out[user][dev] = map[string]json.RawMessage{id: key}
		}
	}
	s.bump()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"one_time_keys": out, "failures": map[string]any{}})
}

// pick is the first key (in key id order) of algorithm alg.
func pick(keys map[string]json.RawMessage, alg string) (string, json.RawMessage) {
	best := ""
	for id := range keys {
		if strings.HasPrefix(id, alg+":") && (best == "" || id < best) {
			best = id
		}
	}
	if best == "" {
		return "", nil
	}
	return best, keys[best]
}

// sendToDevice queues the messages for the devices they are addressed
// to, once per transaction id.
func (s *Server) sendToDevice(w http.ResponseWriter, r *http.Request) {
	me, _ := s.who(r)
	var req struct {
		Messages map[string]map[string]json.RawMessage `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "M_BAD_JSON", "bad sendToDevice body")
		return
	}
	s.mu.Lock()
	txn := me.user + "|" + r.PathValue("txn")
	if !s.toDevTxn[txn] {
		s.toDevTxn[txn] = true
		for user, devices := range req.Messages {
			for dev, content := range devices {
				e := Event{Type: r.PathValue("type"), Sender: me.user, ToUser: user, ToDevice: dev, Content: content}
				if held, ok := s.hold[user]; ok {
					s.hold[user] = append(held, e)
					continue
				}
				s.add(e)
			}
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{})
}

// HoldToDevice holds back the to-device events sent to user from now
// on, as a slow federation would: the room events they belong with
// arrive first. ReleaseToDevice delivers them.
func (s *Server) HoldToDevice(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hold[user]; !ok {
		s.hold[user] = []Event{}
	}
}

// ReleaseToDevice delivers the to-device events held for user and stops
// holding them; it returns how many there were.
func (s *Server) ReleaseToDevice(user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.hold[user]
	delete(s.hold, user)
	for _, e := range held {
		s.add(e)
	}
	return len(held)
}

// ToDevice lists the to-device events of type typ sent to user so far.
func (s *Server) ToDevice(user, typ string) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, e := range s.events {
		if e.ToUser == user && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// DeviceKeys returns the device keys user's device uploaded (nil before
// any) and how many uploads carried device keys.
func (s *Server) DeviceKeys(user, device string) (json.RawMessage, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dk := s.keys[user+"|"+device]
	if dk == nil {
		return nil, 0
	}
	return dk.keys, dk.uploads
}

// OneTimeKeys counts the one-time keys user's device has on the server.
func (s *Server) OneTimeKeys(user, device string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dk := s.keys[user+"|"+device]; dk != nil {
		return len(dk.otks)
	}
	return 0
}

// members answers a room's member events, the latest per user.
func (s *Server) members(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	s.mu.Lock()
	latest := map[string]Event{}
	var order []string
	for _, e := range s.events {
		if e.Room != room || e.Type != "m.room.member" || e.State == nil || e.Invite {
			continue
		}
		if _, ok := latest[*e.State]; !ok {
			order = append(order, *e.State)
		}
		latest[*e.State] = e
	}
	joined := s.joined[room]
	s.mu.Unlock()
	if !joined {
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "not in room")
		return
	}
	chunk := make([]any, 0, len(order))
	for _, u := range order {
		ev := latest[u].wire()
		ev["room_id"] = room
		chunk = append(chunk, ev)
	}
	writeJSON(w, http.StatusOK, map[string]any{"chunk": chunk})
}

// stateEvent answers the content of a room's current state event of a
// type and state key, or 404 M_NOT_FOUND.
func (s *Server) stateEvent(w http.ResponseWriter, r *http.Request) {
	room, typ, key := r.PathValue("room"), r.PathValue("type"), r.PathValue("key")
	s.mu.Lock()
	s.stateGets++
	joined := s.joined[room]
	var content json.RawMessage
	for _, e := range s.events {
		if e.Room == room && e.Type == typ && e.State != nil && *e.State == key && !e.Invite {
			content = e.Content
		}
	}
	s.mu.Unlock()
	switch {
	case !joined:
		writeErr(w, http.StatusForbidden, "M_FORBIDDEN", "not in room")
	case content == nil:
		writeErr(w, http.StatusNotFound, "M_NOT_FOUND", "event not found")
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(content)
	}
}

// StateGets counts the state event reads.
func (s *Server) StateGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateGets
}
