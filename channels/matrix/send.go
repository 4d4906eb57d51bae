package matrix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/html"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/format"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/mediaregistry"
)

const (
	// TextLimit is the visible characters botd puts in one message.
	// Matrix has no text limit of its own, only 64 KiB per event, which
	// holds both the body and the formatted body.
	TextLimit = 8000
	// maxEventBytes keeps an event's two bodies well inside 64 KiB.
	maxEventBytes = 48 << 10
)

// render formats markdown as the sanitised HTML of the web room: what
// the model wrote as raw HTML ("<script>", "<img onerror>") is escaped
// text, never markup. A variable so a test can swap it.
var render = func(md string, limit int) []string { return format.Render(md, format.Web, limit) }

// nativeRoom parses "matrix:!room:server".
func nativeRoom(chat string) (id.RoomID, error) {
	rest, ok := strings.CutPrefix(chat, Name+":")
	if !ok || !strings.HasPrefix(rest, "!") || !strings.Contains(rest, ":") {
		return "", fmt.Errorf("matrix: chat %q is not a matrix room id (matrix:!room:server)", chat)
	}
	return id.RoomID(rest), nil
}

// txnID is a transaction id for one event: mautrix sends a retried PUT
// with the same one, so the homeserver keeps the event once.
func txnID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "botd-" + hex.EncodeToString(b[:])
}

// piece is one message of an answer: the HTML and what clients without
// HTML show.
type piece struct{ html, body string }

// pieces renders an answer; a piece whose two bodies together would not
// fit an event (escapes and wide characters make HTML long) renders the
// whole answer again at half the length.
func (m *Matrix) pieces(md string) []piece {
	for limit := TextLimit; ; limit /= 2 {
		htmls := m.render(md, limit)
		out := make([]piece, 0, len(htmls))
		fits := true
		for _, h := range htmls {
			p := piece{html: h, body: plainOf(h)}
			if len(htmls) == 1 {
				// One message: its body is the markdown itself, which is
				// how Matrix clients without HTML expect it.
				p.body = strings.TrimSpace(md)
			}
			if len(p.html)+len(p.body) > maxEventBytes {
				fits = false
			}
			out = append(out, p)
		}
		if fits || limit < 500 {
			return out
		}
	}
}

// plainOf is the text an HTML piece shows, without its markup.
func plainOf(piece string) string {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(piece))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(b.String())
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			if name, _ := z.TagName(); string(name) == "br" || string(name) == "p" || string(name) == "li" {
				b.WriteByte('\n')
			}
		}
	}
}

// relation is how a message hangs off the conversation: in the thread
// of ThreadID, a reply to ReplyTo.
func relation(thread, replyTo string) *event.RelatesTo {
	switch {
	case thread != "":
		rel := &event.RelatesTo{Type: event.RelThread, EventID: id.EventID(thread)}
		if replyTo != "" && replyTo != thread {
			rel.InReplyTo = &event.InReplyTo{EventID: id.EventID(replyTo)}
		} else {
			// Clients without threads show it as a reply to the root.
			rel.InReplyTo = &event.InReplyTo{EventID: id.EventID(thread)}
			rel.IsFallingBack = true
		}
		return rel
	case replyTo != "":
		return &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: id.EventID(replyTo)}}
	}
	return nil
}

// Send implements channels.Channel: the markdown as the body, the same
// answer as sanitised HTML in formatted_body, a reply to msg.ReplyTo (in
// msg.ThreadID's thread). m.mentions is empty: nothing the model writes
// pings anyone, @room included.
func (m *Matrix) Send(ctx context.Context, msg channels.OutMessage) (channels.Delivery, error) {
	var d channels.Delivery
	r, err := nativeRoom(msg.Chat)
	if err != nil {
		return d, err
	}
	ps := m.pieces(msg.Text)
	if len(ps) == 0 {
		return d, fmt.Errorf("matrix send to %s: empty message", msg.Chat)
	}
	for i, p := range ps {
		c := &event.MessageEventContent{MsgType: event.MsgText, Body: p.body, Format: event.FormatHTML,
			FormattedBody: p.html, Mentions: &event.Mentions{}}
		replyTo := ""
		if i == 0 {
			replyTo = msg.ReplyTo
		}
		c.RelatesTo = relation(msg.ThreadID, replyTo)
		evID, err := m.sendEvent(ctx, r, event.EventMessage, c)
		if err != nil {
			return d, fmt.Errorf("matrix send to %s (part %d of %d): %w", msg.Chat, i+1, len(ps), err)
		}
		d.MessageIDs = append(d.MessageIDs, evID)
	}
	return d, nil
}

