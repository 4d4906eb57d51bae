// Package ipc is the file transport of tool calls between botd mcp (the
// MCP faces for external clients) and the botd host: files, framing and
// progress files. What it carries is package tools' (the call as a
// tools.Request, a failure as a *tools.Error, the progress a service
// reports through internal/progress); it defines no tool type itself.
// Each group has one folder, data/ipc/<group>/, and the group is that
// folder, never a field of the payload:
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
// Every request gets exactly one response, success or a typed
// *tools.Error. The host creates these folders itself and serves a group only while each of
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
// tools.ErrNoHost only when no host ever looked at it.
package ipc

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"time"

	"github.com/botd-dev/botd/tools"
)

// Version is the protocol version written into every file.
const Version = 1

// MaxRequestAge is how old a request may be when the host claims it.
// Older ones are answered tools.CodeExpired and never carried out, so a request
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
// interrupted by a crash is answered tools.CodeSendUnknown rather than carried
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
	Error   *tools.Error    `json:"error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
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
