//go:build unix

package diskbudget_test

import (
	"errors"
	"syscall"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
