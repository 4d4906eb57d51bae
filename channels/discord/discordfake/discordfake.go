// Package discordfake is an in-process fake of the parts of Discord botd
// talks to: the gateway websocket (HELLO, IDENTIFY, READY, heartbeats,
// dispatches, RESUME after a drop), the REST API the channel calls and a
// CDN whose signed attachment links expire. It speaks Discord's wire
// format in its own JSON, not discordgo's structs, so the real client is
// what is tested. It records what it was sent so tests assert on real
// HTTP traffic. It is exported so end-to-end tests elsewhere in botd can
// reuse it.
package discordfake

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Identities the fake answers with.
const (
	Token     = "fake.discord-bot.token"
	BotUserID = "900000000000000001"
	BotName   = "botd"
	AppID     = "900000000000000002"
	GuildID   = "800000000000000001"
	// Channel is a guild text channel, Thread a public thread in it,
	// DM the direct-message channel with User.
	Channel = "700000000000000001"
	Thread  = "700000000000000002"
	DM      = "700000000000000003"
	UserID  = "600000000000000001"
	// LinkTTL is how long a signed CDN link stays valid, as on Discord.
	LinkTTL = 24 * time.Hour
)

// Application flags: the Message Content intent as the portal grants it.
const (
	flagGatewayMessageContent        = 1 << 18
	flagGatewayMessageContentLimited = 1 << 19
	intentMessageContent             = 1 << 15
)

// Sent is one message the bot created (POST .../messages).
type Sent struct {
	ID        string
	Channel   string
	Content   string
	ReplyTo   string // message_reference.message_id
	Mentions  json.RawMessage
	Files     []File
	Multipart bool
}

// File is one uploaded file of a Sent message.
type File struct {
	Name string
	Body []byte
}

// Edit is one PATCH of a message's content.
type Edit struct {
	Channel, ID, Content string
}

// Request is one REST call, in the order received.
type Request struct {
	Method, Path string
	At           time.Time
	Status       int
}

type attachment struct {
	id, channel, message, name, contentType string
	body                                    []byte
	extra                                   map[string]any
}

type event struct {
	seq  int64
	typ  string
	data any
}

// Server is the fake. Create it with New; it stops with the test.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:PORT.
	URL string

	srv      *httptest.Server
	upgrader websocket.Upgrader
	secret   []byte

	mu             sync.Mutex
	now            func() time.Time
	skew           time.Duration
	nextID         int64
	messages       map[string]map[string]any // id -> message JSON
	attachments    map[string]*attachment    // cdn path -> attachment
	sent           []Sent
	edits          []Edit
	typing         map[string]int
	requests       []Request
	cdnHits        map[string]int
	refreshes      int
	refreshOff     bool
	readOff        bool
	rateLimitNext  map[string]float64 // "METHOD /path-prefix" -> retry_after seconds
	contentIntent  bool
	heartbeatMS    int
	events         []event
	seq            int64
	sessionID      string
	conn           *wsConn
	connCh         chan struct{}
	identifies     int
	resumes        int
	lastIntents    int64
	connections    int
	heartbeatsSeen int
	noAcks         bool
	uploadLimit    int
	// reactions are the bot's reactions now, by channel and message.
	reactions map[[2]string][]string
}

type wsConn struct {
	c  *websocket.Conn
	mu sync.Mutex
}

func (w *wsConn) writeJSON(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.c.WriteJSON(v)
}

// New starts the fake on loopback; it closes when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		secret:        []byte("discordfake-cdn-secret"),
		now:           time.Now,
		nextID:        1_000_000_000_000_000,
		messages:      map[string]map[string]any{},
		attachments:   map[string]*attachment{},
		typing:        map[string]int{},
		cdnHits:       map[string]int{},
		rateLimitNext: map[string]float64{},
		contentIntent: true,
		heartbeatMS:   45000,
		uploadLimit:   10 << 20,
		connCh:        make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and its gateway connection.
func (s *Server) Close() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.c.Close()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// APIURL is what channels.discord.api_url points at.
func (s *Server) APIURL() string { return s.URL + "/api/v9" }

// GatewayURL is what channels.discord.gateway_url points at.
func (s *Server) GatewayURL() string { return "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway" }

// SetMessageContentIntent grants or withholds the Message Content intent,
// as the developer portal's switch does: withheld, /applications/@me has
// no content flag and an IDENTIFY asking for it is closed with 4014.
func (s *Server) SetMessageContentIntent(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contentIntent = on
}

