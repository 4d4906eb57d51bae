// Package telegramtest is a fake Telegram Bot API on loopback for tests:
// it serves the methods botd uses, feeds queued updates to getUpdates,
// serves file downloads, records what was sent and counts every call, so a
// test can prove (for example) that receiving media never downloaded it.
package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"
)

// Token is the bot token the fake accepts unless told otherwise.
const Token = "123456:TEST-fake-token-do-not-log"

// BotID is the id in Token and of the bot user getMe returns.
const BotID int64 = 123456

// BotUsername is the bot's @username.
const BotUsername = "botd_test_bot"

// CloudFileLimit mirrors the cloud Bot API: getFile refuses larger files.
// It is the network's own limit, kept here rather than taken from
// telegram.DefaultMaxDownload (the default of the setting that tells botd
// about it): package telegram's tests import this fake, so the fake cannot
// import package telegram. TestFakeKnowsTheCloudLimit keeps the two equal.
const CloudFileLimit = 20 << 20

// File is a file the fake can hand out via getFile and serve for download.
type File struct {
	ID   string
	Path string // file_path; defaults to "files/<ID>"
	Data []byte
	// Size is the size getFile reports; 0 means len(Data). A larger Size
	// than CloudFileLimit makes getFile fail like the real API.
	Size int64
}

// Failure is an error the fake returns instead of serving a call.
type Failure struct {
	Status      int // HTTP status and error_code, e.g. 429, 500
	Description string
	RetryAfter  int   // seconds, for 429
	MigrateTo   int64 // migrate_to_chat_id, for 400
	// Raw, when set, is sent as the body as-is (e.g. an HTML 502 page).
	Raw string
}

// Sent is one outgoing call the fake recorded (sendMessage, sendPhoto,
// sendDocument, sendAudio, sendVoice, sendChatAction, editMessageText,
// sendMessageDraft, deleteMessage, setMessageReaction). An edit or a deletion carries the id
// of the message it changed.
type Sent struct {
	Method    string
	ChatID    int64
	MessageID int // the id the fake assigned (0 for sendChatAction)
	Text      string
	Caption   string
	ParseMode string // "HTML" when sent in HTML parse mode
	DraftID   string // sendMessageDraft's draft_id
	ThreadID  int
	ReplyTo   int
	Action    string
	// Reaction is setMessageReaction's emoji ("" takes the bot's off).
	Reaction  string
	FileField string // "photo", "document", ...
	FileName  string
	Data      []byte
}

// Server is the fake. All methods are safe for concurrent use.
type Server struct {
	// Token is the token in accepted URLs.
	Token string
	Bot   models.User

	srv    *httptest.Server
	closed chan struct{}

	mu           sync.Mutex
	updates      []models.Update
	nextUpdateID int64
	wake         chan struct{}
	files        map[string]File
	byPath       map[string]string
	sent         []Sent
	calls        map[string]int
	downloads    int
	failures     map[string][]Failure
	unauthorized bool
	webhookURL   string
	webhookSec   string
	webhookMax   int
	nextMsgID    int
	hold         *hold
	// shown is what each message sent or edited shows now, so an edit
	// to the same content is refused as Telegram refuses it.
	shown map[msgKey]shownText
	// commands is the menu setMyCommands registered last.
	commands []models.BotCommand
}

type msgKey struct {
	chat int64
	id   int
}

type shownText struct{ text, parseMode string }

// hold keeps sendChatAction answers back (HoldChatActions).
type hold struct {
	arrived chan struct{}
	release chan struct{}
}

// New starts a fake on loopback; it is closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		Token:        Token,
		Bot:          models.User{ID: BotID, IsBot: true, FirstName: "Botd Test", Username: BotUsername},
		closed:       make(chan struct{}),
		wake:         make(chan struct{}),
		files:        map[string]File{},
		byPath:       map[string]string{},
		calls:        map[string]int{},
		failures:     map[string][]Failure{},
		nextUpdateID: 1000,
		nextMsgID:    5000,
		shown:        map[msgKey]shownText{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(func() {
		// Wake pending long polls first so Close does not wait on them.
		close(s.closed)
		s.srv.Close()
	})
	return s
}

