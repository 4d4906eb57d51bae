package box

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Func is a Go job: it reads the input (fd 3 of the child, nil when the
// job has none) and its argument (the Job's Stdin), and returns what the
// parent gets as Result.Stdout. It runs in the child only.
type Func func(ctx context.Context, in *os.File, arg []byte) ([]byte, error)

var jobs = map[string]Func{}

// Register makes a Go job runnable by name; call it from an init, so the
// child (the same binary) knows it too.
func Register(name string, f Func) {
	if _, dup := jobs[name]; dup {
		panic("box: job " + name + " registered twice")
	}
	jobs[name] = f
}

// jobFailedExit is the exit status of a Go job that returned an error
// (written to stderr); Go's own fatal errors exit 2.
const jobFailedExit = 3

// Main turns the process into a child when it was started as one, and
// never returns then; otherwise it returns at once. Call it first thing
// in main and in the TestMain of every package whose tests run Go jobs.
func Main() {
	if len(os.Args) < 3 || os.Args[1] != childArg {
		return
	}
	var sp spec
	if err := json.Unmarshal([]byte(os.Args[2]), &sp); err != nil {
		fmt.Fprintf(os.Stderr, "box child: bad spec: %v\n", err)
		os.Exit(jobFailedExit)
	}
	if err := child(sp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(jobFailedExit)
	}
	os.Exit(0)
}

func child(sp spec) error {
	data := sp.Memory
	if sp.Tool == "" {
		// The Go runtime (and cgo's thread stacks, and the race detector's
		// shadow) are mapped before this runs: the job gets Memory on top.
		data += vmData()
	}
	// Exec replaces the address space, so a tool starts counting from
	// nothing; the limits carry over.
	limits := []struct {
		res      int
		cur, max uint64
	}{
		{syscall.RLIMIT_DATA, uint64(data), uint64(data)},
		{syscall.RLIMIT_CPU, uint64(sp.CPU), uint64(sp.CPU + 1)},
		{syscall.RLIMIT_FSIZE, uint64(sp.Output), uint64(sp.Output)},
		{syscall.RLIMIT_CORE, 0, 0},
	}
	if sp.Tool != "" {
		return execTool(sp, limits)
	}
	for _, l := range limits {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.cur, Max: l.max}); err != nil {
			return fmt.Errorf("box child: setrlimit %d: %w", l.res, err)
		}
	}
	f := jobs[sp.Func]
	if f == nil {
		return fmt.Errorf("box child: no Go job %q", sp.Func)
	}
	// The collector works before the wall, so garbage does not count
	// against the limit as live memory would.
	debug.SetMemoryLimit(sp.Memory * 3 / 4)
	arg, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("box child: read argument: %w", err)
	}
	var in *os.File
	if err := syscall.Fstat(3, &syscall.Stat_t{}); err == nil {
		in = os.NewFile(3, "input")
	}
	out, err := f(context.Background(), in, arg)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	if _, err := w.Write(out); err != nil {
		return err
	}
	return w.Flush()
}

// execTool replaces the child with the tool under the limits. Between the
// data limit and exec this process runs under the tool's budget while its
// own runtime (150 MB of botd, over 300 MB under the race detector) is
// already past it: any mapping then fails and the runtime dies. So all
// that exec needs is built first, the collector is off, and the limits
// and exec are raw system calls on a locked thread, allocating nothing.
func execTool(sp spec, limits []struct {
	res      int
	cur, max uint64
}) error {
	argv0, err := syscall.BytePtrFromString(sp.Tool)
	if err != nil {
		return err
	}
	argv, err := syscall.SlicePtrFromStrings(sp.Args)
	if err != nil {
		return err
	}
	envv, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		return err
	}
	rl := make([]syscall.Rlimit, len(limits))
	for i, l := range limits {
		rl[i] = syscall.Rlimit{Cur: l.cur, Max: l.max}
	}
	debug.SetGCPercent(-1)
	runtime.LockOSThread()
	for i, l := range limits {
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRLIMIT, uintptr(l.res), uintptr(unsafe.Pointer(&rl[i])), 0); e != 0 {
			return fmt.Errorf("box child: setrlimit %d: %w", l.res, e)
		}
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("box child: exec %s: %w", sp.Tool, e)
}

// vmData is the process's data segment as the kernel counts it against
// RLIMIT_DATA.
func vmData() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmData:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
