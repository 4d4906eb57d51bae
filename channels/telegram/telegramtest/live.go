package telegramtest

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/botd-dev/botd/format"
)

// ValidateHTML checks text sent with parse_mode=HTML the way Telegram's
// parser does and returns the text it shows; an error (worded like the
// Bot API's "Bad Request: can't parse entities: …") makes the fake
// answer 400. A variable so a test can refuse what Telegram would accept.
var ValidateHTML = format.TelegramText

// checkText applies Telegram's checks to a text or caption: not empty,
// well-formed in its parse mode, at most limit visible characters.
func checkText(text, parseMode string, limit int) (Failure, bool) {
	bad := func(d string) (Failure, bool) {
		return Failure{Status: http.StatusBadRequest, Description: "Bad Request: " + d}, true
	}
	visible := text
	if strings.EqualFold(parseMode, "HTML") {
		shown, err := ValidateHTML(text)
		if err != nil {
			return Failure{Status: http.StatusBadRequest, Description: err.Error()}, true
		}
		visible = shown
	}
	switch {
	case strings.TrimSpace(visible) == "":
		return bad("message text is empty")
	case len(utf16.Encode([]rune(visible))) > limit: // Telegram counts UTF-16 units
		return bad("message is too long")
	}
	return Failure{}, false
}

// Shown is what message id in chat shows now (after its edits) and in
// which parse mode; ok is false for a message never sent or deleted.
func (s *Server) Shown(chat int64, id int) (text, parseMode string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.shown[msgKey{chat, id}]
	return st.text, st.parseMode, ok
}

func (s *Server) editText(w http.ResponseWriter, form map[string]string) {
	chat, err := strconv.ParseInt(form["chat_id"], 10, 64)
	if err != nil {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: chat not found"})
		return
	}
	id := atoi(form["message_id"])
	rec := Sent{Method: "editMessageText", ChatID: chat, MessageID: id, Text: form["text"], ParseMode: form["parse_mode"]}
	if f, bad := checkText(rec.Text, rec.ParseMode, 4096); bad {
		writeError(w, f)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := msgKey{chat, id}
	cur, ok := s.shown[key]
	switch {
	case !ok:
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: message to edit not found"})
		return
	case cur == shownText{rec.Text, rec.ParseMode}:
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
		return
	}
	s.shown[key] = shownText{rec.Text, rec.ParseMode}
	s.sent = append(s.sent, rec)
	writeResult(w, map[string]any{"message_id": id, "chat": map[string]any{"id": chat}, "date": 0, "text": visibleOf(rec)})
}

func visibleOf(m Sent) string {
	if strings.EqualFold(m.ParseMode, "HTML") {
		if shown, err := format.TelegramText(m.Text); err == nil {
			return shown
		}
	}
	return m.Text
}

// draft serves sendMessageDraft (Bot API 9.3): a private chat only, a
// non-zero draft_id, a text checked like a message's.
func (s *Server) draft(w http.ResponseWriter, form map[string]string) {
	chat, err := strconv.ParseInt(form["chat_id"], 10, 64)
	if err != nil || chat <= 0 {
		// Drafts exist only in private chats, whose ids are positive.
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
		return
	}
	if id, err := strconv.ParseInt(form["draft_id"], 10, 64); err != nil || id == 0 {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: draft_id must be non-zero"})
		return
	}
	rec := Sent{Method: "sendMessageDraft", ChatID: chat, DraftID: form["draft_id"], Text: form["text"],
		ParseMode: form["parse_mode"], ThreadID: atoi(form["message_thread_id"])}
	if f, bad := checkText(rec.Text, rec.ParseMode, 4096); bad {
		writeError(w, f)
		return
	}
	s.mu.Lock()
	s.sent = append(s.sent, rec)
	s.mu.Unlock()
	writeResult(w, true)
}

func (s *Server) deleteMessage(w http.ResponseWriter, form map[string]string) {
	chat, err := strconv.ParseInt(form["chat_id"], 10, 64)
	if err != nil {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: chat not found"})
		return
	}
	id := atoi(form["message_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	key := msgKey{chat, id}
	if _, ok := s.shown[key]; !ok {
		writeError(w, Failure{Status: http.StatusBadRequest, Description: "Bad Request: message to delete not found"})
		return
	}
	delete(s.shown, key)
	s.sent = append(s.sent, Sent{Method: "deleteMessage", ChatID: chat, MessageID: id})
	writeResult(w, true)
}
