// Package progress carries a long call's progress in its context: the
// transport that waits on the call (the IPC host, which writes progress
// files a waiting botd mcp reads) puts a Reporter in the context, and the
// service doing the work (a download, a queued parse) reports to it
// without knowing which transport, if any, listens.
package progress

import "context"

// Progress is what a handler says about a call that takes a while. Done
// and Total count bytes; Total is 0 when unknown.
type Progress struct {
	State string
	Done  int64
	Total int64
}

// Progress states. A handler may use others; the client then words them
// generically.
const (
	// Queued: waiting for a free slot (the host's, a download slot, a
	// parse slot).
	Queued = "queued"
	// Working: the handler runs. The IPC host sets it when it claims a
	// request.
	Working = "working"
	// Downloading: bytes are coming from the network.
	Downloading = "downloading"
	// Sending: bytes are going to the chat.
	Sending = "sending"
)

// Reporter hears a call's progress. It must be cheap enough to call for
// every chunk (the IPC host writes at most once a second unless the state
// changes) and safe for concurrent use.
type Reporter func(Progress)

type key struct{}

// With returns ctx carrying r; the calls made under it report to r.
func With(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// Report tells the Reporter of ctx, if any, how the call is going. Outside
// a transport that listens (an in-process call) it does nothing.
func Report(ctx context.Context, p Progress) {
	if r, ok := ctx.Value(key{}).(Reporter); ok && r != nil {
		r(p)
	}
}
