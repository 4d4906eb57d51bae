// Package slackfake is an in-process fake of the parts of Slack botd talks
// to: the Web API methods the channel calls, a Socket Mode WebSocket, the
// private file host and the external upload URL. It records what it was
// sent so tests can assert on real HTTP traffic instead of mocks. It is
// exported so end-to-end tests elsewhere in botd can reuse it.
package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Default identities the fake answers with.
const (
	BotToken  = "xoxb-fake-bot-token"
	AppToken  = "xapp-fake-app-token"
	BotUserID = "UBOT0001"
	BotID     = "BBOT0001"
	TeamID    = "TFAKE001"
)

// Post is one chat.postMessage the fake received.
type Post struct {
	Channel  string
	Text     string
	ThreadTS string
	TS       string // the ts the fake assigned
}

// Call is one request to a message-writing method (chat.postMessage,
// chat.update, chat.delete, chat.startStream, chat.appendStream,
// chat.stopStream, assistant.threads.setStatus), in the order received,
// answered ok or not.
type Call struct {
	Method   string
	Channel  string
	TS       string // the message the call was about (assigned, for posts and starts)
	ThreadTS string
	Text     string // text (mrkdwn) or markdown_text (streams)
	Status   string // assistant.threads.setStatus
	// Mrkdwn is the mrkdwn field as sent ("" when left to Slack's default,
	// which is true).
	Mrkdwn        string
	RecipientUser string
	RecipientTeam string
	Error         string // the error answered, "" when ok
}

// Message is a message as the fake holds it now: its text after every
// update, append and stop.
type Message struct {
	Channel   string
	TS        string
	ThreadTS  string
	Text      string
	Streaming bool // started by chat.startStream and not stopped yet
}

// MaxMarkdownText is the longest markdown_text a streaming method takes.
const MaxMarkdownText = 12000

// Upload is one completed external upload.
type Upload struct {
	FileID         string
	Filename       string
	Title          string
	Channel        string
	ThreadTS       string
	InitialComment string
	Body           []byte
}

// FileRequest is one request to a hosted private file.
type FileRequest struct {
	Path          string
	Authorization string
}

// Server is the fake. Create it with New; it stops with the test.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:PORT.
	URL string

	srv      *httptest.Server
	upgrader websocket.Upgrader

	mu          sync.Mutex
	authError   string
	calls       map[string]int
	posts       []Post
	postErr     string
	failing     map[string]string // method -> error code
	log         []Call
	messages    map[string]*Message // ts -> message
	signinFiles bool
	redirects   map[string]string          // path -> Location
	files       map[string]hostedFile      // path -> content
	fileInfo    map[string]json.RawMessage // file id -> files.info "file" object
	fileReqs    []FileRequest
	pending     map[string]pendingUpload // upload file id -> upload so far
	uploads     []Upload
	users       map[string]string
	channels    map[string]string
	conn        *wsConn
	connCh      chan struct{} // closed and replaced on each new connection
	acks        map[string]chan struct{}
	seq         int
	connections int
	// reactions are the bot's reactions now, by channel and ts;
	// reactionLog every reactions.add and reactions.remove answered ok.
	reactions   map[[2]string][]string
	reactionLog []ReactionCall
}

// ReactionCall is one reactions.add or reactions.remove that succeeded.
type ReactionCall struct {
	Method    string // "reactions.add" or "reactions.remove"
	Channel   string
	Timestamp string
	Name      string
	// Logged is how many message-writing calls (Log) came before it.
	Logged int
}

type hostedFile struct {
	contentType string
	body        []byte
}

type pendingUpload struct {
	filename string
	body     []byte
}

type wsConn struct {
	c  *websocket.Conn
	mu sync.Mutex // gorilla allows one concurrent writer
}

func (w *wsConn) writeJSON(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.c.WriteJSON(v)
}

