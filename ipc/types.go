// Package ipc is the file protocol between the MCP server (agent side) and
// the botd host. Each group has one folder, data/ipc/<group>/, and the group
// is that folder, never a field of the payload:
//
//	requests/<id>.json    a request, written by the client (temp file in the
//	                      group folder, renamed in)
//	processing/<id>.json  claimed by the host (renamed from requests/) for as
//	                      long as its handler runs
//	responses/<id>.json   the answer, written atomically by the host; the
//	                      client removes it once read
//	progress/<id>.json    the host's latest Progress on a request it has seen
//	                      (queued or running), refreshed while it lives
//	failed/<name>         quarantined files (at most their first
//	                      FailedKeepBytes) with <name>.reason beside them
//
// Every request gets exactly one response, success or a typed *Error. The
// host creates these folders itself and serves a group only while each of
// them is a real directory of botd's user, not a symlink and not the same
// directory as any other group's; a folder that changes while botd runs
// stops that group until restart. A request older than MaxRequestAge is
// answered expired, never carried out. A claimed request survives a crash
// in processing/: at the next start a fetch or list is carried out again
// (Types says which are repeatable), a send is answered send_unknown
// instead of being repeated.
// A caller whose deadline passes hears in_progress (with the last Progress)
// when the host has claimed its request, busy when the host saw it but had
// no free slot (the request is then withdrawn, not carried out), and
// ErrNoHost only when no host ever looked at it.
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
	// CodeSendUnknown: botd stopped (or its handler failed) while a send
	// was under way, so it may or may not have reached the chat. It is
	// never retried blindly.
	CodeSendUnknown = "send_unknown"
	// CodeInProgress is the client's verdict when its deadline passed
	// while the host was still working on the claimed request; the work
	// goes on (a fetch can be asked for again shortly).
	CodeInProgress = "in_progress"
	// CodeBusy is the client's verdict when the host saw the request but
	// had no free slot for it by the deadline; the client withdrew it, so
	// it was not carried out.
	CodeBusy = "busy"
	// CodeStandby: the botd answering is a standby (docs/scaling.md):
	// it serves reads, and refuses what only the active instance may do.
	// The message names the active one.
	CodeStandby = "standby"
)

// MaxRequestAge is how old a request may be when the host claims it.
// Older ones are answered CodeExpired and never carried out, so a request
// left behind by a long stop (or copied back from a backup) cannot act
// late; the client gives up long before (two minutes in botd mcp). The age
// is judged on both the request's Created and its file's modification
// time, whichever is older: Created survives a copy, the file time catches
// a request written without Created. A Created more than MaxClockSkew in
// the future is expired too. Neither is proof against forgery (any local
// process of botd's user can write a group's requests); the point is that
// stale requests are not replayed.
const MaxRequestAge = 10 * time.Minute

// MaxClockSkew is how far in the future a request's Created may be.
const MaxClockSkew = time.Minute

// Types are the request types a host accepts, each mapped to whether
// carrying it out twice is harmless (a fetch, a list, a task change keyed
// by its request id). One that is not (a send, a generation) and was
// interrupted by a crash is answered CodeSendUnknown rather than carried
// out again. The tool registry (package tools) builds it; ipc names no
// tool itself.
type Types map[string]bool

// Known reports whether typ is a request type of the protocol.
func (t Types) Known(typ string) bool {
	_, ok := t[typ]
	return ok
}

// Repeatable reports whether a request of type typ may be carried out
// again after a crash; an unknown type may not.
func (t Types) Repeatable(typ string) bool { return t[typ] }

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
	// Transcript is what was said in audio (a voice note, an audio file);
	// TranscriptNote says why there is none, or where it came from.
	Transcript     string `json:"transcript,omitempty"`
	TranscriptNote string `json:"transcript_note,omitempty"`
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

func (l Layout) Requests() string   { return filepath.Join(l.Root, dirRequests) }
func (l Layout) Processing() string { return filepath.Join(l.Root, dirProcessing) }
func (l Layout) Responses() string  { return filepath.Join(l.Root, dirResponses) }
func (l Layout) Progress() string   { return filepath.Join(l.Root, dirProgress) }
func (l Layout) Failed() string     { return filepath.Join(l.Root, dirFailed) }

// The folders of one group, in the order they are created and checked.
const (
	dirRequests   = "requests"
	dirProcessing = "processing"
	dirResponses  = "responses"
	dirProgress   = "progress"
	dirFailed     = "failed"
)

var subdirs = []string{dirRequests, dirProcessing, dirResponses, dirProgress, dirFailed}

var idRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidID reports whether id may name a request file.
func ValidID(id string) bool { return idRe.MatchString(id) }