// URL is the api_url to configure.
func (s *Server) URL() string { return s.srv.URL }

// Enqueue queues updates for getUpdates, giving each an update_id if it
// has none. Updates are handed out in order.
func (s *Server) Enqueue(us ...models.Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range us {
		if u.ID == 0 {
			s.nextUpdateID++
			u.ID = s.nextUpdateID
		} else if u.ID > s.nextUpdateID {
			s.nextUpdateID = u.ID
		}
		s.updates = append(s.updates, u)
	}
	close(s.wake)
	s.wake = make(chan struct{})
}

// Pending reports queued updates not yet confirmed by a later offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// AddFile makes a file available to getFile and downloads.
func (s *Server) AddFile(f File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Path == "" {
		f.Path = "files/" + f.ID
	}
	if f.Size == 0 {
		f.Size = int64(len(f.Data))
	}
	s.files[f.ID] = f
	s.byPath[f.Path] = f.ID
}

// FailNext makes the next calls of method fail, one Failure per call.
// Use "file" for file downloads.
func (s *Server) FailNext(method string, fs ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[strings.ToLower(method)] = append(s.failures[strings.ToLower(method)], fs...)
}

// SetUnauthorized makes every API call answer 401, like a revoked token.
func (s *Server) SetUnauthorized(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unauthorized = v
}

// HoldChatActions makes every later sendChatAction wait for its answer,
// after it was recorded, until release is called or the client gives up.
// arrived gets a value as each one is held, so a test knows the client is
// inside that call and has no other one in flight.
func (s *Server) HoldChatActions() (arrived <-chan struct{}, release func()) {
	h := &hold{arrived: make(chan struct{}, 64), release: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	var once sync.Once
	return h.arrived, func() {
		once.Do(func() {
			s.mu.Lock()
			if s.hold == h {
				s.hold = nil
			}
			s.mu.Unlock()
			close(h.release)
		})
	}
}

// Sent returns the recorded outgoing calls in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Calls counts requests for method (case-insensitive), failed ones included.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToLower(method)]
}

// AllCalls counts every request the fake received: each method's calls
// and the file downloads, failed ones included.
func (s *Server) AllCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.downloads
	for _, c := range s.calls {
		n += c
	}
	return n
}

// GetFileCalls counts getFile requests.
func (s *Server) GetFileCalls() int { return s.Calls("getFile") }

// Downloads counts file download requests, failed ones included.
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

// Webhook reports the URL, secret and max_connections of the last
// setWebhook (empty after deleteWebhook).
func (s *Server) Webhook() (url, secret string, maxConnections int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookURL, s.webhookSec, s.webhookMax
}

// PostUpdate delivers u to a webhook the way Telegram does.
func PostUpdate(ctx context.Context, url, secret string, u models.Update) (int, error) {
	body, err := json.Marshal(u)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/file/bot"):
		s.serveFile(w, r)
	case strings.HasPrefix(r.URL.Path, "/bot"):
		s.serveMethod(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	s.downloads++
	f, ok := s.files[s.byPath[path]]
	fail, failed := s.popFailure("file")
	bad := token != s.Token || s.unauthorized
	s.mu.Unlock()
	switch {
	case bad:
		writeError(w, Failure{Status: http.StatusUnauthorized, Description: "Unauthorized"})
	case failed:
		if fail.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(fail.RetryAfter))
		}
		writeError(w, fail)
	case !ok:
		writeError(w, Failure{Status: http.StatusNotFound, Description: "Not Found"})
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
		_, _ = w.Write(f.Data)
	}
}

