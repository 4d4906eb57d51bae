package matrix

import (
	"encoding/json"
	"sync"
	"time"

	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"

	"github.com/botd-dev/botd/mediaregistry"
)

// mediaHandle is what a ref's Private holds: the mxc:// URI and, for an
// encrypted attachment, its key, iv and hash. The key is a secret of the
// room, so it stays in the registry and never reaches ipc/ or groups/.
type mediaHandle struct {
	MXC  string                    `json:"mxc"`
	File *attachment.EncryptedFile `json:"file,omitempty"`
}

func encodeHandle(h mediaHandle) []byte {
	b, _ := json.Marshal(h) // strings only: always marshals
	return b
}

func decodeHandle(p []byte) (mediaHandle, error) {
	var h mediaHandle
	err := json.Unmarshal(p, &h)
	return h, err
}

// extract turns a media event into a ref, metadata only: it never calls
// the homeserver. kind "" picks it from the msgtype. No ref without an
// mxc:// URI to fetch later.
func extract(chat string, evt *event.Event, c *event.MessageEventContent, kind mediaregistry.Kind) []mediaregistry.MediaReference {
	h := mediaHandle{MXC: string(c.URL)}
	if c.File != nil {
		ef := c.File.EncryptedFile
		h = mediaHandle{MXC: string(c.File.URL), File: &ef}
	}
	if _, err := parseMXC(h.MXC); err != nil {
		return nil
	}
	if kind == "" {
		switch c.MsgType {
		case event.MsgImage:
			kind = mediaregistry.Image
		case event.MsgVideo:
			kind = mediaregistry.Video
		case event.MsgAudio:
			kind = mediaregistry.Audio
			if c.MSC3245Voice != nil {
				kind = mediaregistry.Voice
			}
		default:
			kind = mediaregistry.Document
		}
	}
	ref := mediaregistry.MediaReference{
		Channel:   Name,
		Chat:      chat,
		MessageID: string(evt.ID),
		Sender:    string(evt.Sender),
		Kind:      kind,
		FileName:  c.GetFileName(),
		Caption:   c.GetCaption(),
		Private:   encodeHandle(h),
	}
	if kind == mediaregistry.Sticker {
		// A sticker's body is its description, the closest thing to a caption.
		ref.FileName, ref.Caption = "", c.Body
	}
	if info := c.Info; info != nil {
		// Declared by the sender's client: keep only a well-formed type.
		ref.MIME = mediaregistry.CleanMIME(info.MimeType)
		ref.Size = int64(max(info.Size, 0))
		ref.Width, ref.Height = max(info.Width, 0), max(info.Height, 0)
		ref.Duration = time.Duration(max(info.Duration, 0)) * time.Millisecond
	}
	if ref.Duration == 0 && c.MSC1767Audio != nil && c.MSC1767Audio.Duration > 0 {
		ref.Duration = time.Duration(c.MSC1767Audio.Duration) * time.Millisecond
	}
	return []mediaregistry.MediaReference{ref}
}

// recent is a bounded set of ids, oldest forgotten first.
type recent struct {
	mu    sync.Mutex
	max   int
	set   map[string]struct{}
	order []string
}

func newRecent(n int) *recent { return &recent{max: n, set: map[string]struct{}{}} }

func (r *recent) add(s string) {
	if s == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[s]; ok {
		return
	}
	if len(r.order) >= r.max {
		delete(r.set, r.order[0])
		r.order = r.order[1:]
	}
	r.set[s] = struct{}{}
	r.order = append(r.order, s)
}

func (r *recent) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[s]
	return ok
}
