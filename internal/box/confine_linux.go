//go:build linux

package box

// The child is confined with what Linux gives an unprivileged process,
// each where the kernel has it, so that a parser taken over by a hostile
// file reaches nothing of botd's:
//
//   - the parent is not dumpable (protectParent): its /proc/<pid>/environ
//     and mem (the API keys) are closed to processes of the same user;
//   - a user and network namespace of its own (Run's SysProcAttr): no
//     interface but a loopback that is down, so nothing to connect to;
//     RLIMIT_NPROC counts the child's own processes there, not all of
//     botd's user's (the kernel never applies it to uid 0, though); and
//     a root botd's child has no capability outside its namespace;
//   - no_new_privs, then Landlock: read-only the system's programs and
//     libraries (/usr, /lib, /etc/ld.so.cache, fonts), the tool's own
//     directory and the input fd; read-write the job's own directory; nothing else,
//     not the data directory, not config.yaml. Where the ABI has them, TCP
//     connect and bind are denied, and signals and abstract unix sockets
//     stop at the child (ABI 6), and ptrace of anything outside it is
//     denied by Landlock in every ABI;
//   - a seccomp filter: socket() (socketpair stays), io_uring (which would
//     open sockets past the filter), ptrace, keyrings, bpf, perf, and new
//     namespaces are refused, and a foreign ABI (i386 on amd64) kills.
//
// All of it is applied by raw system calls on one locked thread, then
// exec: Landlock and seccomp bind the thread that asks, and the new
// program starts from that thread alone, so every thread it makes inherits
// them. A Go job therefore execs botd a second time (jobArg) rather than
// running in the process that confined one thread. (Restricting every
// thread of a running Go process takes syscall.AllThreadsSyscall, which
// Go refuses once cgo is linked, as it is for net and os/user, or the
// psx library, which is cgo; Landlock's own TSYNC is newer than ABI 7.)

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's access rights, by the ABI that brought them.
const (
	llExecute  = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llReadFile = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llReadDir  = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llWrite    = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llV1       = 1<<13 - 1 // execute … make_sym
	llRefer    = unix.LANDLOCK_ACCESS_FS_REFER
	llTruncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llIoctlDev = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// What a rule on a file (not a directory) may grant.
	llFileRights = llExecute | llWrite | llReadFile | llTruncate | llIoctlDev
	llRead       = llReadFile | llReadDir
	llReadExec   = llRead | llExecute
)

// landlockFS is what ABI abi can restrict on files.
func landlockFS(abi int) uint64 {
	fs := uint64(llV1)
	if abi >= 2 {
		fs |= llRefer
	}
	if abi >= 3 {
		fs |= llTruncate
	}
	if abi >= 5 {
		fs |= llIoctlDev
	}
	return fs
}

// landlockABI is the kernel's Landlock ABI, 0 without Landlock.
func landlockABI() int {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(r)
}

// systemRead is what a tool may read and execute: programs, their
// libraries and data (fonts, codecs' tables), the loader's cache, the
// files of /etc that libc and fontconfig read, and the CPU topology that
// thread pools size themselves by. Nothing here is botd's.
var systemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/fonts", "/etc/localtime",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ImageMagick-6", "/etc/ImageMagick-7",
	"/sys/devices/system/cpu", "/proc/cpuinfo", "/proc/meminfo",
	// Where Nix, Guix and Homebrew keep programs and their libraries.
	"/nix/store", "/gnu/store", "/home/linuxbrew/.linuxbrew",
}

// devices a tool may open: /dev/null to write, the others to read.
var devRead = []string{"/dev/zero", "/dev/random", "/dev/urandom"}

type grant struct {
	path   string
	access uint64
}

// grants is every path the child may reach: the system, the tool's own
// directory, its own process, the input and its directory.
func grants(sp spec) []grant {
	g := make([]grant, 0, len(systemRead)+10)
	for _, p := range systemRead {
		g = append(g, grant{p, llReadExec})
	}
	if sp.Tool != "" {
		if real, err := filepath.EvalSymlinks(sp.Tool); err == nil {
			g = append(g, grant{filepath.Dir(real), llReadExec})
		}
	} else {
		// A Go job execs botd again, whatever its name now.
		g = append(g, grant{"/proc/self/exe", llReadFile | llExecute})
	}
	g = append(g, grant{"/proc/self", llRead}, grant{"/dev/null", llReadFile | llWrite | llTruncate})
	for _, p := range devRead {
		g = append(g, grant{p, llReadFile})
	}
	// The input is read again through /dev/fd/3 by tools; the rule is on
	// what fd 3 is, found through the magic link, whatever its name.
	var st unix.Stat_t
	if unix.Fstat(3, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		g = append(g, grant{"/proc/self/fd/3", llReadFile})
	}
	for _, d := range append([]string{sp.Dir}, sp.Writable...) {
		if d != "" {
			g = append(g, grant{d, ^uint64(0)})
		}
	}
	return g
}