func (s *Server) popFailure(method string) (Failure, bool) {
	q := s.failures[method]
	if len(q) == 0 {
		return Failure{}, false
	}
	s.failures[method] = q[1:]
	return q[0], true
}

func (s *Server) serveMethod(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/bot")
	token, method, _ := strings.Cut(rest, "/")
	method = strings.ToLower(method)
	form, files, err := parseParams(r)

	s.mu.Lock()
	s.calls[method]++
	unauthorized := token != s.Token || s.unauthorized
	fail, failed := s.popFailure(method)
	s.mu.Unlock()

	switch {
	case unauthorized:
		writeError(w, Failure{Status: http.StatusUnauthorized, Description: "Unauthorized"})
		return
	case failed:
		writeError(w, fail)
		return
	case err != nil:
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: " + err.Error()})
		return
	}

	switch method {
	case "getme":
		writeResult(w, s.Bot)
	case "getupdates":
		s.getUpdates(w, r, form)
	case "getfile":
		s.getFile(w, form)
	case "setwebhook":
		s.mu.Lock()
		s.webhookURL, s.webhookSec = form["url"], form["secret_token"]
		s.webhookMax, _ = strconv.Atoi(form["max_connections"])
		s.mu.Unlock()
		writeResult(w, true)
	case "deletewebhook":
		s.mu.Lock()
		s.webhookURL, s.webhookSec, s.webhookMax = "", "", 0
		s.mu.Unlock()
		writeResult(w, true)
	case "sendchataction":
		chat, err := strconv.ParseInt(form["chat_id"], 10, 64)
		if err != nil {
			writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: chat not found"})
			return
		}
		s.mu.Lock()
		s.sent = append(s.sent, Sent{Method: "sendChatAction", ChatID: chat, Action: form["action"], ThreadID: atoi(form["message_thread_id"])})
		h := s.hold
		s.mu.Unlock()
		if h != nil {
			select {
			case h.arrived <- struct{}{}:
			default:
			}
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			case <-s.closed:
			}
		}
		writeResult(w, true)
	case "editmessagetext":
		s.editText(w, form)
	case "sendmessagedraft":
		s.draft(w, form)
	case "deletemessage":
		s.deleteMessage(w, form)
	case "setmessagereaction":
		s.react(w, form)
	case "setmycommands":
		s.setCommands(w, form)
	case "sendmessage", "sendphoto", "senddocument", "sendaudio", "sendvoice", "sendanimation", "sendvideo":
		s.send(w, method, form, files)
	default:
		writeError(w, Failure{Status: http.StatusNotFound, Description: "Not Found: method not found"})
	}
}

var canonical = map[string]string{
	"sendmessage": "sendMessage", "sendphoto": "sendPhoto", "senddocument": "sendDocument",
	"sendaudio": "sendAudio", "sendvoice": "sendVoice", "sendanimation": "sendAnimation", "sendvideo": "sendVideo",
}

var fileField = map[string]string{
	"sendphoto": "photo", "senddocument": "document", "sendaudio": "audio",
	"sendvoice": "voice", "sendanimation": "animation", "sendvideo": "video",
}

