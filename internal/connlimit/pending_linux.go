package connlimit

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending reports (SIOCINQ, which is TIOCINQ) whether c has bytes the server has not read yet: a
// client that already sent its request, as opposed to one that is silent.
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	if raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) != nil {
		return false
	}
	return n > 0
}
