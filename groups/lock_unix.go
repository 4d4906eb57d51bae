//go:build unix

package groups

import (
	"errors"
	"os"
	"syscall"
)

// Flock takes an advisory flock(2) lock on f, shared or exclusive, held
// until f is closed. Locks taken through different opens of a file exclude
// each other, between goroutines of one process as between processes.
// Without wait, a lock someone else holds is an error at once.
func Flock(f *os.File, exclusive, wait bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if !wait {
		how |= syscall.LOCK_NB
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return ferr
}