func (s *Server) send(w http.ResponseWriter, method string, form map[string]string, files map[string]upload) {
	chat, err := strconv.ParseInt(form["chat_id"], 10, 64)
	if err != nil {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: chat not found"})
		return
	}
	rec := Sent{
		Method:    canonical[method],
		ChatID:    chat,
		Text:      form["text"],
		Caption:   form["caption"],
		ParseMode: form["parse_mode"],
		ThreadID:  atoi(form["message_thread_id"]),
	}
	if rp := form["reply_parameters"]; rp != "" {
		var p models.ReplyParameters
		if json.Unmarshal([]byte(rp), &p) == nil {
			rec.ReplyTo = p.MessageID
		}
	}
	if field := fileField[method]; field != "" {
		up, ok := files[field]
		if !ok {
			writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: there is no " + field + " in the request"})
			return
		}
		rec.FileField, rec.FileName, rec.Data = field, up.name, up.data
	} else if f, bad := checkText(rec.Text, rec.ParseMode, 4096); bad {
		writeError(w, f)
		return
	}
	if rec.Caption != "" {
		if f, bad := checkText(rec.Caption, rec.ParseMode, 1024); bad {
			f.Description = strings.Replace(f.Description, "message", "message caption", 1)
			writeError(w, f)
			return
		}
	}
	s.mu.Lock()
	s.nextMsgID++
	rec.MessageID = s.nextMsgID
	s.sent = append(s.sent, rec)
	if rec.FileField == "" {
		s.shown[msgKey{chat, rec.MessageID}] = shownText{rec.Text, rec.ParseMode}
	}
	bot := s.Bot
	s.mu.Unlock()
	writeResult(w, models.Message{
		ID:              rec.MessageID,
		MessageThreadID: rec.ThreadID,
		From:            &bot,
		Date:            int(time.Now().Unix()),
		Chat:            models.Chat{ID: chat},
		Text:            rec.Text,
		Caption:         rec.Caption,
	})
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, form map[string]string) {
	offset, _ := strconv.ParseInt(form["offset"], 10, 64)
	timeout, _ := strconv.Atoi(form["timeout"])
	// Long polls are capped so a test never waits on one for long.
	wait := time.Duration(min(timeout, 5)) * time.Second
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.webhookURL != "" {
			s.mu.Unlock()
			writeError(w, Failure{Status: http.StatusConflict, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
			return
		}
		// An offset confirms every update before it.
		kept := s.updates[:0]
		for _, u := range s.updates {
			if u.ID >= offset {
				kept = append(kept, u)
			}
		}
		s.updates = kept
		out := append([]models.Update(nil), s.updates...)
		wake := s.wake
		s.mu.Unlock()
		if len(out) > 0 || wait == 0 {
			writeResult(w, out)
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			wait = 0
		case <-r.Context().Done():
			return
		case <-s.closed:
			writeResult(w, []models.Update{})
			return
		}
	}
}

func (s *Server) getFile(w http.ResponseWriter, form map[string]string) {
	s.mu.Lock()
	f, ok := s.files[form["file_id"]]
	s.mu.Unlock()
	switch {
	case !ok:
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: invalid file_id"})
	case f.Size > CloudFileLimit:
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: file is too big"})
	default:
		writeResult(w, models.File{FileID: f.ID, FileUniqueID: "u" + f.ID, FileSize: f.Size, FilePath: f.Path})
	}
}

type upload struct {
	name string
	data []byte
}

// parseParams reads Bot API parameters the three ways Telegram accepts
// them: multipart (what go-telegram/bot sends), urlencoded and JSON.
func parseParams(r *http.Request) (map[string]string, map[string]upload, error) {
	form := map[string]string{}
	files := map[string]upload{}
	for k, v := range r.URL.Query() {
		form[k] = v[0]
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return form, files, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		mr, err := r.MultipartReader()
		if err != nil {
			return nil, nil, err
		}
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, err
			}
			data, err := io.ReadAll(p)
			if err != nil {
				return nil, nil, err
			}
			if p.FileName() != "" {
				files[p.FormName()] = upload{name: p.FileName(), data: data}
			} else {
				form[p.FormName()] = string(data)
			}
		}
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				form[k] = str
			} else {
				form[k] = string(v)
			}
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		for k, v := range r.PostForm {
			form[k] = v[0]
		}
	}
	return form, files, nil
}

