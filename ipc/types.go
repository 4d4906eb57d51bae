// Package ipc is the file protocol between the MCP server (agent side) and
// the botd host: one folder per group under data/ipc/, requests written
// atomically into requests/, answers into responses/, bad requests
// quarantined in failed/ with their reason. The group is the directory,
// never a field of the payload.
package ipc

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"time"
)

// Version is the protocol version written into every file.
const Version = 1

// Request types.
const (
	TypeFetchMedia  = "fetch_media"
	TypeListMedia   = "list_media"
	TypeSendMessage = "send_message"
	TypeSendMedia   = "send_media"
)

// Error codes of a failed response.
const (
	CodeNotFound       = "not_found"
	CodeExpired        = "expired"
	CodeForbidden      = "forbidden"
	CodeTooLarge       = "too_large"
	CodeDownloadFailed = "download_failed"
	CodeBadRequest     = "bad_request"
	CodeSendFailed     = "send_failed"
	CodeInternal       = "internal"
)

// MaxRequestBytes bounds a request file; larger files are quarantined
// unread.
const MaxRequestBytes = 64 << 10

// Request is one call from the agent side.
type Request struct {
	Version int             `json:"version"`
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Args    json.RawMessage `json:"args,omitempty"`
	Created time.Time       `json:"created"`
}

// Response answers exactly one request.
type Response struct {
	Version int             `json:"version"`
	ID      string          `json:"id"`
	OK      bool            `json:"ok"`
	Error   *Error          `json:"error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// Error is a typed failure with a message fit for the agent (and a human).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FetchMediaArgs asks for the bytes of one ref.
type FetchMediaArgs struct {
	MediaRef string `json:"mediaRef"`
}

// FetchMediaResult tells where the bytes were put. Path is relative to the
// group folder (groups/<folder>/), e.g. "media/tg_abc_photo.jpg".
type FetchMediaResult struct {
	Ref      string `json:"ref"`
	Kind     string `json:"kind"`
	Name     string `json:"name,omitempty"`
	MIME     string `json:"mime"`
	Declared string `json:"declared_mime,omitempty"` // what the sender claimed, when it differed
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Path     string `json:"path"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
	Duration string `json:"duration,omitempty"`
	Caption  string `json:"caption,omitempty"`
	Sender   string `json:"sender,omitempty"`
	Cached   bool   `json:"cached"` // served without a download
}

// ListMediaArgs narrows list_media.
type ListMediaArgs struct {
	Limit int    `json:"limit,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// MediaItem is one entry of list_media: metadata only, no secrets.
type MediaItem struct {
	Ref      string    `json:"ref"`
	Kind     string    `json:"kind"`
	Name     string    `json:"name,omitempty"`
	Size     int64     `json:"size,omitempty"`
	MIME     string    `json:"mime,omitempty"`
	Sender   string    `json:"sender,omitempty"`
	Time     time.Time `json:"time"`
	Caption  string    `json:"caption,omitempty"`
	Duration string    `json:"duration,omitempty"`
	Expires  time.Time `json:"expires"`
}

// ListMediaResult is the answer to list_media, newest first.
type ListMediaResult struct {
	Items []MediaItem `json:"items"`
}

// SendMessageArgs sends text. Chat is honoured only for the main group.
type SendMessageArgs struct {
	Text string `json:"text"`
	Chat string `json:"chat,omitempty"`
}

// SendMediaArgs sends a file inside the group folder.
type SendMediaArgs struct {
	Path    string `json:"path"`
	Caption string `json:"caption,omitempty"`
	Chat    string `json:"chat,omitempty"`
}

// SendResult is the channel's delivery report.
type SendResult struct {
	Chat       string   `json:"chat"`
	MessageIDs []string `json:"message_ids"`
}

// Layout is the IPC folder of one group.
type Layout struct {
	Root string // data/ipc/<folder>
}

// GroupLayout returns the layout of folder under ipcRoot (data/ipc).
func GroupLayout(ipcRoot, folder string) Layout {
	return Layout{Root: filepath.Join(ipcRoot, folder)}
}

func (l Layout) Requests() string  { return filepath.Join(l.Root, "requests") }
func (l Layout) Responses() string { return filepath.Join(l.Root, "responses") }
func (l Layout) Failed() string    { return filepath.Join(l.Root, "failed") }

var idRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidID reports whether id may name a request file.
func ValidID(id string) bool { return idRe.MatchString(id) }
