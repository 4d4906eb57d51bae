//go:build unix

package diskbudget

import (
	"errors"
	"os"
	"syscall"
)

// Hold marks f in use until f is closed: a shared lock that eviction, in
// this process or another, will not break. It waits only while a sweep is
// removing that very file; afterwards the caller must check the file is
// still linked (Linked).
func Hold(f *os.File) error {
	return flock(f, syscall.LOCK_SH)
}

func tryLockExclusive(f *os.File) bool {
	return flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

func flock(f *os.File, how int) error {
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

// openNoBlock opens for locking only: a FIFO swapped in after the walk
// must not hang the sweeper.
func openNoBlock(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