func writeResult(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeError(w http.ResponseWriter, f Failure) {
	if f.Raw != "" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, f.Raw)
		return
	}
	if f.Description == "" {
		f.Description = http.StatusText(f.Status)
	}
	body := map[string]any{"ok": false, "error_code": f.Status, "description": f.Description}
	params := map[string]any{}
	if f.RetryAfter > 0 {
		params["retry_after"] = f.RetryAfter
	}
	if f.MigrateTo != 0 {
		params["migrate_to_chat_id"] = f.MigrateTo
	}
	if len(params) > 0 {
		body["parameters"] = params
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(body)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Chat builders keep test updates short.

// Group returns a supergroup chat.
func Group(id int64, title string) models.Chat {
	return models.Chat{ID: id, Type: models.ChatTypeSupergroup, Title: title}
}

// Private returns a DM chat with user u.
func Private(u models.User) models.Chat {
	return models.Chat{ID: u.ID, Type: models.ChatTypePrivate, FirstName: u.FirstName, LastName: u.LastName, Username: u.Username}
}

// Person returns a human user.
func Person(id int64, first string) models.User {
	return models.User{ID: id, FirstName: first, Username: strings.ToLower(first)}
}

// Text returns a message update from from in chat with text; the date is
// fixed and grows with id so ordering is stable.
func Text(chat models.Chat, from models.User, id int, text string) models.Update {
	return models.Update{Message: &models.Message{
		ID:   id,
		From: &from,
		Chat: chat,
		Date: int(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).Unix()) + id,
		Text: text,
	}}
}

// String makes Sent readable in test failures.
func (m Sent) String() string {
	return fmt.Sprintf("%s(chat=%d id=%d text=%q caption=%q file=%s/%s %dB action=%s)",
		m.Method, m.ChatID, m.MessageID, m.Text, m.Caption, m.FileField, m.FileName, len(m.Data), m.Action)
}

// react records setMessageReaction as the Bot API takes it: at most one
// emoji reaction (a bot is not premium), none to take the bot's off.
func (s *Server) react(w http.ResponseWriter, form map[string]string) {
	chat, err := strconv.ParseInt(form["chat_id"], 10, 64)
	if err != nil {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: chat not found"})
		return
	}
	var rs []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if raw := form["reaction"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &rs); err != nil {
			writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: can't parse reaction types JSON object"})
			return
		}
	}
	if len(rs) > 1 || len(rs) == 1 && (rs[0].Type != "emoji" || rs[0].Emoji == "") {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: REACTION_INVALID"})
		return
	}
	sent := Sent{Method: "setMessageReaction", ChatID: chat, MessageID: atoi(form["message_id"])}
	if len(rs) == 1 {
		sent.Reaction = rs[0].Emoji
	}
	s.mu.Lock()
	s.sent = append(s.sent, sent)
	s.mu.Unlock()
	writeResult(w, true)
}

// Reactions are the setMessageReaction calls on message id of chat, in
// order: each the emoji set, "" for one taken off.
func (s *Server) Reactions(chat int64, id int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sent {
		if m.Method == "setMessageReaction" && m.ChatID == chat && m.MessageID == id {
			out = append(out, m.Reaction)
		}
	}
	return out
}

// commandName is the Bot API's rule for a command.
var commandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// setCommands keeps the menu, checked as the Bot API checks it.
func (s *Server) setCommands(w http.ResponseWriter, form map[string]string) {
	var cmds []models.BotCommand
	if err := json.Unmarshal([]byte(form["commands"]), &cmds); err != nil {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: can't parse commands JSON object"})
		return
	}
	if len(cmds) > 100 {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: too many commands"})
		return
	}
	for _, c := range cmds {
		if !commandName.MatchString(c.Command) || c.Description == "" || utf8.RuneCountInString(c.Description) > 256 {
			writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: BOT_COMMAND_INVALID"})
			return
		}
	}
	s.mu.Lock()
	s.commands = cmds
	s.mu.Unlock()
	writeResult(w, true)
}

// Commands is the menu the bot registered (setMyCommands), nil before.
func (s *Server) Commands() []models.BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]models.BotCommand(nil), s.commands...)
}
