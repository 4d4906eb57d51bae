// Package mediaregistry holds media references: the metadata a channel
// extracts without downloading, the TTL registry that scopes each ref to its
// chat, the placeholder text the agent reads, and the media cache.
package mediaregistry

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Kind is the placeholder's first word.
type Kind string

const (
	Image     Kind = "Image"
	Video     Kind = "Video"
	Audio     Kind = "Audio"
	Voice     Kind = "Voice"
	Document  Kind = "Document"
	Sticker   Kind = "Sticker"
	Animation Kind = "Animation"
	VideoNote Kind = "VideoNote"
)

// Kinds lists every kind in a stable order.
var Kinds = []Kind{Image, Video, Audio, Voice, Document, Sticker, Animation, VideoNote}

// ParseKind accepts a kind name case-insensitively ("image", "Image").
func ParseKind(s string) (Kind, bool) {
	for _, k := range Kinds {
		if equalASCIIFold(string(k), s) {
			return k, true
		}
	}
	return "", false
}

func equalASCIIFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// MediaReference is everything botd knows about one attachment before (and
// without) downloading it.
type MediaReference struct {
	ID        string
	Channel   string // telegram | slack | whatsapp
	Chat      string // "<channel>:<native id>"
	MessageID string
	Sender    string
	Kind      Kind
	MIME      string
	FileName  string
	Size      int64 // bytes; 0 when unknown
	Duration  time.Duration
	Width     int
	Height    int
	Caption   string
	// Private is the channel's download handle (a Telegram file_id, a Slack
	// private URL, a WhatsApp media proto with its keys). Opaque here, never
	// rendered, never written to ipc/ or groups/.
	Private []byte
	Created time.Time
	Expires time.Time
}

// Generated is the channel of media botd made itself (generate_image,
// speak, video jobs): its bytes exist only in the cache, never on a network.
const Generated = "generated"

// Link is the channel of pages fetch_url fetched: the bytes come from the
// web address in Private, asked for by the agent, never by a chat member.
const Link = "link"

// Prefix is the ref id prefix of each channel: botd's own here, each
// network's from its RegisterNetwork.
var Prefix = map[string]string{Generated: "gn", Link: "ln"}

// RegisterNetwork gives a network's refs their id prefix and their default
// lifetime (DefaultRefTTL). A network calls it once, from its package's
// init (through channels.Register), before anything reads the tables; a
// name or prefix taken twice is a programming error and panics.
func RegisterNetwork(name, prefix string, ttl time.Duration) {
	if name == "" || prefix == "" || ttl <= 0 {
		panic(fmt.Sprintf("mediaregistry: network %q needs a name, a ref prefix and a positive ref lifetime", name))
	}
	if _, ok := Prefix[name]; ok {
		panic(fmt.Sprintf("mediaregistry: network %q registered twice", name))
	}
	for other, p := range Prefix {
		if p == prefix {
			panic(fmt.Sprintf("mediaregistry: ref prefix %q of %q is %q's already", prefix, name, other))
		}
	}
	Prefix[name] = prefix
	DefaultRefTTL[name] = ttl
}

const (
	idRandLen = 12
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// NewID returns "<prefix>_" plus 12 base62 characters drawn from a random
// UUID (122 random bits, of which the id keeps ~71): unguessable, short
// enough to read in a placeholder.
func NewID(channel string) (string, error) {
	p, ok := Prefix[channel]
	if !ok {
		return "", fmt.Errorf("new media ref: unknown channel %q", channel)
	}
	u, err := uuid.NewRandomFromReader(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("new media ref: %w", err)
	}
	buf := make([]byte, 0, len(p)+1+idRandLen)
	buf = append(buf, p...)
	buf = append(buf, '_')
	// Take 6 bits at a time from the random bytes (skipping the uuid's
	// version/variant nibbles) and reject values ≥ 62 to stay unbiased.
	bits := randomBits(u)
	for len(buf) < cap(buf) {
		if len(bits) == 0 {
			u, err = uuid.NewRandomFromReader(rand.Reader)
			if err != nil {
				return "", fmt.Errorf("new media ref: %w", err)
			}
			bits = randomBits(u)
		}
		v := bits[0]
		bits = bits[1:]
		if v < 62 {
			buf = append(buf, base62[v])
		}
	}
	return string(buf), nil
}

// LinkID is the ref id of a web address fetched for chat: the same for
// every fetch of it there, so its bytes, its note and its group copy are
// found again, and unrelated between chats (a group never learns what
// another one fetched).
func LinkID(chat, rawURL string) string {
	sum := sha256.Sum256([]byte(chat + "\x00" + rawURL))
	buf := append(make([]byte, 0, 3+idRandLen), "ln_"...)
	// 6 bits a byte, unbiased enough for an id that only has to be
	// unique (the chat scopes who may fetch it, not its secrecy).
	for i := 0; len(buf) < cap(buf); i++ {
		buf = append(buf, base62[int(sum[i])%62])
	}
	return string(buf)
}

// randomBits yields 6-bit values from the 122 random bits of a v4 UUID.
func randomBits(u uuid.UUID) []byte {
	b := u
	b[6] &= 0x0f // drop version nibble
	b[8] &= 0x3f // drop variant bits
	var acc uint32
	var n uint
	out := make([]byte, 0, 20)
	for i, x := range b {
		width := uint(8)
		switch i {
		case 6:
			width = 4
		case 8:
			width = 6
		}
		acc = acc<<width | uint32(x)&(1<<width-1)
		n += width
		for n >= 6 {
			n -= 6
			out = append(out, byte(acc>>n)&0x3f)
		}
	}
	return out
}
