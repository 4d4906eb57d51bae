// Package box runs the parsers of untrusted bytes (a chat member's PDF,
// image or video) in a child process under hard limits, so that whatever
// arrives costs botd at most what the limits allow and a parser that dies
// answers a plain sentence instead of taking botd with it.
//
// The child is botd itself, re-executed in a hidden mode (see Main) that
// first limits itself with setrlimit (data segment, CPU seconds, file size)
// and then either execs an external tool (ffmpeg, pdftoppm, ...) or runs a
// Go job registered with Register. Limits are set before the tool or the
// job touches a byte of the input, so there is no window in which the child
// runs unlimited. The input is handed over as an open descriptor (fd 3):
// nothing is opened again by name, so the path checks the caller made hold.
//
// Every child first takes its memory limit from one weighted pool
// (SetPool), shared by every botd process of the host that names the same
// directory (SetHostPool: the daemon and each botd mcp): however many
// questions, groups, clients or processes ask at once, the children
// together never use more than the pool; the rest queue.
package box

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/botd-dev/botd/internal/progress"
	"github.com/botd-dev/botd/internal/textclip"
)

// Defaults of the media.parse settings.
const (
	DefaultMemory      = 256 << 20
	DefaultCPU         = 60 * time.Second
	DefaultTimeout     = 2 * time.Minute
	DefaultTotalMemory = 512 << 20
	// DefaultOutput caps what one child may write, on stdout or as a file.
	DefaultOutput = 16 << 20
)

// Limits bound one child.
type Limits struct {
	// Memory is the child's data segment (RLIMIT_DATA: heap, anonymous
	// mappings, thread stacks), and its weight in the pool. A Go job gets
	// it on top of what the runtime holds at start.
	Memory int64
	// CPU is the CPU time it may use (RLIMIT_CPU).
	CPU time.Duration
	// Timeout is the wall-clock time it may take, from its start.
	Timeout time.Duration
	// Output caps its stdout and each file it writes (RLIMIT_FSIZE).
	Output int64
}

// WithDefaults fills the unset limits.
func (l Limits) WithDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.CPU <= 0 {
		l.CPU = DefaultCPU
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	return l
}

// Job is one child: an external Tool with Args, or a registered Go Func.
type Job struct {
	// Tool is a program looked up on PATH; Args follow its name. The
	// input is /dev/fd/3, and the working directory a private temporary
	// one, removed after Collect: relative output names land there.
	Tool string
	Args []string
	// Install says what to install when Tool is missing, e.g. "install
	// poppler-utils to see scanned PDF pages".
	Install string
	// Func names a Go job registered with Register; Stdin is its argument.
	Func  string
	Stdin []byte
	// Input, when set, is fd 3 of the child.
	Input *os.File
	// What names the input in sentences: "this PDF", "this video".
	What   string
	Limits Limits
	// Collect, when set, reads the files the child left in its directory
	// before the directory is removed; only after a clean exit.
	Collect func(dir string) error
	Log     *slog.Logger
}

// Result is what a child that exited cleanly produced.
type Result struct {
	Stdout []byte
	// Stderr is the start and end of what it wrote there.
	Stderr string
	// MaxRSS is the child's peak resident memory in bytes (wait4's
	// ru_maxrss). It is an upper bound: Go starts children sharing the
	// parent's memory until exec, and Linux folds the parent's peak at
	// that moment into the child's.
	MaxRSS int64
	// Waited is how long the job queued for room in the pool.
	Waited time.Duration
}

// Executable is the program re-executed as the child; os.Executable by
// default (the test binary in tests, whose TestMain calls Main).
var Executable = func() (string, error) { return os.Executable() }

// childArg is argv[1] of a child: no botd command starts with "__".
const childArg = "__botd_box_child__"

// spec is argv[2] of a child: what to limit and run.
type spec struct {
	Tool   string   `json:"tool,omitempty"` // absolute path
	Args   []string `json:"args,omitempty"`
	Func   string   `json:"func,omitempty"`
	Memory int64    `json:"memory"`
	CPU    int64    `json:"cpu"` // seconds
	Output int64    `json:"output"`
	// Dir is the job's own directory, the one place it may write.
	Dir string `json:"dir"`
	// Writable are more directories it may write (WritableInTests).
	Writable []string `json:"writable,omitempty"`
	// NProc is RLIMIT_NPROC, set when the child has a user namespace of
	// its own where it counts the child's processes alone.
	NProc uint64 `json:"nproc,omitempty"`
}

// The pool is process-wide: every caller of Run in the process shares it.
var (
	poolMu    sync.Mutex
	pool      = semaphore.NewWeighted(DefaultTotalMemory)
	poolTotal = int64(DefaultTotalMemory)
)

// SetPool sets the memory all children of the process may hold at once
// (media.parse.total_memory_bytes). Called at start, before any job runs.
func SetPool(total int64) {
	if total <= 0 {
		total = DefaultTotalMemory
	}
	poolMu.Lock()
	pool, poolTotal = semaphore.NewWeighted(total), total
	poolMu.Unlock()
}

// onKilled hears every child stopped at a limit or by its caller.
var onKilled atomic.Pointer[func(reason string)]

// OnKilled has fn hear the reason of every child of the process that was
// stopped ("memory", "cpu", "timeout", "output", "cancelled"), for botd's
// metrics. Called at start, like SetPool; fn must be quick.
func OnKilled(fn func(reason string)) { onKilled.Store(&fn) }

func currentPool() (*semaphore.Weighted, int64) {
	poolMu.Lock()
	defer poolMu.Unlock()
	return pool, poolTotal
}

