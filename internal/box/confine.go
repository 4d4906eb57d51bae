package box

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Confinement is what confines the children on this machine (see
// confine_linux.go): the kernel's offer, and whether children got a user
// and network namespace of their own, which is known after the first Run.
type Confinement struct {
	// Landlock is the kernel's Landlock ABI, 0 without Landlock: files
	// from 1, TCP from 4, signals and abstract unix sockets from 6.
	Landlock int
	// Seccomp says the children run under botd's system call filter.
	Seccomp bool
	// Namespace says they have a user and network namespace of their own;
	// NoNamespace says why not.
	Namespace   bool
	NoNamespace string
	// NProc is their RLIMIT_NPROC (0: not set, without a namespace).
	NProc uint64
}

var (
	nsMu     sync.Mutex
	nsKnown  bool // a child was started with the namespaces, or refused them
	nsOK     bool
	nsWhy    string
	reported sync.Once
)

// Confined says what confines the children; Namespace is false until a
// child was started.
func Confined() Confinement {
	abi, sc := kernelOffers()
	nsMu.Lock()
	defer nsMu.Unlock()
	c := Confinement{Landlock: abi, Seccomp: sc, Namespace: nsKnown && nsOK, NoNamespace: nsWhy}
	if c.Namespace {
		c.NProc = nprocLimit()
	}
	return c
}

// startChild starts a child in namespaces of its own when the kernel
// allows them, and once it refused them (unprivileged user namespaces
// off, or a kernel without them) without, saying so once in the log.
func startChild(newCmd func(ns bool) (*exec.Cmd, error), log *slog.Logger) (*exec.Cmd, error) {
	nsMu.Lock()
	try := !nsKnown || nsOK
	nsMu.Unlock()
	cmd, err := newCmd(try)
	if err != nil {
		return nil, err
	}
	if err = cmd.Start(); err != nil && try {
		first := err
		if cmd, err = newCmd(false); err != nil {
			return nil, err
		}
		if err = cmd.Start(); err == nil {
			// Only the namespaces made the difference.
			nsMu.Lock()
			nsKnown, nsOK, nsWhy = true, false, errnoText(first)
			nsMu.Unlock()
		}
	} else if err == nil && try {
		nsMu.Lock()
		if !nsKnown {
			nsKnown, nsOK = true, true
		}
		nsMu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	reported.Do(func() { logConfinement(log, Confined()) })
	return cmd, nil
}

// errnoText is the system's word for why a start failed, without the
// path of the executable that exec's errors carry.
func errnoText(err error) string {
	var no syscall.Errno
	if errors.As(err, &no) {
		return no.Error()
	}
	return err.Error()
}

// logConfinement says once what protects botd from its children, and
// loudly what the kernel lacks.
func logConfinement(log *slog.Logger, c Confinement) {
	var on, off []string
	switch {
	case c.Landlock >= 6:
		on = append(on, fmt.Sprintf("landlock ABI %d (files, TCP, signals, abstract sockets)", c.Landlock))
	case c.Landlock >= 4:
		on = append(on, fmt.Sprintf("landlock ABI %d (files, TCP)", c.Landlock))
		off = append(off, "landlock before ABI 6: children can signal botd")
	case c.Landlock > 0:
		on = append(on, fmt.Sprintf("landlock ABI %d (files only)", c.Landlock))
		off = append(off, "landlock before ABI 6: children can signal botd")
	default:
		off = append(off, "landlock unavailable (kernel without it, or not in lsm=): children can read and write every file botd's user can")
	}
	if c.Seccomp {
		on = append(on, "seccomp (no sockets, no ptrace, no namespaces)")
	} else {
		off = append(off, "seccomp unavailable (kernel without it, or an architecture the filter does not know): children can open sockets")
	}
	switch {
	case c.Namespace && c.NProc > 0:
		on = append(on, fmt.Sprintf("own user and network namespace (no interfaces), RLIMIT_NPROC %d", c.NProc))
	case c.Namespace:
		on = append(on, "own user and network namespace (no interfaces)")
		off = append(off, "botd runs as root, whom RLIMIT_NPROC never binds: children can fork without limit (run botd as its own user)")
	default:
		why := c.NoNamespace
		if why == "" {
			why = "not on this system"
		}
		off = append(off, "network namespace unavailable ("+why+"): RLIMIT_NPROC not set, children can fork until botd's user's limit")
	}
	if len(off) == 0 {
		log.Info("box: children confined: no_new_privs, " + strings.Join(on, ", "))
		return
	}
	log.Warn("box: children partly confined: " + strings.Join(off, "; ") + "; in force: no_new_privs, " + strings.Join(on, ", "))
}

var (
	writableMu sync.Mutex
	writable   []string
)

// WritableInTests lets every child write in dir until the test ends: for
// stand-in tools that log their arguments beside themselves. botd itself
// never calls it; a child writes only in its own directory.
func WritableInTests(t interface{ Cleanup(func()) }, dir string) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	writableMu.Lock()
	writable = append(writable, dir)
	writableMu.Unlock()
	t.Cleanup(func() {
		writableMu.Lock()
		defer writableMu.Unlock()
		for i, d := range writable {
			if d == dir {
				writable = append(writable[:i:i], writable[i+1:]...)
				break
			}
		}
	})
}

func testWritable() []string {
	writableMu.Lock()
	defer writableMu.Unlock()
	return append([]string(nil), writable...)
}