// New starts a fake on loopback and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		calls:     map[string]int{},
		failing:   map[string]string{},
		messages:  map[string]*Message{},
		files:     map[string]hostedFile{},
		redirects: map[string]string{},
		fileInfo:  map[string]json.RawMessage{},
		pending:   map[string]pendingUpload{},
		users:     map[string]string{},
		channels:  map[string]string{},
		acks:      map[string]chan struct{}{},
		connCh:    make(chan struct{}),
		// Slack's client sends Origin: https://api.slack.com.
		upgrader: websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("/ws", s.ws)
	mux.HandleFunc("/upload/", s.upload)
	mux.HandleFunc("/files-pri/", s.file)
	mux.HandleFunc("/signin", func(w http.ResponseWriter, r *http.Request) {
		s.count("signin")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body>Sign in to Slack</body></html>")
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close drops the WebSocket and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.c.Close()
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// APIURL is what to put in channels.slack.api_url.
func (s *Server) APIURL() string { return s.URL + "/api/" }

// FailAuth makes auth.test answer with the Slack error code (e.g. "invalid_auth").
func (s *Server) FailAuth(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authError = code
}

// FailPosts makes chat.postMessage answer with the Slack error code.
func (s *Server) FailPosts(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.postErr = code
}

// FailMethod makes a Web API method answer with the Slack error code, e.g.
// FailMethod("chat.startStream", "unknown_method") for a workspace without
// streaming; an empty code makes it work again.
func (s *Server) FailMethod(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.failing, method)
		return
	}
	s.failing[method] = code
}

// Log returns the message-writing calls so far, in order.
func (s *Server) Log() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.log...)
}

// Message returns the message with ts as it reads now; false once deleted
// or never posted.
func (s *Server) Message(ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[ts]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// Thread returns the messages in channel's thread under threadTS (every
// top-level message when threadTS is ""), oldest first.
func (s *Server) Thread(channel, threadTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.Channel == channel && m.ThreadTS == threadTS {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(a, b Message) int { return strings.Compare(a.TS, b.TS) })
	return out
}

// SetUser and SetChannel give users.info / conversations.info a name to return.
func (s *Server) SetUser(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[id] = name
}

func (s *Server) SetChannel(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[id] = name
}

// HostFile serves body at a private URL that demands the bot token, and
// returns the URL. Without the token the fake redirects to an HTML sign-in
// page, as files.slack.com does.
func (s *Server) HostFile(name, contentType string, body []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	path := fmt.Sprintf("/files-pri/%s-F%04d/%s", TeamID, s.seq, name)
	s.files[path] = hostedFile{contentType: contentType, body: body}
	return s.URL + path
}

// HostRedirect serves a private URL that redirects to target, and returns it.
func (s *Server) HostRedirect(name, target string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	path := fmt.Sprintf("/files-pri/%s-F%04d/%s", TeamID, s.seq, name)
	s.redirects[path] = target
	return s.URL + path
}

// SignInFiles makes every hosted file redirect to the HTML sign-in page,
// as Slack does when the token lacks the files:read scope.
func (s *Server) SignInFiles(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signinFiles = on
}

// SetFileInfo sets the "file" object files.info returns for id.
func (s *Server) SetFileInfo(id string, file any) {
	b, err := json.Marshal(file)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileInfo[id] = b
}

// Calls reports how many requests a Web API method (e.g. "chat.postMessage")
// or endpoint ("ws", "upload", "files", "signin") received.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// AllCalls reports how many requests the fake received in all: every
// Web API method and endpoint.
func (s *Server) AllCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// Posts returns the chat.postMessage calls so far.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Uploads returns the completed uploads so far.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

// FileRequests returns every request made to hosted files.
func (s *Server) FileRequests() []FileRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FileRequest(nil), s.fileReqs...)
}

// Connections reports how many Socket Mode connections were accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// DropConnection closes the current Socket Mode connection, as Slack does
// from time to time; the client is expected to reconnect.
func (s *Server) DropConnection() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		_ = s.conn.c.Close()
		s.conn = nil
	}
}

// WaitConnected waits until at least n Socket Mode connections were accepted.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.connections, s.connCh
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for socket mode connection %d (have %d): %w", n, got, ctx.Err())
		}
	}
}

