package connlimit

import (
	"net"

	"golang.org/x/sys/unix"
)

// deferAccept asks the kernel to hand over a connection only once its
// first bytes have arrived (or after about secs seconds): a connection
// that says nothing then holds no descriptor and no place under the cap,
// and every connection the server sees has already sent its request.
func deferAccept(ln net.Listener, secs int) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, secs)
	})
}
