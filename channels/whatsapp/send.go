package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// textLimit keeps messages readable on a phone; WhatsApp itself accepts
// about 65k characters.
const textLimit = 4000

// parseChat turns "whatsapp:<jid>" into a JID.
func parseChat(chat string) (types.JID, error) {
	native, ok := strings.CutPrefix(chat, channelName+":")
	if !ok || native == "" {
		return types.JID{}, fmt.Errorf("whatsapp: chat %q is not a whatsapp chat id", chat)
	}
	j, err := types.ParseJID(native)
	if err != nil || !validUser(j.User) {
		return types.JID{}, fmt.Errorf("whatsapp: chat %q: invalid jid", chat)
	}
	switch j.Server {
	case types.DefaultUserServer, types.GroupServer, types.HiddenUserServer, types.NewsletterServer:
		return j, nil
	}
	return types.JID{}, fmt.Errorf("whatsapp: chat %q: not a user or group jid", chat)
}

// validUser accepts phone numbers, LIDs and group ids ("120363…", or the
// old "<creator>-<timestamp>").
func validUser(u string) bool {
	if u == "" {
		return false
	}
	for _, r := range u {
		if (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// Send delivers text, split to the limit; on a shared number every piece
// carries the assistant's name so people (and botd) can tell it apart
// from the owner.
func (w *WhatsApp) Send(ctx context.Context, msg channels.OutMessage) (channels.Delivery, error) {
	var d channels.Delivery
	cli, err := w.client()
	if err != nil {
		return d, err
	}
	to, err := parseChat(msg.Chat)
	if err != nil {
		return d, err
	}
	pieces := render(msg.Text, textLimit-len(w.botPrefix()))
	if len(pieces) == 0 {
		return d, errors.New("whatsapp send: empty message")
	}
	for _, p := range pieces {
		id, err := w.sendMessage(ctx, cli, to, &waE2E.Message{Conversation: proto.String(w.label(p))})
		if err != nil {
			return d, err
		}
		d.MessageIDs = append(d.MessageIDs, id)
	}
	return d, nil
}

func (w *WhatsApp) label(text string) string {
	if !w.cfg.SharedNumber || text == "" {
		return text
	}
	return w.botPrefix() + text
}

func (w *WhatsApp) sendMessage(ctx context.Context, cli client, to types.JID, m *waE2E.Message) (string, error) {
	resp, err := cli.SendMessage(ctx, to, m)
	if err != nil {
		return "", fmt.Errorf("whatsapp send to %s: %w", to, err)
	}
	w.sent.add(resp.ID)
	return resp.ID, nil
}

// SendMedia uploads a file (streamed through an encrypted temp file by
// whatsmeow's UploadReader) and sends it as an image, video, audio or
// document by its MIME type.
func (w *WhatsApp) SendMedia(ctx context.Context, m channels.OutMedia) (channels.Delivery, error) {
	var d channels.Delivery
	cli, err := w.client()
	if err != nil {
		return d, err
	}
	to, err := parseChat(m.Chat)
	if err != nil {
		return d, err
	}
	st, err := m.File.Stat()
	if err != nil {
		return d, fmt.Errorf("whatsapp send media: %w", err)
	}
	// The caller decided the type with mediaregistry.FileMIME; only a
	// caller that did not gets it decided here, the same way.
	mt := m.MIME
	if mt == "" {
		if mt, err = mediaregistry.FileMIME(m.File); err != nil {
			return d, fmt.Errorf("whatsapp send media: %w", err)
		}
	}
	name := m.FileName
	if name == "" {
		name = filepath.Base(m.File.Name())
	}
	kind := mediaKind(mt)
	up, err := cli.UploadReader(ctx, io.NewSectionReader(m.File, 0, st.Size()), nil, kind)
	if err != nil {
		return d, fmt.Errorf("whatsapp upload %s: %w", name, err)
	}
	caption := w.label(strings.Join(render(m.Caption, 0), "\n\n"))
	if caption == "" && w.cfg.SharedNumber {
		caption = strings.TrimSpace(w.botPrefix())
	}
	msg, captionSent := buildMediaMessage(kind, mt, name, caption, &up)
	if am := msg.GetAudioMessage(); am != nil && m.Voice {
		// Push-to-talk: the apps show it as a voice note, which they play
		// from OGG/Opus and want labelled with its codec.
		am.PTT = proto.Bool(true)
		if b, _, _ := strings.Cut(mt, ";"); strings.TrimSpace(b) == "audio/ogg" {
			am.Mimetype = proto.String("audio/ogg; codecs=opus")
		}
	}
	id, err := w.sendMessage(ctx, cli, to, msg)
	if err != nil {
		return d, err
	}
	d.MessageIDs = append(d.MessageIDs, id)
	if !captionSent && m.Caption != "" {
		// Audio has no caption field: the text follows as its own message.
		id, err := w.sendMessage(ctx, cli, to, &waE2E.Message{Conversation: proto.String(caption)})
		if err != nil {
			return d, err
		}
		d.MessageIDs = append(d.MessageIDs, id)
	}
	return d, nil
}

// mediaKind picks how WhatsApp shows the file. Only formats the apps play
// inline become image/video/audio; anything else is a document.
func mediaKind(mt string) whatsmeow.MediaType {
	base, _, _ := strings.Cut(mt, ";")
	switch strings.ToLower(strings.TrimSpace(base)) {
	case "image/jpeg", "image/png", "image/webp":
		return whatsmeow.MediaImage
	case "video/mp4", "video/3gpp":
		return whatsmeow.MediaVideo
	case "audio/ogg", "audio/mpeg", "audio/mp4", "audio/aac", "audio/amr", "audio/opus":
		return whatsmeow.MediaAudio
	}
	return whatsmeow.MediaDocument
}

func buildMediaMessage(kind whatsmeow.MediaType, mt, name, caption string, up *whatsmeow.UploadResponse) (*waE2E.Message, bool) {
	var capt *string
	if caption != "" {
		capt = proto.String(caption)
	}
	switch kind {
	case whatsmeow.MediaImage:
		return &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(mt), Caption: capt,
		}}, true
	case whatsmeow.MediaVideo:
		return &waE2E.Message{VideoMessage: &waE2E.VideoMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(mt), Caption: capt,
		}}, true
	case whatsmeow.MediaAudio:
		return &waE2E.Message{AudioMessage: &waE2E.AudioMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(mt),
		}}, false
	default:
		return &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(mt), FileName: proto.String(name), Title: proto.String(name), Caption: capt,
		}}, true
	}
}

// SetTyping shows or clears "typing…" in a chat.
func (w *WhatsApp) SetTyping(ctx context.Context, chat string, on bool) error {
	cli, err := w.client()
	if err != nil {
		return err
	}
	to, err := parseChat(chat)
	if err != nil {
		return err
	}
	state := types.ChatPresencePaused
	if on {
		state = types.ChatPresenceComposing
	}
	if err := cli.SendChatPresence(ctx, to, state, types.ChatPresenceMediaText); err != nil {
		return fmt.Errorf("whatsapp typing: %w", err)
	}
	return nil
}
