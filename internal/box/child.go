package box

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
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

// jobArg is argv[1] of a Go job's second start: the child confined itself
// and execed botd again, so that every thread of the job is confined (see
// confine_linux.go).
const jobArg = "__botd_box_job__"

// selfExe is the running program, whatever its name now.
const selfExe = "/proc/self/exe"

// Main turns the process into a child when it was started as one, and
// never returns then; otherwise it makes the process not dumpable (no
// process of its user may read its environment or memory: see
// protectParent) and returns. Call it first thing in main and in the
// TestMain of every package whose tests run Go jobs.
func Main() {
	if len(os.Args) < 3 || os.Args[1] != childArg && os.Args[1] != jobArg {
		protectParent()
		return
	}
	var sp spec
	if err := json.Unmarshal([]byte(os.Args[2]), &sp); err != nil {
		fmt.Fprintf(os.Stderr, "box child: bad spec: %v\n", err)
		os.Exit(jobFailedExit)
	}
	var err error
	if os.Args[1] == jobArg {
		err = runJob(sp)
	} else {
		err = child(sp)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(jobFailedExit)
	}
	os.Exit(0)
}

// child confines and limits itself, then execs the tool, or botd again
// for a Go job. It returns only on failure.
func child(sp spec) error {
	// Exec replaces the address space, so a tool starts counting from
	// nothing; the limits carry over.
	limits := []rlimit{
		{syscall.RLIMIT_CPU, uint64(sp.CPU), uint64(sp.CPU + 1)},
		{syscall.RLIMIT_FSIZE, uint64(sp.Output), uint64(sp.Output)},
		{syscall.RLIMIT_CORE, 0, 0},
	}
	if sp.NProc > 0 {
		limits = append(limits, rlimit{rlimitNPROC, sp.NProc, sp.NProc})
	}
	var err error
	if sp.Tool != "" {
		limits = append(limits, rlimit{syscall.RLIMIT_DATA, uint64(sp.Memory), uint64(sp.Memory)})
		err = confineAndExec(sp, sp.Tool, sp.Args, limits)
	} else if jobs[sp.Func] == nil {
		return fmt.Errorf("box child: no Go job %q", sp.Func)
	} else {
		// The data limit waits for the new runtime, which it must not count.
		err = confineAndExec(sp, selfExe, []string{os.Args[0], jobArg, os.Args[2]}, limits)
	}
	return fmt.Errorf("box child: %w", err)
}

// runJob is a Go job's second start, confined and limited but for its
// memory.
func runJob(sp spec) error {
	// The Go runtime (and cgo's thread stacks, and the race detector's
	// shadow) are mapped before this runs: the job gets Memory on top.
	data := uint64(sp.Memory + vmData())
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: data, Max: data}); err != nil {
		return fmt.Errorf("box child: setrlimit data: %w", err)
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
