package connlimit

import (
	"net"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
)

// A connection is silent until its peer sends; then bytes wait (pending),
// and once the server has read them it is no longer silent either.
func TestSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rl := Listener(ln, 0)
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := rl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !silentConn(c) {
		t.Fatal("a connection whose peer sent nothing is not silent")
	}
	if _, err := peer.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	// The bytes cross loopback in the kernel; wait for them to land.
	testwait.Until(t, "the bytes sent count as waiting", func() bool { return !silentConn(c) })
	buf := make([]byte, 64)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	if pending(c.(*readConn).Conn) {
		t.Fatal("everything was read, yet bytes are pending")
	}
	if silentConn(c) {
		t.Fatal("the server read a request's start, yet the connection counts as silent")
	}
}

func silentConn(c net.Conn) bool {
	read, waits := progress(c)
	return !read && !waits
}

// With holdSilent, the kernel hands over the connection that sent its
// request before an older one that sent nothing.
func TestListenerHoldsSilentConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rl := Listener(ln, 30*time.Second)
	quiet, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	talker, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer talker.Close()
	if _, err := talker.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	c, err := rl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.RemoteAddr().String() != talker.LocalAddr().String() {
		t.Fatalf("accepted %s, the silent connection, before %s, which sent its request", c.RemoteAddr(), talker.LocalAddr())
	}
}
