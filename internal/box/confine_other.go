//go:build !linux

package box

import (
	"os"
	"syscall"
)

// Outside Linux a child has its limits and nothing else: no Landlock,
// seccomp or namespaces there.

const rlimitNPROC = 0 // never set: NProc is 0 without namespaces

type rlimit struct {
	res      int
	cur, max uint64
}

func protectParent() {}

func nsAttr(*syscall.SysProcAttr) bool { return false }

func nprocLimit() uint64 { return 0 }

func kernelOffers() (abi int, seccomp bool) { return 0, false }

func confineAndExec(sp spec, path string, args []string, limits []rlimit) error {
	for _, l := range limits {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.cur, Max: l.max}); err != nil {
			return err
		}
	}
	if path == selfExe {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		path = exe
	}
	return syscall.Exec(path, args, os.Environ())
}
