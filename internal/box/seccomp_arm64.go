//go:build linux && arm64

package box

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	foreignNr = 0
)