// SetHeartbeatInterval sets the interval HELLO announces.
func (s *Server) SetHeartbeatInterval(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeatMS = int(d / time.Millisecond)
}

// ExpireLinks moves the CDN's clock past every link signed so far: an
// unrefreshed link then answers 404, as Discord's does.
func (s *Server) ExpireLinks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew += LinkTTL + time.Hour
}

// DisableRefresh makes POST /attachments/refresh-urls answer 404, so a
// client has to re-read the message for a fresh link.
func (s *Server) DisableRefresh(off bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshOff = off
}

// ForbidMessageReads makes GET .../messages/{id} answer 403 (no Read
// Message History permission).
func (s *Server) ForbidMessageReads(off bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOff = off
}

// RateLimitOnce answers the next request whose "METHOD path" starts with
// prefix (e.g. "POST /api/v9/channels/") with a 429 asking to retry
// after the given time.
func (s *Server) RateLimitOnce(prefix string, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimitNext[prefix] = after.Seconds()
}

// SetUploadLimit sets the largest file a message may carry (10 MiB by
// default, as in a server without boosts); a larger one is answered 413.
func (s *Server) SetUploadLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploadLimit = n
}

// InvalidateSession makes the current session unresumable: the next
// RESUME is answered with op 9 and the client has to IDENTIFY again.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionID = ""
}

// StopHeartbeatAcks leaves heartbeats unanswered, as a zombied
// connection does; the client should give up on it and reconnect.
func (s *Server) StopHeartbeatAcks(stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAcks = stop
}

// Requests returns every REST call so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SentMessages returns the messages the bot created.
func (s *Server) SentMessages() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Edits returns the message edits the bot made.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}

// Content is the current text of a message the fake holds.
func (s *Server) Content(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.messages[id]; ok {
		c, _ := m["content"].(string)
		return c
	}
	return ""
}

// Typing counts the typing calls in a channel.
func (s *Server) Typing(channel string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channel]
}

// CDNHits counts the successful downloads of an attachment.
func (s *Server) CDNHits(attachmentID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cdnHits[attachmentID]
}

// Refreshes counts refresh-urls calls.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// Identifies and Resumes count the gateway sessions begun and resumed.
func (s *Server) Identifies() int { s.mu.Lock(); defer s.mu.Unlock(); return s.identifies }

// Resumes counts RESUMEs that were accepted.
func (s *Server) Resumes() int { s.mu.Lock(); defer s.mu.Unlock(); return s.resumes }

// Intents is what the last IDENTIFY asked for.
func (s *Server) Intents() int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.lastIntents }

// Heartbeats counts the heartbeats received.
func (s *Server) Heartbeats() int { s.mu.Lock(); defer s.mu.Unlock(); return s.heartbeatsSeen }

func (s *Server) id() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// Attachment is a file to post with a message.
type Attachment struct {
	Name        string
	ContentType string
	Body        []byte
	// Extra fields of the attachment object: width, height,
	// duration_secs, waveform, flags.
	Extra map[string]any
}

// Message is what a user posts.
type Message struct {
	Channel     string // Channel, Thread or DM by default
	AuthorID    string // UserID by default
	AuthorName  string
	Bot         bool
	Content     string
	Attachments []Attachment
	// Raw fields merged into the message object: mentions, stickers,
	// sticker_items, embeds, flags, message_reference,
	// referenced_message.
	Raw map[string]any
}

// Post stores a user's message and dispatches MESSAGE_CREATE; it returns
// the message id and the attachments' ids.
func (s *Server) Post(m Message) (string, []string) {
	s.mu.Lock()
	channel := m.Channel
	if channel == "" {
		channel = Channel
	}
	author := map[string]any{"id": orDefault(m.AuthorID, UserID), "username": orDefault(m.AuthorName, "ann"),
		"global_name": orDefault(m.AuthorName, "Ann"), "discriminator": "0", "bot": m.Bot}
	id := s.id()
	var atts []any
	var attIDs []string
	for _, a := range m.Attachments {
		aid := s.id()
		at := &attachment{id: aid, channel: channel, message: id, name: a.Name, contentType: a.ContentType, body: a.Body, extra: a.Extra}
		s.attachments[cdnPath(at)] = at
		atts = append(atts, s.attachmentJSON(at))
		attIDs = append(attIDs, aid)
	}
	msg := map[string]any{
		"id": id, "channel_id": channel, "author": author, "content": m.Content,
		"timestamp": s.now().UTC().Format(time.RFC3339Nano), "attachments": orEmpty(atts),
		"embeds": []any{}, "mentions": []any{}, "type": 0, "tts": false, "mention_everyone": false,
	}
	if channel != DM {
		msg["guild_id"] = GuildID
	}
	for k, v := range m.Raw {
		msg[k] = v
	}
	s.messages[id] = msg
	s.mu.Unlock()
	s.Dispatch("MESSAGE_CREATE", msg)
	return id, attIDs
}

