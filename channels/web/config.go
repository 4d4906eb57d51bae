package web

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"

	"github.com/botd-dev/botd/internal/settings"
)

// DefaultListen keeps the pages on this machine unless the config says
// otherwise.
const DefaultListen = "127.0.0.1:8080"

// Config is channels.web in botd's config file.
type Config struct {
	Enabled bool   `yaml:"enabled"`
	Listen  string `yaml:"listen"`
	// AllowRemote must be set to listen on anything but a loopback
	// address: the pages hand out an assistant that reads the groups'
	// media, so exposing them is a decision, never a default.
	AllowRemote bool `yaml:"allow_remote"`
	// MaxConns bounds the server's open connections; past it the oldest
	// connection without a session is closed first, then the oldest idle.
	MaxConns int `yaml:"max_conns"`
	// MaxStreamsPerSession bounds one session's open event streams (one
	// per open room page); another is refused with 429.
	MaxStreamsPerSession int `yaml:"max_streams_per_session"`
	// PostsPerMinute is one session's post rate, RoomPostsPerMinute a
	// room's (everyone in it together); past either, 429.
	PostsPerMinute     int `yaml:"posts_per_minute"`
	RoomPostsPerMinute int `yaml:"room_posts_per_minute"`
	// AdminToken, when set, is the admin token instead of the one botd
	// makes in data/web/admin-token: how instances sharing a database get
	// the same one (it also derives the key that signs session cookies),
	// and how a deployment keeps it with its other secrets
	// (${BOTD_WEB_ADMIN_TOKEN}).
	AdminToken string `yaml:"admin_token"`
}

// DefaultConfig is the section a config file is decoded over.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

// Validate reports the section's problems, keyed by their paths below
// channels.web.
func (c Config) Validate() error {
	const sec = "channels.web."
	var ps settings.Problems
	host, _, err := net.SplitHostPort(c.Listen)
	switch {
	case err != nil:
		ps.Add(sec+"listen", "must be host:port (e.g. %s), got %q", DefaultListen, c.Listen)
	case !c.AllowRemote && !IsLoopback(host):
		ps.Add(sec+"listen",
			"%q is reachable from other machines; use a loopback address (127.0.0.1, ::1, localhost) or set channels.web.allow_remote: true", c.Listen)
	}
	for _, l := range []struct {
		key string
		v   int
	}{{"max_conns", c.MaxConns}, {"max_streams_per_session", c.MaxStreamsPerSession},
		{"posts_per_minute", c.PostsPerMinute}, {"room_posts_per_minute", c.RoomPostsPerMinute}} {
		if l.v < 0 {
			ps.Add(sec+l.key, "must be positive (0 takes the default), got %d", l.v)
		}
	}
	if t := strings.TrimSpace(c.AdminToken); c.AdminToken != "" && len(t) < minTokenLen {
		ps.Add(sec+"admin_token", "must be at least %d characters (e.g. from `openssl rand -base64 32`), got %d", minTokenLen, len(t))
	}
	return ps.Err()
}

// IsLoopback reports whether a listen host only accepts connections from
// this machine. An empty host listens on every interface.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// roomRule is the shape of a room name: the part after "web:" in a chat
// id, and a path segment of the room's URL.
var roomRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidRoom checks a room name ("main" in web:main).
func ValidRoom(room string) error {
	if !roomRule.MatchString(room) {
		return fmt.Errorf("%q is not a valid web room name (letters, digits, _ and -, starting with a letter or digit, at most 64)", room)
	}
	return nil
}

// ChatID is the botd chat id of a room.
func ChatID(room string) string { return Name + ":" + room }

// RoomOf returns the room of a web chat id.
func RoomOf(chat string) (string, bool) {
	room, ok := strings.CutPrefix(chat, Name+":")
	return room, ok && ValidRoom(room) == nil
}
