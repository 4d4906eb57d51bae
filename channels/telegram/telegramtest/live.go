package telegramtest

import (
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ValidateHTML checks text sent with parse_mode=HTML the way Telegram
// parses it; an error makes the fake answer 400 "can't parse entities".
// The lead points it at the format package's own checker; the default
// below knows Telegram's tag subset, its entities and nesting.
var ValidateHTML func(string) error = checkTelegramHTML

// telegramTags is Telegram's HTML subset (core.telegram.org/bots/api#html-style).
var telegramTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "tg-emoji": true, "code": true, "pre": true, "blockquote": true,
}

// checkTelegramHTML walks text as Telegram's parser does: every '<'
// opens a supported tag or closes the innermost open one, every '&'
// starts one of the four named entities or a numeric one, and nothing
// is left open at the end.
func checkTelegramHTML(text string) error {
	var open []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 {
				return fmt.Errorf("unclosed entity at byte offset %d", i)
			}
			name := text[i+1 : i+end]
			if !knownEntity(name) {
				return fmt.Errorf("unsupported HTML entity %q at byte offset %d", "&"+name+";", i)
			}
			i += end + 1
		case '<':
			end := strings.IndexByte(text[i:], '>')
			if end < 0 {
				return fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := text[i+1 : i+end]
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				name = strings.TrimSpace(name)
				if len(open) == 0 || open[len(open)-1] != name {
					return fmt.Errorf("unexpected end tag at byte offset %d", i)
				}
				open = open[:len(open)-1]
			} else {
				name, _, _ := strings.Cut(tag, " ")
				if !telegramTags[name] {
					return fmt.Errorf("unsupported start tag %q at byte offset %d", name, i)
				}
				open = append(open, name)
			}
			i += end + 1
		case '>':
			// Telegram tolerates a bare '>' but botd always escapes it;
			// a bare one means something skipped escaping.
			return fmt.Errorf("unescaped '>' at byte offset %d", i)
		default:
			i++
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("can't find end tag corresponding to start tag %q", open[len(open)-1])
	}
	return nil
}

func knownEntity(name string) bool {
	switch name {
	case "lt", "gt", "amp", "quot":
		return true
	}
	if n, ok := strings.CutPrefix(name, "#"); ok && n != "" {
		if h, ok := strings.CutPrefix(strings.ToLower(n), "x"); ok {
			_, err := strconv.ParseUint(h, 16, 32)
			return err == nil
		}
		_, err := strconv.ParseUint(n, 10, 32)
		return err == nil
	}
	return false
}

// visibleHTML is the text a valid HTML message shows: tags dropped,
// entities decoded. Length limits count it, not the markup.
func visibleHTML(text string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(text, '<')
		if i < 0 {
			b.WriteString(text)
			break
		}
		b.WriteString(text[:i])
		j := strings.IndexByte(text[i:], '>')
		if j < 0 {
			break
		}
		text = text[i+j+1:]
	}
	return html.UnescapeString(b.String())
}

// checkText applies Telegram's checks to a text or caption: not empty,
// well-formed in its parse mode, at most limit visible characters.
func checkText(text, parseMode string, limit int) (Failure, bool) {
	bad := func(d string) (Failure, bool) {
		return Failure{Status: http.StatusBadRequest, Description: "Bad Request: " + d}, true
	}
	visible := text
	if strings.EqualFold(parseMode, "HTML") {
		if err := ValidateHTML(text); err != nil {
			return bad("can't parse entities: " + err.Error())
		}
		visible = visibleHTML(text)
	}
	switch {
	case strings.TrimSpace(visible) == "":
		return bad("message text is empty")
	case utf8.RuneCountInString(visible) > limit:
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
		return visibleHTML(m.Text)
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
