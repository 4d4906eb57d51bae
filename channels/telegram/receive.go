package telegram

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// ChatID is the botd chat id of a Telegram chat.
func ChatID(id int64) string { return Name + ":" + strconv.FormatInt(id, 10) }

// onUpdate is the single entry point for polled updates.
func (t *Telegram) onUpdate(ctx context.Context, _ *bot.Bot, u *models.Update) {
	t.handleUpdate(ctx, u)
}

// handleUpdate hands u to the sink and reports whether it may be
// confirmed to Telegram: the store holds it (channels.Env.Deliver waits
// for that, retrying while the store fails), or it carries nothing to
// store. Only then the ack gate lets the poll that confirms it go out; an
// update left unconfirmed (receiving stopped first) is handed out again
// on the next start.
func (t *Telegram) handleUpdate(ctx context.Context, u *models.Update) bool {
	if u == nil {
		return true
	}
	t.handleMu.Lock()
	defer t.handleMu.Unlock()
	if t.isStopped() {
		// After Wait the store may be closed; Telegram hands an
		// unconfirmed update out again on the next start.
		t.log.Debug("telegram: receiving has stopped; update left for the next start", "update_id", u.ID)
		return false
	}
	if !t.handleKind(ctx, u) {
		return false
	}
	t.acks.handledUpTo(u.ID)
	return true
}

func (t *Telegram) handleKind(ctx context.Context, u *models.Update) bool {
	var (
		msg  *models.Message
		edit bool
	)
	switch {
	case u.Message != nil:
		msg = u.Message
	case u.ChannelPost != nil:
		msg = u.ChannelPost
	case u.EditedMessage != nil:
		msg, edit = u.EditedMessage, true
	case u.EditedChannelPost != nil:
		msg, edit = u.EditedChannelPost, true
	default:
		t.log.Debug("telegram: ignoring update of an unhandled kind", "update_id", u.ID)
		return true
	}
	return t.handleMessage(ctx, msg, edit)
}

// handleMessage reports whether msg may be confirmed (see handleUpdate).
func (t *Telegram) handleMessage(ctx context.Context, msg *models.Message, edit bool) bool {
	chat := ChatID(msg.Chat.ID)
	if msg.MigrateToChatID != 0 {
		to := ChatID(msg.MigrateToChatID)
		t.log.Warn("telegram group became a supergroup and changed id; update the chat id in the groups config",
			"from", chat, "to", to)
		t.env.Sink.Migrated(ctx, chat, to)
		return true
	}
	if msg.MigrateFromChatID != 0 {
		// The same migration seen from the new chat; handled above.
		return true
	}

	in := channels.Inbound{
		ChatID:     chat,
		ChatName:   chatName(msg.Chat),
		IsGroup:    msg.Chat.Type != models.ChatTypePrivate,
		ID:         strconv.Itoa(msg.ID),
		SenderID:   senderID(msg),
		SenderName: senderName(msg),
		Time:       time.Unix(int64(msg.Date), 0),
		Edit:       edit,
	}
	if edit && msg.EditDate != 0 {
		in.Time = time.Unix(int64(msg.EditDate), 0)
	}
	me := t.Me()
	if msg.From != nil {
		in.IsBot = msg.From.IsBot
		in.FromMe = me.ID != 0 && msg.From.ID == me.ID
	}
	if msg.ReplyToMessage != nil {
		in.ReplyTo = strconv.Itoa(msg.ReplyToMessage.ID)
	}
	if msg.IsTopicMessage && msg.MessageThreadID != 0 {
		in.ThreadID = strconv.Itoa(msg.MessageThreadID)
	}

	mentionedByName := mentions(msg, me)
	in.Mentioned = msg.Chat.Type == models.ChatTypePrivate || mentionedByName ||
		(msg.ReplyToMessage != nil && msg.ReplyToMessage.From != nil && me.ID != 0 && msg.ReplyToMessage.From.ID == me.ID)
	// Not a group of ours: Compose leaves only enough for an operator to
	// find and register the chat (and whether it addressed the bot, for
	// pairing). No refs, no text from strangers.
	if !t.env.Compose(ctx, &in, mediaregistry.Neutralize(msg.Text), Extract(chat, msg)) {
		return t.deliver(ctx, in)
	}
	if in.Text == "" {
		t.log.Debug("telegram: ignoring message without text or media", "chat", chat, "id", in.ID)
		return true
	}

	if mentionedByName && t.env.AssistantName != "" {
		in.Text = withTrigger(in.Text, "@"+t.env.AssistantName, me.Username)
	}
	return t.deliver(ctx, in)
}