// sendEvent PUTs one event under a transaction id of its own; mautrix's
// retries (network errors, 429, 502-504) repeat the same PUT. In an
// end-to-end encrypted room the event goes as m.room.encrypted.
func (m *Matrix) sendEvent(ctx context.Context, r id.RoomID, t event.Type, c any) (string, error) {
	if eng, err := m.encryptionFor(ctx, r); err != nil {
		return "", err
	} else if eng != nil {
		enc, err := eng.encrypt(ctx, r, t, c)
		if err != nil {
			return "", fmt.Errorf("matrix: encrypting for %s: %s", ChatID(r), m.redact(err.Error()))
		}
		t, c = event.EventEncrypted, enc
	}
	resp, err := m.cli.SendMessageEvent(ctx, r, t, c, mautrix.ReqSendEvent{TransactionID: txnID()})
	if err != nil {
		return "", m.sendError(err)
	}
	m.sent.add(string(resp.EventID))
	return string(resp.EventID), nil
}

// encryptionFor is the engine to seal a message to room r with, nil for
// a room in the clear. An encrypted room while botd's encryption is off
// is an error: nothing goes there in the clear.
func (m *Matrix) encryptionFor(ctx context.Context, r id.RoomID) (cryptoEngine, error) {
	if enc, err := m.roomEncrypted(ctx, r); err != nil || !enc {
		return nil, err
	}
	eng, off := m.cryptoState()
	if eng == nil {
		return nil, fmt.Errorf("matrix: %s is end-to-end encrypted and botd's encryption is off (%v); nothing is sent there in the clear: %w",
			ChatID(r), off, channels.ErrForbidden)
	}
	return eng, nil
}

func (m *Matrix) sendError(err error) error {
	msg := m.redact(err.Error())
	switch {
	case errors.Is(err, mautrix.MTooLarge):
		return fmt.Errorf("%s: %w", msg, channels.ErrTooLarge)
	case errors.Is(err, mautrix.MForbidden):
		return fmt.Errorf("%s (is botd joined and allowed to post?): %w", msg, channels.ErrForbidden)
	}
	return errors.New(msg)
}

// SendMedia implements channels.MediaSender: the file is uploaded from
// its descriptor (a fresh section reader, which mautrix rewinds for a
// retry), then posted as m.image, m.video, m.audio (a voice message with
// org.matrix.msc3245.voice) or m.file, the caption as its body.
func (m *Matrix) SendMedia(ctx context.Context, om channels.OutMedia) (channels.Delivery, error) {
	var d channels.Delivery
	r, err := nativeRoom(om.Chat)
	if err != nil {
		return d, err
	}
	name, size, err := om.Upload()
	if err != nil {
		return d, fmt.Errorf("matrix send media to %s: %w", om.Chat, err)
	}
	mt := mediaregistry.CleanMIME(om.MIME)
	if mt == "" {
		mt, _ = mediaregistry.FileMIME(om.File)
	}
	eng, err := m.encryptionFor(ctx, r)
	if err != nil {
		return d, err
	}
	req := mautrix.ReqUploadMedia{
		Content: io.NewSectionReader(om.File, 0, size), ContentLength: size, ContentType: mt, FileName: name,
	}
	var ef *attachment.EncryptedFile
	if eng != nil {
		// An encrypted room's file is uploaded encrypted (AES-CTR: as long
		// as the plaintext); its key and hash go in the encrypted event.
		// The stream rewinds for a retry, and its hash is final at Close.
		ef = attachment.NewEncryptedFile()
		req.Content = ef.EncryptStream(req.Content)
		req.ContentType, req.FileName = "application/octet-stream", ""
	}
	up, err := m.cli.UploadMedia(ctx, req)
	if err != nil {
		return d, fmt.Errorf("matrix upload %s to %s: %w", name, om.Chat, m.sendError(err))
	}
	c := &event.MessageEventContent{
		MsgType:  mediaMsgType(mt),
		Body:     name,
		FileName: name,
		URL:      up.ContentURI.CUString(),
		Info:     &event.FileInfo{MimeType: mt, Size: int(size)},
		Mentions: &event.Mentions{},
	}
	if ef != nil {
		if err := req.Content.(io.Closer).Close(); err != nil {
			return d, fmt.Errorf("matrix upload %s to %s: %w", name, om.Chat, err)
		}
		c.URL = ""
		c.File = &event.EncryptedFileInfo{EncryptedFile: *ef, URL: up.ContentURI.CUString()}
	}
	if om.Voice && c.MsgType == event.MsgAudio {
		c.MSC3245Voice = &event.MSC3245Voice{}
		c.MSC1767Audio = &event.MSC1767Audio{}
	}
	if caption := strings.TrimSpace(om.Caption); caption != "" {
		if ps := m.pieces(caption); len(ps) == 1 {
			c.Body, c.Format, c.FormattedBody = ps[0].body, event.FormatHTML, ps[0].html
		}
	}
	c.RelatesTo = relation(om.ThreadID, "")
	evID, err := m.sendEvent(ctx, r, event.EventMessage, c)
	if err != nil {
		return d, fmt.Errorf("matrix send media to %s: %w", om.Chat, err)
	}
	d.MessageIDs = append(d.MessageIDs, evID)
	if caption := strings.TrimSpace(om.Caption); caption != "" && c.FormattedBody == "" {
		// Too long for one event's body: the caption follows as text.
		more, err := m.Send(ctx, channels.OutMessage{Chat: om.Chat, Text: caption, ThreadID: om.ThreadID})
		d.MessageIDs = append(d.MessageIDs, more.MessageIDs...)
		if err != nil {
			return d, fmt.Errorf("matrix send media caption: %w", err)
		}
	}
	return d, nil
}

