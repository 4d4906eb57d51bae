//go:build linux

package box

import "golang.org/x/sys/unix"

// seccomp_data's offsets: the call's number, the ABI, the first argument's
// low 32 bits (amd64 and arm64 are little-endian).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// nsFlags are clone's flags that make namespaces (CLONE_NEWTIME is
// unshare's only: its bit is the exit signal's in clone).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompFilter is the child's system call filter, nil on an architecture
// it does not know. It allows everything a parser does and refuses what
// only an escape needs: sockets (no TCP, UDP, raw, netlink or unix, in
// case the network namespace is missing), io_uring (it opens and
// connects sockets without these calls), looking into other processes
// (ptrace, process_vm_*), the user's keyrings, bpf, perf, userfaultfd, and
// new namespaces (their capabilities are a large attack surface). clone3
// answers ENOSYS, as on old kernels, so libc falls back to clone, whose
// flags the filter can read.
func seccompFilter() []unix.SockFilter {
	if auditArch == 0 {
		return nil
	}
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	// jeq k: the next instruction when equal, the one after it otherwise.
	jeq := func(k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: 0, Jf: 1}
	}
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }
	allow := ret(unix.SECCOMP_RET_ALLOW)

	f := []unix.SockFilter{
		ld(offArch),
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: auditArch, Jt: 1, Jf: 0},
		ret(unix.SECCOMP_RET_KILL_PROCESS),
		ld(offNr),
	}
	if foreignNr != 0 {
		// x32's calls on amd64: numbers with bit 30 set.
		f = append(f, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: foreignNr, Jt: 0, Jf: 1},
			ret(unix.SECCOMP_RET_KILL_PROCESS))
	}
	refuse := []struct {
		nr uint32
		e  unix.Errno
	}{
		{unix.SYS_PTRACE, unix.EPERM}, {unix.SYS_PROCESS_VM_READV, unix.EPERM}, {unix.SYS_PROCESS_VM_WRITEV, unix.EPERM},
		{unix.SYS_KEYCTL, unix.EPERM}, {unix.SYS_ADD_KEY, unix.EPERM}, {unix.SYS_REQUEST_KEY, unix.EPERM},
		{unix.SYS_BPF, unix.EPERM}, {unix.SYS_PERF_EVENT_OPEN, unix.EPERM}, {unix.SYS_USERFAULTFD, unix.EPERM},
		{unix.SYS_UNSHARE, unix.EPERM}, {unix.SYS_SETNS, unix.EPERM},
		{unix.SYS_IO_URING_SETUP, unix.ENOSYS}, {unix.SYS_IO_URING_ENTER, unix.ENOSYS}, {unix.SYS_IO_URING_REGISTER, unix.ENOSYS},
		{unix.SYS_CLONE3, unix.ENOSYS},
	}
	for _, r := range refuse {
		f = append(f, jeq(r.nr), ret(errno(r.e)))
	}
	f = append(f,
		// No socket at all (socketpair stays): nothing a parser reads needs
		// one, and a unix socket's path (a session bus, docker.sock) is
		// reachable past Landlock on kernels before its RESOLVE_UNIX right.
		jeq(unix.SYS_SOCKET), ret(errno(unix.EACCES)),
		// clone(flags, ...): no new namespace.
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLONE, Jt: 0, Jf: 4},
		ld(offArg0),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: nsFlags, Jt: 0, Jf: 1},
		ret(errno(unix.EPERM)),
		allow,
		allow,
	)
	return f
}
