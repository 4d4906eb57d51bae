package telegram

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/mediaregistry"
)

// fileHandle is what a ref's Private holds: enough to call getFile later.
// file_id is a bearer handle for this bot only, so it stays in the
// registry and never reaches ipc/ or groups/.
type fileHandle struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

func encodeHandle(h fileHandle) []byte {
	b, _ := json.Marshal(h) // a struct of strings and ints always marshals
	return b
}

// decodeHandle reads Private; a bare file_id (not JSON) is accepted too.
func decodeHandle(p []byte) fileHandle {
	var h fileHandle
	if len(p) > 0 && p[0] == '{' && json.Unmarshal(p, &h) == nil {
		return h
	}
	return fileHandle{FileID: strings.TrimSpace(string(p))}
}

// Extract turns the attachment of a message into refs, metadata only:
// it never calls the API. The refs have no ID yet (the registry assigns
// it). Telegram carries at most one attachment per message; an album is
// several messages sharing a media_group_id, each extracted on its own.
func Extract(chat string, msg *models.Message) []mediaregistry.MediaReference {
	if msg == nil {
		return nil
	}
	ref := mediaregistry.MediaReference{
		Channel:   "telegram",
		Chat:      chat,
		MessageID: strconv.Itoa(msg.ID),
		Sender:    senderID(msg),
		Caption:   msg.Caption,
	}
	var h fileHandle
	switch {
	case len(msg.Photo) > 0:
		p := largestPhoto(msg.Photo)
		h = fileHandle{FileID: p.FileID, FileUniqueID: p.FileUniqueID, FileSize: int64(p.FileSize)}
		// The Bot API re-encodes every compressed photo as JPEG.
		ref.Kind, ref.MIME = mediaregistry.Image, "image/jpeg"
		ref.Width, ref.Height = p.Width, p.Height
	// Telegram sets both animation and document on a GIF/MP4 animation
	// (for old clients); the animation is the truth.
	case msg.Animation != nil:
		a := msg.Animation
		h = fileHandle{FileID: a.FileID, FileUniqueID: a.FileUniqueID, FileSize: a.FileSize}
		ref.Kind, ref.MIME, ref.FileName = mediaregistry.Animation, a.MimeType, a.FileName
		ref.Width, ref.Height, ref.Duration = a.Width, a.Height, seconds(a.Duration)
	case msg.Document != nil:
		d := msg.Document
		h = fileHandle{FileID: d.FileID, FileUniqueID: d.FileUniqueID, FileSize: d.FileSize}
		ref.Kind, ref.MIME, ref.FileName = mediaregistry.Document, d.MimeType, d.FileName
	case msg.Voice != nil:
		v := msg.Voice
		h = fileHandle{FileID: v.FileID, FileUniqueID: v.FileUniqueID, FileSize: v.FileSize}
		ref.Kind, ref.MIME, ref.Duration = mediaregistry.Voice, orDefault(v.MimeType, "audio/ogg"), seconds(v.Duration)
	case msg.Audio != nil:
		a := msg.Audio
		h = fileHandle{FileID: a.FileID, FileUniqueID: a.FileUniqueID, FileSize: a.FileSize}
		ref.Kind, ref.MIME, ref.Duration = mediaregistry.Audio, a.MimeType, seconds(a.Duration)
		ref.FileName = a.FileName
		if ref.FileName == "" {
			ref.FileName = strings.TrimSpace(strings.Trim(a.Performer+" - "+a.Title, " -"))
		}
	case msg.Video != nil:
		v := msg.Video
		h = fileHandle{FileID: v.FileID, FileUniqueID: v.FileUniqueID, FileSize: v.FileSize}
		ref.Kind, ref.MIME, ref.FileName = mediaregistry.Video, orDefault(v.MimeType, "video/mp4"), v.FileName
		ref.Width, ref.Height, ref.Duration = v.Width, v.Height, seconds(v.Duration)
	case msg.VideoNote != nil:
		v := msg.VideoNote
		h = fileHandle{FileID: v.FileID, FileUniqueID: v.FileUniqueID, FileSize: int64(v.FileSize)}
		// Round video messages are always square MP4.
		ref.Kind, ref.MIME = mediaregistry.VideoNote, "video/mp4"
		ref.Width, ref.Height, ref.Duration = v.Length, v.Length, seconds(v.Duration)
	case msg.Sticker != nil:
		s := msg.Sticker
		h = fileHandle{FileID: s.FileID, FileUniqueID: s.FileUniqueID, FileSize: int64(s.FileSize)}
		ref.Kind, ref.MIME = mediaregistry.Sticker, stickerMIME(s)
		ref.Width, ref.Height = s.Width, s.Height
		// A sticker has no caption; its emoji is the closest thing to one
		// and tells the agent what was meant without fetching it.
		ref.Caption = s.Emoji
	default:
		return nil
	}
	if h.FileID == "" {
		return nil
	}
	ref.Size = h.FileSize
	// Declared by the sender's client: keep only a well-formed type/subtype.
	ref.MIME = mediaregistry.CleanMIME(ref.MIME)
	ref.Private = encodeHandle(h)
	return []mediaregistry.MediaReference{ref}
}

// largestPhoto picks the biggest rendition; Telegram lists them smallest
// first, but the order is not documented, so compare.
func largestPhoto(ps []models.PhotoSize) models.PhotoSize {
	best := ps[0]
	for _, p := range ps[1:] {
		if p.Width*p.Height > best.Width*best.Height ||
			(p.Width*p.Height == best.Width*best.Height && p.FileSize > best.FileSize) {
			best = p
		}
	}
	return best
}

func stickerMIME(s *models.Sticker) string {
	switch {
	case s.IsAnimated:
		return "application/x-tgsticker"
	case s.IsVideo:
		return "video/webm"
	default:
		return "image/webp"
	}
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func senderID(msg *models.Message) string {
	switch {
	case msg.From != nil:
		return strconv.FormatInt(msg.From.ID, 10)
	case msg.SenderChat != nil:
		return strconv.FormatInt(msg.SenderChat.ID, 10)
	}
	return ""
}
