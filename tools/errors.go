package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// A tool call as every face makes it (the agent in process, botd mcp over
// the IPC files): the tool's name and its arguments as JSON. The asking
// group is never a field: it is who the caller is (the IPC folder, the
// agent's run).
type Request struct {
	// ID identifies the call where a transport gives it one (the IPC
	// request id); a handler keys what must not happen twice by it. Empty
	// for an in-process call.
	ID   string
	Type string
	Args json.RawMessage
}

// Handler answers one tool call of a group: a host service (media.Service,
// scheduler.Scheduler), Dispatch over them, or a transport's host (the
// IPC host hands each request to one). Work that takes a while tells the
// waiting caller how it goes with progress.Report(ctx, …).
type Handler interface {
	Handle(ctx context.Context, group string, req *Request) (any, *Error)
}

// Caller sends one tool call and decodes its result: the IPC client of a
// group folder (botd mcp), or InProcess (the agent in the daemon).
type Caller interface {
	Call(ctx context.Context, typ string, args, result any) error
}

// Error codes of a failed call: the tool contract the model (and an
// external client) reads, whichever transport carried the call.
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

// ErrNoHost: no host ever looked at the call before its deadline (the IPC
// client's verdict when `botd run` is not running).
var ErrNoHost = errors.New("no answer from the botd host (is `botd run` running?)")