// landlockRuleset builds the ruleset of the child, -1 without Landlock.
func landlockRuleset(abi int, sp spec) (int, error) {
	if abi <= 0 {
		return -1, nil
	}
	handled := landlockFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := unsafe.Sizeof(attr.Handled_access_fs)
	if abi >= 4 {
		// Handled and granted to nothing: no TCP connect or bind at all.
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.Handled_access_net)
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.Scoped)
	}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return -1, fmt.Errorf("landlock ruleset: %w", e)
	}
	rs := int(r)
	for _, g := range grants(sp) {
		if err := addRule(rs, g, handled); err != nil {
			unix.Close(rs)
			return -1, err
		}
	}
	return rs, nil
}

func addRule(rs int, g grant, handled uint64) error {
	fd, err := unix.Open(g.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.EACCES {
			return nil // not on this system: nothing to grant
		}
		return fmt.Errorf("landlock: open %s: %w", g.path, err)
	}
	defer unix.Close(fd)
	access := g.access & handled
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: stat %s: %w", g.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFileRights
	}
	if access == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("landlock: rule for %s: %w", g.path, e)
	}
	return nil
}

const rlimitNPROC = unix.RLIMIT_NPROC

type rlimit struct {
	res      int
	cur, max uint64
}

// confineAndExec confines the process and replaces it with path. Between
// the data limit and exec the process runs under the tool's budget while
// its own runtime (150 MB of botd, over 300 MB under the race detector)
// is already past it: any mapping then fails and the runtime dies. So all
// that exec needs is built first, the collector is off, and the rest are
// raw system calls on a locked thread, allocating nothing.
func confineAndExec(sp spec, path string, args []string, limits []rlimit) error {
	abi := landlockABI()
	rs, err := landlockRuleset(abi, sp)
	if err != nil {
		return err
	}
	var filter []unix.SockFilter
	if _, sc := kernelOffers(); sc {
		filter = seccompFilter()
	}
	var prog unix.SockFprog
	if len(filter) > 0 {
		prog = unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	}
	argv0, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	argv, err := syscall.SlicePtrFromStrings(args)
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
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	if rs >= 0 {
		if _, _, e := syscall.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); e != 0 {
			return fmt.Errorf("landlock: %w", e)
		}
		syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(rs), 0, 0)
	}
	if prog.Len > 0 {
		if _, _, e := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
			return fmt.Errorf("seccomp: %w", e)
		}
	}
	for i, l := range limits {
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRLIMIT, uintptr(l.res), uintptr(unsafe.Pointer(&rl[i])), 0); e != 0 {
			return fmt.Errorf("setrlimit %d: %w", l.res, e)
		}
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	runtime.KeepAlive(filter)
	return fmt.Errorf("exec %s: %w", path, e)
}

// protectParent makes botd not dumpable: /proc/<pid>/environ, mem, maps
// and fd become root's, and no process of botd's user may ptrace it.
// Exec resets the flag, so the children (and the tools) stay ordinary.
func protectParent() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// nsAttr is what puts a child in a user and network namespace of its own.
// No uid or gid map is written: botd is not dumpable, so its children's
// /proc/<pid>/uid_map are root's until they exec, and botd's user could
// not write them; unmapped, the child keeps its user for every file it
// touches, shows as the overflow user inside, and loses on exec the
// capabilities a new namespace gives (it is not root there).
func nsAttr(a *syscall.SysProcAttr) bool {
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	return true
}

// nprocLimit is RLIMIT_NPROC of a child in its own user namespace, where
// it counts the child's processes and threads alone: room for a tool's
// thread pool (ffmpeg makes about two per CPU per stream), not for a fork
// bomb. The kernel never applies it to uid 0, namespace or not: 0 then.
func nprocLimit() uint64 {
	if os.Geteuid() == 0 {
		return 0
	}
	return uint64(64 + 4*runtime.NumCPU())
}

// kernelOffers is the Landlock ABI, and whether the kernel has seccomp
// (PR_GET_SECCOMP fails without it) and the filter knows the architecture.
var kernelOffers = sync.OnceValues(func() (abi int, seccomp bool) {
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return landlockABI(), err == nil && len(seccompFilter()) > 0
})
