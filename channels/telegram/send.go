package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/mediaregistry"
)

// nativeChat parses "telegram:<id>".
func nativeChat(chat string) (int64, error) {
	rest, ok := strings.CutPrefix(chat, Name+":")
	if !ok {
		return 0, fmt.Errorf("telegram: chat %q is not a telegram chat id", chat)
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("telegram: chat %q: native id is not a number", chat)
	}
	return id, nil
}

func optInt(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Send implements channels.Channel: the markdown rendered as Telegram
// HTML (plain again if Telegram cannot parse it), split at 4096 visible
// characters.
func (t *Telegram) Send(ctx context.Context, msg channels.OutMessage) (channels.Delivery, error) {
	var d channels.Delivery
	chat, err := nativeChat(msg.Chat)
	if err != nil {
		return d, err
	}
	pieces := t.render(msg.Text, MaxMessageRunes)
	if len(pieces) == 0 {
		return d, fmt.Errorf("telegram send to %s: empty message", msg.Chat)
	}
	thread, replyTo := optInt(msg.ThreadID), optInt(msg.ReplyTo)
	for i, p := range pieces {
		id, err := t.sendPiece(ctx, msg.Chat, &chat, p, thread, map[bool]int{true: replyTo}[i == 0])
		if err != nil {
			return d, fmt.Errorf("telegram send to %s (part %d of %d): %w", msg.Chat, i+1, len(pieces), err)
		}
		d.MessageIDs = append(d.MessageIDs, strconv.Itoa(id))
	}
	return d, nil
}

// sendPiece sends one rendered piece as a new message and returns its id.
func (t *Telegram) sendPiece(ctx context.Context, chatID string, chat *int64, piece string, thread, replyTo int) (int, error) {
	var sent *models.Message
	err := t.formatted(ctx, chatID, piece, func(text string, mode models.ParseMode) error {
		params := &bot.SendMessageParams{Text: text, ParseMode: mode, MessageThreadID: thread}
		if replyTo != 0 {
			params.ReplyParameters = &models.ReplyParameters{MessageID: replyTo, AllowSendingWithoutReply: true}
		}
		var err error
		sent, err = t.sendTo(ctx, chatID, chat, func(id int64) (*models.Message, error) {
			params.ChatID = id
			return t.b.SendMessage(ctx, params)
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	return sent.ID, nil
}

// sendTo runs one send with retries on 429 (never on 5xx: a send that got
// one may have gone out). A group that became a supergroup answers with
// its new id: the sink is told and the send is repeated there once.
func (t *Telegram) sendTo(ctx context.Context, chatID string, chat *int64, fn func(int64) (*models.Message, error)) (*models.Message, error) {
	var out *models.Message
	call := func() error {
		m, err := fn(*chat)
		out = m
		return err
	}
	err := t.retry(ctx, false, call)
	var me *bot.MigrateError
	if errors.As(err, &me) && me.MigrateToChatID != 0 {
		to := int64(me.MigrateToChatID)
		t.log.Warn("telegram group became a supergroup and changed id; update the chat id in the groups config",
			"from", chatID, "to", ChatID(to))
		t.env.Sink.Migrated(ctx, chatID, ChatID(to))
		*chat = to
		err = t.retry(ctx, false, call)
	}
	if err != nil {
		return nil, redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
	}
	return out, nil
}

// method is how a file goes out.
type method int

const (
	asDocument method = iota
	asPhoto
	asAudio
	asVoice
	asVideo
)

// pickMethod chooses by MIME what Telegram will show best; anything it
// might re-encode badly or refuse goes as a document. voice asks for a
// voice note, which Telegram plays from OGG/Opus, MP3 and M4A.
func pickMethod(mimeType string, size int64, voice bool) method {
	m := mediaregistry.CleanMIME(mimeType)
	switch {
	case voice && (m == "audio/ogg" || m == "audio/opus" || m == "audio/mpeg" || m == "audio/mp4" || m == "audio/x-m4a"):
		return asVoice
	case m == "video/mp4":
		// MP4 (H.264) is what Telegram streams in the chat.
		return asVideo
	case m == "image/jpeg" || m == "image/png" || m == "image/webp":
		if size <= cloudPhotoLimit {
			return asPhoto
		}
	case m == "audio/ogg" || m == "audio/opus":
		// OGG/Opus is what Telegram plays as a voice note.
		return asVoice
	case m == "audio/mpeg" || m == "audio/mp3" || m == "audio/mp4" || m == "audio/m4a" || m == "audio/x-m4a":
		return asAudio
	}
	return asDocument
}

// SendMedia implements channels.MediaSender: the file is streamed from
// disk into the multipart upload, never read into memory first.
func (t *Telegram) SendMedia(ctx context.Context, m channels.OutMedia) (channels.Delivery, error) {
	var d channels.Delivery
	chat, err := nativeChat(m.Chat)
	if err != nil {
		return d, err
	}
	name, size, err := m.Upload()
	if err != nil {
		return d, fmt.Errorf("telegram send media to %s: %w", m.Chat, err)
	}
	if t.apiURL == DefaultAPIURL && size > cloudUploadLimit {
		return d, fmt.Errorf("telegram send media to %s: %s is over the Bot API upload limit of %s: %w",
			m.Chat, mediaregistry.FormatSize(size), mediaregistry.FormatSize(cloudUploadLimit), channels.ErrTooLarge)
	}
	mt := m.MIME
	if mt == "" {
		// Callers decide the type with mediaregistry.FileMIME; one that did
		// not gets it decided the same way here.
		mt, _ = mediaregistry.FileMIME(m.File)
	}
	// A caption that needs more than one piece goes out as text after
	// the file, whole, rather than cut.
	caption, rest := "", ""
	if pieces := t.render(m.Caption, maxCaptionRunes); len(pieces) == 1 {
		caption = pieces[0]
	} else if len(pieces) > 1 {
		rest = m.Caption
	}
	thread := optInt(m.ThreadID)
	how := pickMethod(mt, size, m.Voice)

	var sent *models.Message
	err = t.formatted(ctx, m.Chat, caption, func(caption string, mode models.ParseMode) error {
		var err error
		sent, err = t.sendMediaOnce(ctx, m.Chat, &chat, how, name, size, m.File, thread, caption, mode)
		return err
	})
	if err != nil {
		return d, fmt.Errorf("telegram send media to %s: %w", m.Chat, err)
	}
	d.MessageIDs = append(d.MessageIDs, strconv.Itoa(sent.ID))
	if rest != "" {
		more, err := t.Send(ctx, channels.OutMessage{Chat: ChatID(chat), Text: rest, ThreadID: m.ThreadID})
		d.MessageIDs = append(d.MessageIDs, more.MessageIDs...)
		if err != nil {
			return d, fmt.Errorf("telegram send media caption: %w", err)
		}
	}
	return d, nil
}

// sendMediaOnce uploads the file once (with sendTo's retries), captioned
// in parse mode mode when caption is set.
func (t *Telegram) sendMediaOnce(ctx context.Context, chatID string, chat *int64, how method, name string, size int64,
	f io.ReaderAt, thread int, caption string, mode models.ParseMode) (*models.Message, error) {
	if caption == "" {
		mode = ""
	}
	return t.sendTo(ctx, chatID, chat, func(id int64) (*models.Message, error) {
		// A reader of its own per attempt: a retried upload starts from
		// byte 0 and sends no more than was checked.
		file := &models.InputFileUpload{Filename: name, Data: io.NewSectionReader(f, 0, size)}
		switch how {
		case asPhoto:
			return t.b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: id, MessageThreadID: thread, Photo: file, Caption: caption, ParseMode: mode})
		case asVoice:
			return t.b.SendVoice(ctx, &bot.SendVoiceParams{ChatID: id, MessageThreadID: thread, Voice: file, Caption: caption, ParseMode: mode})
		case asVideo:
			return t.b.SendVideo(ctx, &bot.SendVideoParams{ChatID: id, MessageThreadID: thread, Video: file, Caption: caption, ParseMode: mode, SupportsStreaming: true})
		case asAudio:
			return t.b.SendAudio(ctx, &bot.SendAudioParams{ChatID: id, MessageThreadID: thread, Audio: file, Caption: caption, ParseMode: mode})
		default:
			return t.b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: id, MessageThreadID: thread, Document: file, Caption: caption, ParseMode: mode})
		}
	})
}

// typingLoop keeps "typing…" on in one chat.
type typingLoop struct {
	stop context.CancelFunc
	// renewed is when "on" was last asked (unix nanoseconds): the loop
	// ends typingMax after it, so a forgotten "off" cannot leave the bot
	// typing forever while renewals keep a long run's indicator on.
	renewed atomic.Int64
}

// SetTyping implements channels.Typer. Telegram shows "typing…" for about
// five seconds per sendChatAction, so on=true keeps refreshing it until
// on=false, the channel stops, or typingMax passes without a renewal.
// A renewal (on=true while on) only moves that deadline: no call, no
// goroutine, so the agent may renew as often as it likes.
func (t *Telegram) SetTyping(ctx context.Context, chat string, on bool) error {
	id, err := nativeChat(chat)
	if err != nil {
		return err
	}
	t.mu.Lock()
	if cur, ok := t.typing[chat]; ok {
		if on {
			cur.renewed.Store(time.Now().UnixNano())
			t.mu.Unlock()
			return nil
		}
		cur.stop()
		delete(t.typing, chat)
	}
	base := t.runCtx
	t.mu.Unlock()
	if !on {
		return nil
	}
	if err := t.sendTyping(ctx, id); err != nil {
		return fmt.Errorf("telegram typing in %s: %w", chat, err)
	}
	if base == nil {
		base = context.Background()
	}
	loopCtx, stop := context.WithCancel(base)
	loop := &typingLoop{stop: stop}
	loop.renewed.Store(time.Now().UnixNano())
	t.mu.Lock()
	if t.stopped {
		// Start's ctx ended: the loop would end at once, and Wait may
		// already have returned.
		t.mu.Unlock()
		stop()
		return nil
	}
	if old, ok := t.typing[chat]; ok {
		old.stop() // a concurrent "on" for the same chat
	}
	t.typing[chat] = loop
	// Loops of a started channel end with its ctx, so Wait waits for
	// them; wg is still held by the receiver here, as stopped is unset.
	tracked := t.runCtx != nil
	if tracked {
		t.wg.Add(1)
	}
	t.mu.Unlock()
	go func() {
		if tracked {
			defer t.wg.Done()
		}
		defer func() {
			stop()
			t.mu.Lock()
			if t.typing[chat] == loop {
				delete(t.typing, chat)
			}
			t.mu.Unlock()
		}()
		clock.Every(loopCtx, t.typingEvery, func() {
			if time.Since(time.Unix(0, loop.renewed.Load())) > t.typingMax {
				stop()
				return
			}
			if err := t.sendTyping(loopCtx, id); err != nil && loopCtx.Err() == nil {
				t.log.Debug("telegram: typing refresh failed", "chat", chat, "err", err)
			}
		})
	}()
	return nil
}

func (t *Telegram) sendTyping(ctx context.Context, chat int64) error {
	_, err := t.b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping})
	if err != nil {
		return redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
	}
	return nil
}