// deliver reports whether the store holds in; Env.Deliver retries until it
// does, so false means receiving stopped first.
func (t *Telegram) deliver(ctx context.Context, in channels.Inbound) bool {
	return t.env.Deliver(ctx, in) == nil
}

// mentions reports whether msg names the bot: "@username" in the text or
// caption, or a text_mention entity pointing at the bot (users without a
// username are mentioned that way, and so can bots be in some clients).
func mentions(msg *models.Message, me models.User) bool {
	for _, e := range append(append([]models.MessageEntity(nil), msg.Entities...), msg.CaptionEntities...) {
		if e.Type == models.MessageEntityTypeTextMention && e.User != nil && me.ID != 0 && e.User.ID == me.ID {
			return true
		}
	}
	if me.Username == "" {
		return false
	}
	return indexMention(msg.Text, me.Username) >= 0 || indexMention(msg.Caption, me.Username) >= 0 || commandFor(msg.Text, me.Username)
}

// commandFor reports a command addressed to the bot by name, Telegram's
// form in groups: "/status@botd_bot".
func commandFor(text, username string) bool {
	word, _, _ := strings.Cut(text, " ")
	cmd, at, ok := strings.Cut(word, "@")
	return ok && len(cmd) > 1 && cmd[0] == '/' && strings.EqualFold(strings.TrimSpace(at), username)
}

// indexMention finds "@username" as a whole word (case-insensitive, as
// Telegram usernames are) and returns its byte offset, or -1.
func indexMention(text, username string) int {
	needle := "@" + strings.ToLower(username)
	lower := strings.ToLower(text)
	// ToLower can change byte lengths outside ASCII; usernames are ASCII,
	// so only trust offsets when the lowered text kept its length.
	if len(lower) != len(text) {
		lower = asciiLower(text)
	}
	for from := 0; ; {
		i := strings.Index(lower[from:], needle)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(needle)
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (i == 0 || !wordRune(before)) && (end == len(text) || !wordRune(after)) {
			return i
		}
		from = end
	}
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func wordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// withTrigger makes a mention of the bot read as the assistant's trigger
// at the start of text: "@botd_bot hi" → "@Andy hi", "hi @botd_bot" →
// "@Andy hi @botd_bot". Text already starting with the trigger is kept.
func withTrigger(text, trigger, username string) string {
	trimmed := strings.TrimLeftFunc(text, unicode.IsSpace)
	if hasPrefixFold(trimmed, trigger) {
		return text
	}
	if username != "" && indexMention(trimmed, username) == 0 {
		return trigger + trimmed[len(username)+1:]
	}
	return trigger + " " + text
}

func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[len(prefix):])
	return len(s) == len(prefix) || !wordRune(r)
}

func chatName(c models.Chat) string {
	if c.Title != "" {
		return c.Title
	}
	return strings.TrimSpace(c.FirstName + " " + c.LastName)
}

func senderName(msg *models.Message) string {
	switch {
	case msg.From != nil:
		if n := strings.TrimSpace(msg.From.FirstName + " " + msg.From.LastName); n != "" {
			return n
		}
		return msg.From.Username
	case msg.SenderChat != nil:
		return chatName(*msg.SenderChat)
	}
	return ""
}