// SendEvent wraps an inner event (e.g. a "message" object) in an
// event_callback and an events_api envelope, sends it over the Socket Mode
// connection and waits for the client's ack.
func (s *Server) SendEvent(ctx context.Context, event any) error {
	// The client may see its connection before the fake has recorded it.
	var conn *wsConn
	for conn == nil {
		s.mu.Lock()
		conn = s.conn
		ch := s.connCh
		s.mu.Unlock()
		if conn != nil {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("slackfake: no socket mode connection: %w", ctx.Err())
		}
	}
	s.mu.Lock()
	s.seq++
	envID := fmt.Sprintf("env-%d", s.seq)
	ack := make(chan struct{})
	s.acks[envID] = ack
	s.mu.Unlock()
	env := map[string]any{
		"envelope_id":              envID,
		"type":                     "events_api",
		"accepts_response_payload": false,
		"retry_attempt":            0,
		"payload":                  Callback(event),
	}
	if err := conn.writeJSON(env); err != nil {
		return fmt.Errorf("slackfake: send event: %w", err)
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("slackfake: waiting for ack of %s: %w", envID, ctx.Err())
	}
}

var eventSeq struct {
	sync.Mutex
	n int
}

// Callback wraps an inner event in the outer event_callback Slack sends,
// for Socket Mode envelopes and Events API HTTP bodies alike.
func Callback(event any) map[string]any {
	eventSeq.Lock()
	eventSeq.n++
	id := fmt.Sprintf("Ev%08d", eventSeq.n)
	eventSeq.Unlock()
	return map[string]any{
		"token":      "verification-token",
		"team_id":    TeamID,
		"api_app_id": "AFAKE001",
		"type":       "event_callback",
		"event_id":   id,
		"event_time": time.Now().Unix(),
		"event":      event,
	}
}

func (s *Server) count(k string) {
	s.mu.Lock()
	s.calls[k]++
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func slackErr(w http.ResponseWriter, code string) {
	writeJSON(w, map[string]any{"ok": false, "error": code})
}

func token(r *http.Request) string {
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return v
	}
	return r.FormValue("token")
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	s.count(method)
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tok := token(r)
	if method == "apps.connections.open" {
		if tok != AppToken {
			slackErr(w, "invalid_auth")
			return
		}
		writeJSON(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.URL, "http") + "/ws"})
		return
	}
	if tok != BotToken {
		slackErr(w, "invalid_auth")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if code, ok := s.failing[method]; ok {
		s.log = append(s.log, Call{Method: method, Channel: r.FormValue("channel"), TS: r.FormValue("ts"), Error: code})
		slackErr(w, code)
		return
	}
	if s.chatMethod(w, r, method) {
		return
	}
	switch method {
	case "auth.test":
		if s.authError != "" {
			slackErr(w, s.authError)
			return
		}
		writeJSON(w, map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake",
			"user": "botd", "team_id": TeamID, "user_id": BotUserID, "bot_id": BotID})
	case "chat.postMessage":
		if s.postErr != "" {
			slackErr(w, s.postErr)
			return
		}
		s.seq++
		p := Post{Channel: r.FormValue("channel"), Text: r.FormValue("text"), ThreadTS: r.FormValue("thread_ts"),
			TS: fmt.Sprintf("1700000000.%06d", s.seq)}
		s.posts = append(s.posts, p)
		s.messages[p.TS] = &Message{Channel: p.Channel, TS: p.TS, ThreadTS: p.ThreadTS, Text: p.Text}
		s.log = append(s.log, Call{Method: method, Channel: p.Channel, TS: p.TS, ThreadTS: p.ThreadTS,
			Text: p.Text, Mrkdwn: r.FormValue("mrkdwn")})
		writeJSON(w, map[string]any{"ok": true, "channel": p.Channel, "ts": p.TS,
			"message": map[string]any{"text": p.Text, "ts": p.TS}})
	case "reactions.add", "reactions.remove":
		s.react(w, method, r.FormValue("channel"), r.FormValue("timestamp"), r.FormValue("name"))
	case "files.info":
		f, ok := s.fileInfo[r.FormValue("file")]
		if !ok {
			slackErr(w, "file_not_found")
			return
		}
		writeJSON(w, map[string]any{"ok": true, "file": f, "comments": []any{}, "paging": map[string]any{}})
	case "files.getUploadURLExternal":
		s.seq++
		id := fmt.Sprintf("FUP%04d", s.seq)
		s.pending[id] = pendingUpload{filename: r.FormValue("filename")}
		writeJSON(w, map[string]any{"ok": true, "upload_url": s.URL + "/upload/" + id, "file_id": id})
	case "files.completeUploadExternal":
		var files []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal([]byte(r.FormValue("files")), &files); err != nil || len(files) == 0 {
			slackErr(w, "invalid_arguments")
			return
		}
		var out []map[string]any
		for _, f := range files {
			p, ok := s.pending[f.ID]
			if !ok {
				slackErr(w, "file_not_found")
				return
			}
			delete(s.pending, f.ID)
			s.uploads = append(s.uploads, Upload{FileID: f.ID, Filename: p.filename, Title: f.Title,
				Channel: r.FormValue("channel_id"), ThreadTS: r.FormValue("thread_ts"),
				InitialComment: r.FormValue("initial_comment"), Body: p.body})
			out = append(out, map[string]any{"id": f.ID, "title": f.Title})
		}
		writeJSON(w, map[string]any{"ok": true, "files": out})
	case "users.info":
		name, ok := s.users[r.FormValue("user")]
		if !ok {
			slackErr(w, "user_not_found")
			return
		}
		writeJSON(w, map[string]any{"ok": true, "user": map[string]any{"id": r.FormValue("user"), "name": name,
			"real_name": name, "profile": map[string]any{"display_name": name, "real_name": name}}})
	case "conversations.info":
		name, ok := s.channels[r.FormValue("channel")]
		if !ok {
			slackErr(w, "channel_not_found")
			return
		}
		writeJSON(w, map[string]any{"ok": true, "channel": map[string]any{"id": r.FormValue("channel"), "name": name}})
	default:
		slackErr(w, "unknown_method")
	}
}