// Run runs the job in a child under its limits, once the pool has room
// for it, and answers an *Error whose text is a sentence for the model
// when the child is missing, killed, or fails.
func Run(ctx context.Context, j Job) (*Result, error) {
	lim := j.Limits.WithDefaults()
	log := j.Log
	if log == nil {
		log = slog.Default()
	}
	what := j.What
	if what == "" {
		what = "this file"
	}
	sp := spec{Func: j.Func, Memory: lim.Memory, CPU: int64((lim.CPU + time.Second - 1) / time.Second), Output: lim.Output}
	name := j.Func
	switch {
	case j.Tool != "":
		bin, err := exec.LookPath(j.Tool)
		if err != nil {
			return nil, Missing(j.Tool, j.Install)
		}
		sp.Tool, sp.Args, name = bin, append([]string{j.Tool}, j.Args...), j.Tool
	case j.Func != "":
		if jobs[j.Func] == nil {
			return nil, fmt.Errorf("box: no Go job %q is registered", j.Func)
		}
	default:
		return nil, errors.New("box: a job needs a Tool or a Func")
	}
	exe, err := Executable()
	if err != nil {
		return nil, fmt.Errorf("box: cannot find botd's own executable: %w", err)
	}

	res := &Result{}
	release, waited, err := admit(ctx, lim.Memory, log, func() {
		log.Info("box: waiting for memory to read a file", "job", name, "memory", lim.Memory)
		progress.Report(ctx, progress.Progress{State: progress.Queued})
	})
	if err != nil {
		return nil, &Error{Kind: KindBusy, What: what, Err: err}
	}
	defer release()
	if waited > 0 {
		res.Waited = waited
		log.Info("box: memory to read a file granted", "job", name, "waited", res.Waited.Round(time.Millisecond))
		progress.Report(ctx, progress.Progress{State: progress.Working})
	}

	dir, err := os.MkdirTemp("", "botd-box-")
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	defer os.RemoveAll(dir)
	// The job's directory is the one place it may write: by its real
	// path, since Landlock's rules hold on what a path resolves to.
	if sp.Dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	sp.Writable = testWritable()

	wctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	out := &capWriter{max: lim.Output}
	errs := &headTail{}
	newCmd := func(ns bool) (*exec.Cmd, error) {
		sp := sp
		attr := &syscall.SysProcAttr{Setpgid: true}
		if ns && nsAttr(attr) {
			sp.NProc = nprocLimit()
		}
		arg, err := json.Marshal(sp)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(exe, childArg, string(arg))
		cmd.Dir = dir
		// Nothing of the daemon's environment (tokens, API keys) reaches a
		// parser: only where programs are, and a private home.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "LC_ALL=C"}
		cmd.Stdin = bytes.NewReader(j.Stdin)
		if j.Input != nil {
			cmd.ExtraFiles = []*os.File{j.Input}
		}
		cmd.SysProcAttr = attr
		cmd.Stdout, cmd.Stderr = out, errs
		// A grandchild holding the pipes open must not keep Wait waiting.
		cmd.WaitDelay = time.Second
		return cmd, nil
	}
	cmd, err := startChild(newCmd, log)
	if err != nil {
		return nil, fmt.Errorf("box: start %s: %w", name, err)
	}
	pgid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	out.setKill(kill)
	done := make(chan struct{})
	go func() {
		select {
		case <-wctx.Done():
			kill()
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	kill() // whatever the child left behind in its group

	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = ru.Maxrss << 10
		}
	}
	stdout, over := out.result()
	res.Stdout, res.Stderr = stdout, errs.String()
	e := classify(cmd.ProcessState, werr, over, wctx, ctx, res.Stderr, lim, what)
	lvl := slog.LevelDebug
	if e != nil {
		lvl = slog.LevelInfo
	}
	log.Log(ctx, lvl, "box: child done", "job", name, "max_rss", res.MaxRSS, "waited", res.Waited.Round(time.Millisecond),
		"err", e, "stderr", textclip.OneLine(res.Stderr, 300))
	if e != nil {
		if reason, ok := killReasons[e.Kind]; ok {
			if fn := onKilled.Load(); fn != nil {
				(*fn)(reason)
			}
		}
		e.MaxRSS = res.MaxRSS
		return res, e
	}
	if j.Collect != nil {
		if err := j.Collect(dir); err != nil {
			return res, err
		}
	}
	return res, nil
}

// capWriter keeps up to max bytes and kills the child that writes more.
type capWriter struct {
	mu   sync.Mutex
	max  int64
	buf  bytes.Buffer
	over bool
	kill func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if int64(w.buf.Len()+len(p)) > w.max {
		w.over = true
		if w.kill != nil {
			w.kill()
		}
		return 0, errOutput
	}
	return w.buf.Write(p)
}

// setKill arms the kill once the child's group is known.
func (w *capWriter) setKill(kill func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kill = kill
	if w.over {
		kill()
	}
}

func (w *capWriter) result() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Bytes(), w.over
}

var errOutput = errors.New("output over the cap")

// headTail keeps the first and last bytes written: enough to tell why a
// tool died and to log it, never the megabytes a broken file can provoke.
type headTail struct {
	mu         sync.Mutex
	head, tail []byte
	dropped    bool
}

const keepStderr = 1 << 10

func (w *headTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if room := keepStderr - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head, p = append(w.head, p[:k]...), p[k:]
	}
	if len(p) > 0 {
		w.tail = append(w.tail, p...)
		if over := len(w.tail) - keepStderr; over > 0 {
			w.tail, w.dropped = append(w.tail[:0], w.tail[over:]...), true
		}
	}
	return n, nil
}

func (w *headTail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dropped {
		return string(w.head) + "\n…\n" + string(w.tail)
	}
	return string(w.head) + string(w.tail)
}