func mediaMsgType(mt string) event.MessageType {
	switch {
	case strings.HasPrefix(mt, "image/"):
		return event.MsgImage
	case strings.HasPrefix(mt, "video/"):
		return event.MsgVideo
	case strings.HasPrefix(mt, "audio/"):
		return event.MsgAudio
	}
	return event.MsgFile
}

// typingLoop keeps "typing…" on in one room.
type typingLoop struct {
	stop    context.CancelFunc
	renewed atomic.Int64 // unix nanoseconds of the last "on"
}

// SetTyping implements channels.Typer. A Matrix typing notice lasts
// typingTimeout, so on=true renews it every typingEvery until on=false,
// the channel stops, or typingMax passes without a renewal (a forgotten
// "off" must not leave the bot typing forever).
func (m *Matrix) SetTyping(ctx context.Context, chat string, on bool) error {
	r, err := nativeRoom(chat)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if cur, ok := m.typing[chat]; ok {
		if on {
			cur.renewed.Store(time.Now().UnixNano())
			m.mu.Unlock()
			return nil
		}
		cur.stop()
		delete(m.typing, chat)
	}
	base := m.runCtx
	m.mu.Unlock()
	if _, err := m.cli.UserTyping(ctx, r, on, m.typingTimeout); err != nil {
		return fmt.Errorf("matrix typing in %s: %s", chat, m.redact(err.Error()))
	}
	if !on {
		return nil
	}
	if base == nil {
		base = context.Background()
	}
	loopCtx, stop := context.WithCancel(base)
	loop := &typingLoop{stop: stop}
	loop.renewed.Store(time.Now().UnixNano())
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		stop()
		return nil
	}
	if old, ok := m.typing[chat]; ok {
		old.stop()
	}
	m.typing[chat] = loop
	tracked := m.runCtx != nil
	if tracked {
		m.wg.Add(1)
	}
	m.mu.Unlock()
	go func() {
		if tracked {
			defer m.wg.Done()
		}
		defer func() {
			stop()
			m.mu.Lock()
			if m.typing[chat] == loop {
				delete(m.typing, chat)
			}
			m.mu.Unlock()
		}()
		clock.Every(loopCtx, m.typingEvery, func() {
			if time.Since(time.Unix(0, loop.renewed.Load())) > m.typingMax {
				stop()
				return
			}
			if _, err := m.cli.UserTyping(loopCtx, r, true, m.typingTimeout); err != nil && loopCtx.Err() == nil {
				m.log.Debug("matrix: typing refresh failed", "chat", chat, "err", m.redact(err.Error()))
			}
		})
	}()
	return nil
}
