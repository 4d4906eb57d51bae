package box

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/botd-dev/botd/internal/textclip"
)

// Kind is why a child gave no result.
type Kind int

const (
	KindFailed    Kind = iota // the tool or job failed on the file
	KindMemory                // it needed more than Limits.Memory
	KindCPU                   // it used up Limits.CPU
	KindTimeout               // it ran past Limits.Timeout
	KindOutput                // it wrote more than Limits.Output
	KindMissing               // the tool is not installed
	KindBusy                  // the pool had no room before the caller's ctx ended
	KindCancelled             // the caller's ctx ended while it ran
)

// killReasons names the kinds of a child stopped at a limit or by its
// caller, for botd's metrics; the others (failed, missing, busy) were
// not stopped.
var killReasons = map[Kind]string{
	KindMemory: "memory", KindCPU: "cpu", KindTimeout: "timeout", KindOutput: "output", KindCancelled: "cancelled",
}

// Error is a child that gave no result. Its text is a sentence a chat
// member can read, naming the setting that decided when there is one.
type Error struct {
	Kind   Kind
	What   string // "this PDF"
	Tool   string // for KindMissing
	Limit  string // the limit that was hit, formatted
	Detail string // the tool's own complaint, for KindFailed
	MaxRSS int64  // the child's peak resident memory
	Err    error
}

// Sentinels for errors.Is: an *Error matches the sentinel of its Kind.
var (
	ErrMemory  = &Error{Kind: KindMemory}
	ErrCPU     = &Error{Kind: KindCPU}
	ErrTimeout = &Error{Kind: KindTimeout}
	ErrOutput  = &Error{Kind: KindOutput}
	ErrMissing = &Error{Kind: KindMissing}
	ErrBusy    = &Error{Kind: KindBusy}
	ErrFailed  = &Error{Kind: KindFailed}
)

// Is matches an *Error of the same Kind (and Tool, when the target
// names one).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && (t.Tool == "" || t.Tool == e.Tool)
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	what := e.What
	if what == "" {
		what = "this file"
	}
	switch e.Kind {
	case KindMemory:
		return fmt.Sprintf("%s needs more memory than botd allows for one file (%s; media.parse.memory_bytes)", what, e.Limit)
	case KindCPU:
		return fmt.Sprintf("reading %s took more than the %s of CPU time botd allows for one file (media.parse.cpu)", what, e.Limit)
	case KindTimeout:
		return fmt.Sprintf("reading %s took longer than the %s botd allows for one file (media.parse.timeout)", what, e.Limit)
	case KindOutput:
		return fmt.Sprintf("reading %s gave more than the %s botd keeps from one file", what, e.Limit)
	case KindMissing:
		if e.Detail == "" {
			return e.Tool + " is not on PATH (install it)"
		}
		return fmt.Sprintf("%s is not on PATH (%s)", e.Tool, e.Detail)
	case KindBusy:
		return "botd is busy reading other files; ask again in a minute"
	case KindCancelled:
		return fmt.Sprintf("reading %s was stopped: the question ended", what)
	}
	if e.Detail == "" {
		return fmt.Sprintf("%s could not be read", what)
	}
	return fmt.Sprintf("%s could not be read (%s)", what, e.Detail)
}

// Missing is the one sentence for a tool that is not installed; install
// says what to install and what for.
func Missing(tool, install string) *Error {
	return &Error{Kind: KindMissing, Tool: tool, Detail: install}
}

// memorySigns are what programs print when an allocation fails: Go's
// runtime, glibc/ffmpeg's strerror(ENOMEM), C++'s bad_alloc, poppler.
var memorySigns = []string{
	"out of memory", "cannot allocate memory", "std::bad_alloc", "bad_alloc",
	"failed to allocate", "memory allocation failed", "pthread_create failed", "out of memory",
	"insufficient memory", "memoryallocationfailed",
	"get_buffer() failed", // ffmpeg: no frame buffer could be allocated
}

// classify tells why the child ended, nil for a clean exit.
func classify(st *os.ProcessState, werr error, over bool, wctx, ctx context.Context, stderr string, lim Limits, what string) *Error {
	if werr == nil && !over {
		return nil
	}
	e := &Error{What: what, Err: werr}
	var ws syscall.WaitStatus
	var cpu time.Duration
	if st != nil {
		ws, _ = st.Sys().(syscall.WaitStatus)
		cpu = st.UserTime() + st.SystemTime()
	}
	low := strings.ToLower(stderr)
	switch {
	case over, ws.Signaled() && ws.Signal() == syscall.SIGXFSZ,
		// A shell or a tool's worker that was killed for the file size.
		ws.Exited() && ws.ExitStatus() == 128+int(syscall.SIGXFSZ), strings.Contains(low, "file size limit exceeded"):
		e.Kind, e.Limit = KindOutput, formatBytes(lim.Output)
	case ctx.Err() != nil:
		// The question ended first: not the file's fault.
		e.Kind, e.Err = KindCancelled, ctx.Err()
	case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || (ws.Signal() == syscall.SIGKILL && cpu >= lim.CPU)):
		e.Kind, e.Limit = KindCPU, lim.CPU.String()
	case wctx.Err() != nil:
		e.Kind, e.Limit = KindTimeout, lim.Timeout.String()
	case containsAny(low, memorySigns),
		// Go's runtime, its own mmap refused, faults in its own code:
		// not a panic of the job's.
		strings.HasPrefix(strings.TrimSpace(low), "sigsegv: segmentation violation"),
		ws.Signaled() && (ws.Signal() == syscall.SIGSEGV || ws.Signal() == syscall.SIGABRT || ws.Signal() == syscall.SIGBUS):
		// Under a data limit a failed allocation is the likely death even
		// when the program does not say so: it dereferences NULL or aborts.
		e.Kind, e.Limit = KindMemory, formatBytes(lim.Memory)
	default:
		e.Kind, e.Detail = KindFailed, failure(ws, stderr)
	}
	return e
}

func failure(ws syscall.WaitStatus, stderr string) string {
	msg := textclip.OneLine(stderr, 300)
	if ws.Exited() && ws.ExitStatus() == jobFailedExit {
		return msg // a Go job's own error, nothing else on stderr
	}
	status := fmt.Sprintf("exit status %d", ws.ExitStatus())
	if ws.Signaled() {
		status = "killed by " + ws.Signal().String()
	}
	if msg == "" {
		return status
	}
	return status + ": " + msg
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// formatBytes writes a limit the way config keys are thought of: in MB.
func formatBytes(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", max(1, n>>10))
}

// IsLimit reports an error that is the file's fault (a limit it hit)
// rather than botd's or the tool's: the answer is final, retrying will
// not help.
func IsLimit(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case KindMemory, KindCPU, KindTimeout, KindOutput:
		return true
	}
	return false
}