// Dispatch sends an event to the connected gateway session, or keeps it
// for a RESUME when none is connected.
func (s *Server) Dispatch(typ string, data any) {
	// Written under the lock: events reach the client in sequence order.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev := event{seq: s.seq, typ: typ, data: data}
	s.events = append(s.events, ev)
	if s.conn != nil {
		_ = s.conn.writeJSON(map[string]any{"op": 0, "s": ev.seq, "t": ev.typ, "d": ev.data})
	}
}

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func cdnPath(a *attachment) string {
	return "/attachments/" + a.channel + "/" + a.id + "/" + url.PathEscape(a.name)
}

// sign is the CDN's link for a at the fake's now: ex (expiry) and is
// (issue time) as hex seconds, hm an HMAC over path and both.
func (s *Server) sign(a *attachment) string {
	now := s.now().Add(s.skew)
	p := cdnPath(a)
	ex := strconv.FormatInt(now.Add(LinkTTL).Unix(), 16)
	is := strconv.FormatInt(now.Unix(), 16)
	return s.URL + "/cdn" + p + "?ex=" + ex + "&is=" + is + "&hm=" + s.mac(p, ex, is) + "&"
}

func (s *Server) mac(p, ex, is string) string {
	h := hmac.New(sha256.New, s.secret)
	h.Write([]byte(p + "|" + ex + "|" + is))
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) attachmentJSON(a *attachment) map[string]any {
	u := s.sign(a)
	j := map[string]any{"id": a.id, "filename": a.name, "size": len(a.body), "url": u, "proxy_url": u}
	if a.contentType != "" {
		j["content_type"] = a.contentType
	}
	for k, v := range a.extra {
		j[k] = v
	}
	return j
}

// Connections counts the gateway websocket connections accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// DropConnection cuts the gateway connection without a close frame, as a
// network failure would.
func (s *Server) DropConnection() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.c.UnderlyingConn().Close()
	}
}

// WaitReady blocks until n sessions were made ready (READY or RESUMED)
// in all, or ctx ends.
func (s *Server) WaitReady(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.identifies+s.resumes, s.connCh
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d gateway sessions ready: %w", got, n, ctx.Err())
		}
	}
}