// chatMethod answers the methods that edit messages and stream them, as
// Slack does: an update or append names a message of the channel, a stream
// lives in a thread and, outside a DM, names its recipient, and an append
// to a stopped stream is refused. It reports whether method was one of
// them. s.mu is held.
func (s *Server) chatMethod(w http.ResponseWriter, r *http.Request, method string) bool {
	c := Call{Method: method, Channel: r.FormValue("channel"), TS: r.FormValue("ts"),
		ThreadTS: r.FormValue("thread_ts"), Mrkdwn: r.FormValue("mrkdwn"),
		RecipientUser: r.FormValue("recipient_user_id"), RecipientTeam: r.FormValue("recipient_team_id")}
	fail := func(code string) bool {
		c.Error = code
		s.log = append(s.log, c)
		slackErr(w, code)
		return true
	}
	ok := func() bool {
		s.log = append(s.log, c)
		writeJSON(w, map[string]any{"ok": true, "channel": c.Channel, "ts": c.TS})
		return true
	}
	msg := func() (*Message, bool) {
		m, found := s.messages[c.TS]
		return m, found && m.Channel == c.Channel
	}
	switch method {
	case "chat.update":
		c.Text = r.FormValue("text")
		m, found := msg()
		switch {
		case !found:
			return fail("message_not_found")
		case m.Streaming:
			return fail("cant_update_message")
		}
		m.Text = c.Text
		return ok()
	case "chat.delete":
		if _, found := msg(); !found {
			return fail("message_not_found")
		}
		delete(s.messages, c.TS)
		return ok()
	case "chat.startStream":
		c.Text = r.FormValue("markdown_text")
		switch {
		case c.ThreadTS == "":
			return fail("invalid_arguments")
		case !strings.HasPrefix(c.Channel, "D") && (c.RecipientUser == "" || c.RecipientTeam == ""):
			return fail("invalid_arguments")
		case utf8.RuneCountInString(c.Text) > MaxMarkdownText:
			return fail("msg_too_long")
		}
		s.seq++
		c.TS = fmt.Sprintf("1700000000.%06d", s.seq)
		s.messages[c.TS] = &Message{Channel: c.Channel, TS: c.TS, ThreadTS: c.ThreadTS, Text: c.Text, Streaming: true}
		return ok()
	case "chat.appendStream", "chat.stopStream":
		c.Text = r.FormValue("markdown_text")
		m, found := msg()
		switch {
		case !found:
			return fail("message_not_found")
		case !m.Streaming:
			return fail("message_not_in_streaming_state")
		case method == "chat.appendStream" && c.Text == "":
			return fail("invalid_arguments")
		case utf8.RuneCountInString(c.Text) > MaxMarkdownText:
			return fail("msg_too_long")
		}
		m.Text += c.Text
		m.Streaming = method == "chat.appendStream"
		return ok()
	case "assistant.threads.setStatus":
		c.Channel, c.Status = r.FormValue("channel_id"), r.FormValue("status")
		if c.Channel == "" || c.ThreadTS == "" {
			return fail("invalid_arguments")
		}
		return ok()
	}
	return false
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	s.count("upload")
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	if token(r) != BotToken {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer f.Close()
	body, err := io.ReadAll(f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[id]
	if !ok {
		http.Error(w, "unknown upload", http.StatusNotFound)
		return
	}
	p.body = body
	s.pending[id] = p
	_, _ = io.WriteString(w, "OK - "+strconv.Itoa(len(body)))
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["files"]++
	s.fileReqs = append(s.fileReqs, FileRequest{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
	f, ok := s.files[r.URL.Path]
	target, redirect := s.redirects[r.URL.Path]
	signin := s.signinFiles
	s.mu.Unlock()
	if redirect {
		http.Redirect(w, r, target, http.StatusFound)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if signin || r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Redirect(w, r, "/signin?redir="+r.URL.Path, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
	_, _ = w.Write(f.body)
}

func (s *Server) ws(w http.ResponseWriter, r *http.Request) {
	s.count("ws")
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn := &wsConn{c: c}
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.c.Close()
	}
	s.conn = conn
	s.connections++
	n := s.connections
	close(s.connCh)
	s.connCh = make(chan struct{})
	s.mu.Unlock()

	_ = conn.writeJSON(map[string]any{"type": "hello", "num_connections": n,
		"connection_info": map[string]any{"app_id": "AFAKE001"}})

	done := make(chan struct{})
	defer close(done)
	// socketmode treats a connection without pings as dead.
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
					return
				}
			}
		}
	}()
	for {
		var resp struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := c.ReadJSON(&resp); err != nil {
			_ = c.Close()
			return
		}
		s.mu.Lock()
		if ch, ok := s.acks[resp.EnvelopeID]; ok {
			close(ch)
			delete(s.acks, resp.EnvelopeID)
		}
		s.mu.Unlock()
	}
}

// react answers reactions.add and reactions.remove as Slack does: a name
// without colons, already_reacted for a second add of the same name,
// no_reaction for removing one the bot did not add. s.mu is held.
func (s *Server) react(w http.ResponseWriter, method, channel, ts, name string) {
	if channel == "" || ts == "" || name == "" || strings.Contains(name, ":") {
		slackErr(w, "invalid_arguments")
		return
	}
	if s.reactions == nil {
		s.reactions = map[[2]string][]string{}
	}
	k := [2]string{channel, ts}
	have := slices.Contains(s.reactions[k], name)
	switch {
	case method == "reactions.add" && have:
		slackErr(w, "already_reacted")
		return
	case method == "reactions.remove" && !have:
		slackErr(w, "no_reaction")
		return
	case method == "reactions.add":
		s.reactions[k] = append(s.reactions[k], name)
	default:
		s.reactions[k] = slices.DeleteFunc(s.reactions[k], func(n string) bool { return n == name })
	}
	s.reactionLog = append(s.reactionLog, ReactionCall{Method: method, Channel: channel, Timestamp: ts, Name: name, Logged: len(s.log)})
	writeJSON(w, map[string]any{"ok": true})
}

// Reactions are the names of the bot's reactions on the message now.
func (s *Server) Reactions(channel, ts string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactions[[2]string{channel, ts}])
}

// ReactionCalls are the reactions.add and reactions.remove calls that
// succeeded, in order.
func (s *Server) ReactionCalls() []ReactionCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactionLog)
}
