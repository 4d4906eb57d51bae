//go:build !unix

package box

import (
	"errors"
	"os"
)

// hostLocks: without flock(2) the pool stays each process's own.
const hostLocks = false

func openLock(string) (*os.File, error) { return nil, errors.New("box: no file locks here") }

func tryLock(*os.File) (bool, error) { return false, errors.New("box: no file locks here") }