func (s *Server) readyChanged() {
	close(s.connCh)
	s.connCh = make(chan struct{})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func apiErr(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "code": code})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/gateway" || r.URL.Path == "/gateway/":
		s.gateway(w, r)
	case strings.HasPrefix(r.URL.Path, "/cdn/"):
		s.cdn(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/v9/"):
		s.api(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) cdn(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/cdn")
	q := r.URL.Query()
	ex, is, hm := q.Get("ex"), q.Get("is"), q.Get("hm")
	s.mu.Lock()
	a, ok := s.attachments[p]
	now := s.now().Add(s.skew)
	good := ok && hmac.Equal([]byte(hm), []byte(s.mac(p, ex, is)))
	exp, _ := strconv.ParseInt(ex, 16, 64)
	if good && now.Unix() < exp && r.Header.Get("Authorization") == "" {
		s.cdnHits[a.id]++
	}
	s.mu.Unlock()
	switch {
	case !ok:
		http.NotFound(w, r)
	case r.Header.Get("Authorization") != "":
		// The token must never travel to the CDN.
		http.Error(w, "credentials sent to the CDN", http.StatusBadRequest)
	case !good:
		http.Error(w, "bad signature", http.StatusForbidden)
	case now.Unix() >= exp:
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
	default:
		if a.contentType != "" {
			w.Header().Set("Content-Type", a.contentType)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
		_, _ = w.Write(a.body)
	}
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	s.mu.Lock()
	req := Request{Method: r.Method, Path: r.URL.Path, At: time.Now()}
	var limited float64 = -1
	for prefix, after := range s.rateLimitNext {
		if strings.HasPrefix(r.Method+" "+r.URL.Path, prefix) {
			limited = after
			delete(s.rateLimitNext, prefix)
			break
		}
	}
	s.mu.Unlock()
	status := http.StatusOK
	defer func() {
		req.Status = status
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
	}()
	if r.Header.Get("Authorization") != "Bot "+Token {
		status = http.StatusUnauthorized
		apiErr(w, status, 0, "401: Unauthorized")
		return
	}
	if limited >= 0 {
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", strconv.Itoa(int(limited)+1))
		w.Header().Set("X-RateLimit-Scope", "user")
		writeJSON(w, status, map[string]any{"message": "You are being rate limited.", "retry_after": limited, "global": false})
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && path == "/users/@me":
		writeJSON(w, status, map[string]any{"id": BotUserID, "username": BotName, "discriminator": "0", "bot": true})
	case r.Method == http.MethodGet && path == "/applications/@me":
		s.mu.Lock()
		flags := 0
		if s.contentIntent {
			flags = flagGatewayMessageContentLimited
		}
		s.mu.Unlock()
		writeJSON(w, status, map[string]any{"id": AppID, "name": BotName, "flags": flags, "bot": map[string]any{"id": BotUserID}})
	case r.Method == http.MethodGet && (path == "/gateway" || path == "/gateway/bot"):
		writeJSON(w, status, map[string]any{"url": s.GatewayURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}})
	case r.Method == http.MethodPost && path == "/attachments/refresh-urls":
		status = s.refresh(w, r)
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet:
		writeJSON(w, status, channelJSON(parts[1]))
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "typing" && r.Method == http.MethodPost:
		s.mu.Lock()
		s.typing[parts[1]]++
		s.mu.Unlock()
		status = http.StatusNoContent
		w.WriteHeader(status)
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPost:
		status = s.create(w, r, parts[1])
	case len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		status = s.message(w, r, parts[1], parts[3])
	case len(parts) == 7 && parts[0] == "channels" && parts[2] == "messages" && parts[4] == "reactions" && parts[6] == "@me":
		status = s.react(w, r.Method, parts[1], parts[3], parts[5])
	default:
		status = http.StatusNotFound
		apiErr(w, status, 0, "404: Not Found")
	}
}

func channelJSON(id string) map[string]any {
	switch id {
	case DM:
		return map[string]any{"id": DM, "type": 1, "recipients": []any{map[string]any{"id": UserID, "username": "ann"}}}
	case Thread:
		return map[string]any{"id": Thread, "type": 11, "guild_id": GuildID, "parent_id": Channel, "name": "photos"}
	}
	return map[string]any{"id": id, "type": 0, "guild_id": GuildID, "name": "general"}
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request) int {
	var body struct {
		URLs []string `json:"attachment_urls"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		apiErr(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return http.StatusBadRequest
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refreshOff {
		apiErr(w, http.StatusNotFound, 0, "404: Not Found")
		return http.StatusNotFound
	}
	s.refreshes++
	out := []any{}
	for _, raw := range body.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		a, ok := s.attachments[strings.TrimPrefix(u.EscapedPath(), "/cdn")]
		if !ok {
			continue
		}
		out = append(out, map[string]any{"original": raw, "refreshed": s.sign(a)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"refreshed_urls": out})
	return http.StatusOK
}

// message serves GET, PATCH and DELETE of one message.
func (s *Server) message(w http.ResponseWriter, r *http.Request, channel, id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok || m["channel_id"] != channel {
		apiErr(w, http.StatusNotFound, 10008, "Unknown Message")
		return http.StatusNotFound
	}
	switch r.Method {
	case http.MethodGet:
		if s.readOff {
			apiErr(w, http.StatusForbidden, 50001, "Missing Access")
			return http.StatusForbidden
		}
		// A fresh read signs the links anew, as Discord does.
		fresh := map[string]any{}
		for k, v := range m {
			fresh[k] = v
		}
		var atts []any
		for _, a := range s.attachments {
			if a.message == id {
				atts = append(atts, s.attachmentJSON(a))
			}
		}
		fresh["attachments"] = orEmpty(atts)
		writeJSON(w, http.StatusOK, fresh)
	case http.MethodPatch:
		var body struct {
			Content *string `json:"content"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
			apiErr(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
			return http.StatusBadRequest
		}
		if body.Content != nil {
			if n := len([]rune(*body.Content)); n > 2000 {
				apiErr(w, http.StatusBadRequest, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length.")
				return http.StatusBadRequest
			}
			m["content"] = *body.Content
			s.edits = append(s.edits, Edit{Channel: channel, ID: id, Content: *body.Content})
		}
		writeJSON(w, http.StatusOK, m)
	case http.MethodDelete:
		delete(s.messages, id)
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent
	default:
		apiErr(w, http.StatusMethodNotAllowed, 0, "405: Method Not Allowed")
		return http.StatusMethodNotAllowed
	}
	return http.StatusOK
}

type createBody struct {
	Content         string          `json:"content"`
	AllowedMentions json.RawMessage `json:"allowed_mentions"`
	Reference       *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
}

// create serves POST /channels/{id}/messages, JSON or multipart with
// payload_json and files[n].
func (s *Server) create(w http.ResponseWriter, r *http.Request, channel string) int {
	var body createBody
	var files []File
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multi := mt == "multipart/form-data"
	if multi {
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				apiErr(w, http.StatusBadRequest, 0, "bad multipart body")
				return http.StatusBadRequest
			}
			data, err := io.ReadAll(io.LimitReader(p, 64<<20))
			if err != nil {
				apiErr(w, http.StatusBadRequest, 0, "bad multipart body")
				return http.StatusBadRequest
			}
			switch {
			case p.FormName() == "payload_json":
				if err := json.Unmarshal(data, &body); err != nil {
					apiErr(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
					return http.StatusBadRequest
				}
			case strings.HasPrefix(p.FormName(), "files["):
				files = append(files, File{Name: p.FileName(), Body: data})
			}
		}
	} else if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		apiErr(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return http.StatusBadRequest
	}
	s.mu.Lock()
	limit := s.uploadLimit
	s.mu.Unlock()
	for _, f := range files {
		if len(f.Body) > limit {
			apiErr(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
			return http.StatusRequestEntityTooLarge
		}
	}
	if len([]rune(body.Content)) > 2000 {
		apiErr(w, http.StatusBadRequest, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length.")
		return http.StatusBadRequest
	}
	if body.Content == "" && len(files) == 0 {
		apiErr(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return http.StatusBadRequest
	}
	s.mu.Lock()
	id := s.id()
	sent := Sent{ID: id, Channel: channel, Content: body.Content, Mentions: body.AllowedMentions, Files: files, Multipart: multi}
	if body.Reference != nil {
		sent.ReplyTo = body.Reference.MessageID
	}
	s.sent = append(s.sent, sent)
	var atts []any
	for _, f := range files {
		a := &attachment{id: s.id(), channel: channel, message: id, name: f.Name, body: f.Body}
		s.attachments[cdnPath(a)] = a
		atts = append(atts, s.attachmentJSON(a))
	}
	msg := map[string]any{
		"id": id, "channel_id": channel, "content": body.Content, "attachments": orEmpty(atts), "embeds": []any{},
		"mentions": []any{}, "type": 0, "timestamp": s.now().UTC().Format(time.RFC3339Nano),
		"author": map[string]any{"id": BotUserID, "username": BotName, "discriminator": "0", "bot": true},
	}
	if channel != DM {
		msg["guild_id"] = GuildID
	}
	if sent.ReplyTo != "" {
		msg["message_reference"] = map[string]any{"message_id": sent.ReplyTo, "channel_id": channel}
		msg["type"] = 19
	}
	s.messages[id] = msg
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, msg)
	// Discord echoes the bot's own messages on the gateway.
	s.Dispatch("MESSAGE_CREATE", msg)
	return http.StatusOK
}

// gateway serves the websocket: HELLO, then IDENTIFY or RESUME, then
// heartbeats until the client or a drop ends it.
func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn := &wsConn{c: c}
	defer c.Close()
	s.mu.Lock()
	s.connections++
	hb := s.heartbeatMS
	s.mu.Unlock()
	if conn.writeJSON(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": hb}}) != nil {
		return
	}
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			s.mu.Lock()
			if s.conn == conn {
				s.conn = nil
			}
			s.mu.Unlock()
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if json.Unmarshal(data, &p) != nil {
			closeWith(c, 4002, "Error while decoding payload.")
			return
		}
		switch p.Op {
		case 1:
			s.mu.Lock()
			s.heartbeatsSeen++
			ack := !s.noAcks
			s.mu.Unlock()
			if ack {
				_ = conn.writeJSON(map[string]any{"op": 11})
			}
		case 2:
			if !s.identify(conn, p.D) {
				return
			}
		case 6:
			if !s.resume(conn, p.D) {
				return
			}
		}
	}
}

func closeWith(c *websocket.Conn, code int, text string) {
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
}

func (s *Server) identify(conn *wsConn, d json.RawMessage) bool {
	var id struct {
		Token   string `json:"token"`
		Intents int64  `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	if strings.TrimPrefix(id.Token, "Bot ") != Token {
		closeWith(conn.c, 4004, "Authentication failed.")
		return false
	}
	s.mu.Lock()
	s.lastIntents = id.Intents
	if id.Intents&intentMessageContent != 0 && !s.contentIntent {
		s.mu.Unlock()
		closeWith(conn.c, 4014, "Disallowed intent(s).")
		return false
	}
	s.sessionID = fmt.Sprintf("session-%d", s.identifies+1)
	s.seq++
	seq := s.seq
	ready := map[string]any{
		"op": 0, "s": seq, "t": "READY",
		"d": map[string]any{
			"v":                  10,
			"user":               map[string]any{"id": BotUserID, "username": BotName, "discriminator": "0", "bot": true},
			"session_id":         s.sessionID,
			"resume_gateway_url": s.GatewayURL(),
			"guilds":             []any{map[string]any{"id": GuildID, "unavailable": true}},
			"application":        map[string]any{"id": AppID, "flags": 0},
		},
	}
	s.seq++
	guild := map[string]any{"op": 0, "s": s.seq, "t": "GUILD_CREATE", "d": map[string]any{
		"id": GuildID, "name": "Study group",
		"channels": []any{channelJSON(Channel)},
		"threads":  []any{channelJSON(Thread)},
	}}
	// Older events belong to the previous session: a new one starts
	// from here, as on Discord.
	s.events = nil
	s.conn = conn
	s.identifies++
	s.readyChanged()
	err := conn.writeJSON(ready)
	if err == nil {
		err = conn.writeJSON(guild)
	}
	s.mu.Unlock()
	return err == nil
}

func (s *Server) resume(conn *wsConn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	if strings.TrimPrefix(rs.Token, "Bot ") != Token {
		closeWith(conn.c, 4004, "Authentication failed.")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs.SessionID != s.sessionID || s.sessionID == "" {
		// Not resumable: the client identifies again on the same socket.
		return conn.writeJSON(map[string]any{"op": 9, "d": false}) == nil
	}
	s.conn = conn
	s.resumes++
	s.readyChanged()
	// Missed events first, then RESUMED, as Discord replays them.
	for _, ev := range s.events {
		if ev.seq > rs.Seq {
			if conn.writeJSON(map[string]any{"op": 0, "s": ev.seq, "t": ev.typ, "d": ev.data}) != nil {
				return false
			}
		}
	}
	s.seq++
	return conn.writeJSON(map[string]any{"op": 0, "s": s.seq, "t": "RESUMED", "d": map[string]any{}}) == nil
}

// react puts (PUT) or deletes (DELETE) the bot's reaction emoji (the
// path's segment, decoded).
func (s *Server) react(w http.ResponseWriter, method, channel, message, emoji string) int {
	if emoji == "" {
		apiErr(w, http.StatusBadRequest, 10014, "Unknown Emoji")
		return http.StatusBadRequest
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reactions == nil {
		s.reactions = map[[2]string][]string{}
	}
	k := [2]string{channel, message}
	switch method {
	case http.MethodPut:
		if !slices.Contains(s.reactions[k], emoji) {
			s.reactions[k] = append(s.reactions[k], emoji)
		}
	case http.MethodDelete:
		s.reactions[k] = slices.DeleteFunc(s.reactions[k], func(e string) bool { return e == emoji })
	default:
		apiErr(w, http.StatusMethodNotAllowed, 0, "405: Method Not Allowed")
		return http.StatusMethodNotAllowed
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

// Reactions are the bot's reactions on the message now.
func (s *Server) Reactions(channel, message string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactions[[2]string{channel, message}])
}
