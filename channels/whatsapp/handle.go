package whatsapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"
)

// handleVersion is bumped when mediaHandle changes shape; refs outlive a
// process (they are in SQLite), so old versions must keep decoding.
const handleVersion = 1

// mediaHandle is what a WhatsApp ref keeps in MediaReference.Private: the
// media sub-message (direct path, media key, hashes) and the message
// coordinates the phone needs to answer a media retry receipt. JSON around
// a marshalled proto, so the container is readable and the proto part is
// forward compatible with whatsmeow's own schema changes.
type mediaHandle struct {
	V       int    `json:"v"`
	Type    string `json:"type"`  // proto message name, e.g. "ImageMessage"
	Proto   []byte `json:"proto"` // marshalled sub-message (base64 in JSON)
	Chat    string `json:"chat"`
	Sender  string `json:"sender,omitempty"`
	ID      string `json:"id"`
	FromMe  bool   `json:"from_me,omitempty"`
	IsGroup bool   `json:"group,omitempty"`
	TS      int64  `json:"ts,omitempty"` // unix seconds
}

// decoded is a decoded handle: the downloadable sub-message and the message
// info for SendMediaRetryReceipt.
type decoded struct {
	Msg  downloadable
	Info types.MessageInfo
}

// downloadable is a media sub-message whatsmeow can download.
type downloadable interface {
	proto.Message
	whatsmeow.DownloadableMessage
}

// newMediaMessage maps the stored type name to an empty sub-message; a
// closed list, so Private bytes can never instantiate arbitrary protos.
var newMediaMessage = map[string]func() downloadable{
	"ImageMessage":    func() downloadable { return &waE2E.ImageMessage{} },
	"VideoMessage":    func() downloadable { return &waE2E.VideoMessage{} },
	"AudioMessage":    func() downloadable { return &waE2E.AudioMessage{} },
	"DocumentMessage": func() downloadable { return &waE2E.DocumentMessage{} },
	"StickerMessage":  func() downloadable { return &waE2E.StickerMessage{} },
}

var errBadHandle = errors.New("whatsapp: media handle is not readable")

// encodeHandle builds Private for one sub-message of a received message.
// Thumbnails and quoted context are dropped: they are not needed to
// download and can be much larger than the rest.
func encodeHandle(msg downloadable, info *types.MessageInfo) ([]byte, error) {
	name := string(msg.ProtoReflect().Descriptor().Name())
	if _, ok := newMediaMessage[name]; !ok {
		return nil, fmt.Errorf("whatsapp: encode media handle: unsupported %s", name)
	}
	slim := proto.Clone(msg).(downloadable)
	stripBulk(slim)
	b, err := proto.Marshal(slim)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: encode media handle: %w", err)
	}
	h := mediaHandle{
		V:       handleVersion,
		Type:    name,
		Proto:   b,
		Chat:    info.Chat.String(),
		ID:      info.ID,
		FromMe:  info.IsFromMe,
		IsGroup: info.IsGroup,
	}
	if !info.Sender.IsEmpty() {
		h.Sender = info.Sender.String()
	}
	if !info.Timestamp.IsZero() {
		h.TS = info.Timestamp.Unix()
	}
	return json.Marshal(h)
}

func stripBulk(m downloadable) {
	switch v := m.(type) {
	case *waE2E.ImageMessage:
		v.JPEGThumbnail, v.ContextInfo, v.ScansSidecar, v.FirstScanSidecar = nil, nil, nil, nil
		v.InteractiveAnnotations, v.Annotations = nil, nil
	case *waE2E.VideoMessage:
		v.JPEGThumbnail, v.ContextInfo, v.StreamingSidecar = nil, nil, nil
		v.InteractiveAnnotations, v.Annotations, v.ProcessedVideos = nil, nil, nil
	case *waE2E.AudioMessage:
		v.ContextInfo, v.StreamingSidecar, v.Waveform = nil, nil, nil
	case *waE2E.DocumentMessage:
		v.JPEGThumbnail, v.ContextInfo = nil, nil
	case *waE2E.StickerMessage:
		v.PngThumbnail, v.ContextInfo, v.FirstFrameSidecar = nil, nil, nil
	}
}

// decodeHandle reads Private back; it needs nothing but the bytes, so a
// ref survives a restart.
func decodeHandle(private []byte) (*decoded, error) {
	var h mediaHandle
	if err := json.Unmarshal(private, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadHandle, err)
	}
	if h.V != handleVersion {
		return nil, fmt.Errorf("%w: version %d", errBadHandle, h.V)
	}
	mk, ok := newMediaMessage[h.Type]
	if !ok {
		return nil, fmt.Errorf("%w: type %q", errBadHandle, h.Type)
	}
	msg := mk()
	if err := proto.Unmarshal(h.Proto, msg); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadHandle, err)
	}
	m := &decoded{Msg: msg}
	m.Info.ID = h.ID
	m.Info.IsFromMe = h.FromMe
	m.Info.IsGroup = h.IsGroup
	var err error
	if m.Info.Chat, err = types.ParseJID(h.Chat); err != nil {
		return nil, fmt.Errorf("%w: chat: %w", errBadHandle, err)
	}
	if h.Sender != "" {
		if m.Info.Sender, err = types.ParseJID(h.Sender); err != nil {
			return nil, fmt.Errorf("%w: sender: %w", errBadHandle, err)
		}
	}
	if h.TS != 0 {
		m.Info.Timestamp = time.Unix(h.TS, 0)
	}
	return m, nil
}
