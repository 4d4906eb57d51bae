package whatsapp

import (
	"fmt"
	"strings"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// content is what one received message carries, read from the event alone
// (no connection, no download). Media refs are complete except for the id,
// which only registration assigns.
type content struct {
	ID   string // the message this text belongs to; the original on edits
	Edit bool
	// Text is the message's own text, raw (neutralised later); captions
	// stay with their media.
	Text  string
	Media []mediaregistry.MediaReference
	// Links is the link preview the sender's app attached, raw (Compose
	// cleans it). Its thumbnail is never fetched.
	Links []channels.LinkPreview
	// Context of a reply or mention.
	ReplyTo           string
	QuotedParticipant string
	QuotedText        string
	Mentions          []string
}

// empty reports a message with nothing botd shows (reactions, receipts,
// protocol messages, polls...).
func (c content) empty() bool { return c.Text == "" && len(c.Media) == 0 }

// extract reads text and media metadata from a message event. chat and
// sender are the normalised ids the refs are filed under.
func extract(evt *events.Message, chat, sender string) (content, error) {
	c := content{ID: evt.Info.ID}
	msg := evt.Message
	// Edits arrive as a protocol message naming the original; the new
	// content replaces the stored text of that message.
	if pm := msg.GetProtocolMessage(); pm.GetType() == waE2E.ProtocolMessage_MESSAGE_EDIT && pm.GetEditedMessage() != nil {
		c.Edit = true
		if id := pm.GetKey().GetID(); id != "" {
			c.ID = id
		}
		msg = pm.GetEditedMessage()
	} else if evt.IsEdit {
		c.Edit = true
	}
	if msg == nil {
		return c, nil
	}

	var ctxInfo *waE2E.ContextInfo
	switch {
	case msg.Conversation != nil:
		c.Text = msg.GetConversation()
	case msg.ExtendedTextMessage != nil:
		et := msg.GetExtendedTextMessage()
		c.Text = et.GetText()
		ctxInfo = et.GetContextInfo()
		if et.GetTitle() != "" || et.GetDescription() != "" {
			// The sender's app fetched the page and wrote what it found;
			// MatchedText is the link as it stands in the text (this proto
			// no longer has a canonical URL).
			c.Links = []channels.LinkPreview{{URL: et.GetMatchedText(), Title: et.GetTitle(),
				Description: et.GetDescription()}}
		}
	}

	add := func(m downloadable, ref mediaregistry.MediaReference, ci *waE2E.ContextInfo) error {
		if ctxInfo == nil {
			ctxInfo = ci
		}
		// A caption edit may carry the media without its keys: keep the
		// new caption as text rather than file a ref that cannot download.
		if c.Edit && len(m.GetMediaKey()) == 0 {
			if c.Text == "" {
				c.Text = ref.Caption
			}
			return nil
		}
		priv, err := encodeHandle(m, &evt.Info)
		if err != nil {
			return err
		}
		ref.Channel = channelName
		ref.Chat = chat
		ref.Sender = sender
		ref.MessageID = c.ID
		ref.Private = priv
		c.Media = append(c.Media, ref)
		return nil
	}

	var err error
	switch {
	case msg.ImageMessage != nil:
		m := msg.GetImageMessage()
		ref := pictureRef(m, mediaregistry.Image)
		ref.Caption = m.GetCaption()
		err = add(m, ref, m.GetContextInfo())
	case msg.PtvMessage != nil:
		m := msg.GetPtvMessage()
		err = add(m, videoRef(m, mediaregistry.VideoNote), m.GetContextInfo())
	case msg.VideoMessage != nil:
		m := msg.GetVideoMessage()
		kind := mediaregistry.Video
		if m.GetGifPlayback() {
			kind = mediaregistry.Animation
		}
		err = add(m, videoRef(m, kind), m.GetContextInfo())
	case msg.AudioMessage != nil:
		m := msg.GetAudioMessage()
		kind := mediaregistry.Audio
		if m.GetPTT() {
			kind = mediaregistry.Voice
		}
		err = add(m, mediaregistry.MediaReference{
			Kind:     kind,
			MIME:     m.GetMimetype(),
			Size:     int64(m.GetFileLength()),
			Duration: time.Duration(m.GetSeconds()) * time.Second,
		}, m.GetContextInfo())
	case msg.DocumentMessage != nil:
		m := msg.GetDocumentMessage()
		name := m.GetFileName()
		if name == "" {
			name = m.GetTitle()
		}
		caption := m.GetCaption()
		// The placeholder has no page field; the count is useful to the
		// agent before it decides to fetch, so it leads the caption.
		if p := m.GetPageCount(); p > 0 {
			caption = strings.TrimSpace(fmt.Sprintf("(%d %s) %s", p, plural(p, "page"), caption))
		}
		err = add(m, mediaregistry.MediaReference{
			Kind:     mediaregistry.Document,
			MIME:     m.GetMimetype(),
			FileName: name,
			Size:     int64(m.GetFileLength()),
			Caption:  caption,
		}, m.GetContextInfo())
	case msg.StickerMessage != nil:
		m := msg.GetStickerMessage()
		err = add(m, pictureRef(m, mediaregistry.Sticker), m.GetContextInfo())
	}
	if err != nil {
		return c, err
	}

	if ctxInfo != nil {
		c.ReplyTo = ctxInfo.GetStanzaID()
		c.QuotedParticipant = ctxInfo.GetParticipant()
		if q := ctxInfo.GetQuotedMessage(); q != nil {
			c.QuotedText = q.GetConversation()
			if c.QuotedText == "" {
				c.QuotedText = q.GetExtendedTextMessage().GetText()
			}
		}
		c.Mentions = ctxInfo.GetMentionedJID()
	}
	return c, nil
}

// picture is what image, sticker and video messages all tell of themselves.
type picture interface {
	GetMimetype() string
	GetFileLength() uint64
	GetWidth() uint32
	GetHeight() uint32
}

func pictureRef(m picture, kind mediaregistry.Kind) mediaregistry.MediaReference {
	return mediaregistry.MediaReference{
		Kind:   kind,
		MIME:   m.GetMimetype(),
		Size:   int64(m.GetFileLength()),
		Width:  int(m.GetWidth()),
		Height: int(m.GetHeight()),
	}
}

func videoRef(m *waE2E.VideoMessage, kind mediaregistry.Kind) mediaregistry.MediaReference {
	ref := pictureRef(m, kind)
	ref.Duration = time.Duration(m.GetSeconds()) * time.Second
	ref.Caption = m.GetCaption()
	return ref
}

func plural(n uint32, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
