package connlimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// The order in which connections make room when one too many is accepted.
func TestConnTrackerVictims(t *testing.T) {
	tr := New(3, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	type pipe struct {
		tc   *conn
		peer net.Conn
	}
	add := func() pipe {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		ctx := tr.ConnContext(context.Background(), a)
		tr.ConnState(a, http.StateNew)
		return pipe{ctx.Value(ctxKey{}).(*conn), b}
	}
	authorise := func(c pipe, state http.ConnState) {
		tr.ConnState(c.tc.c, http.StateActive)
		Authorise(context.WithValue(context.Background(), ctxKey{}, c.tc))
		tr.ConnState(c.tc.c, state)
	}
	closed := func(c pipe) bool {
		// A closed pipe end fails the peer's write at once; an open
		// one blocks it until the deadline.
		c.peer.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.peer.Write([]byte("x"))
		if err != nil && !isTimeout(err) {
			return true
		}
		return false
	}
	check := func(step string, wantClosed, wantOpen []pipe) {
		t.Helper()
		for _, c := range wantClosed {
			if !closed(c) {
				t.Errorf("%s: a connection that should have been closed is open", step)
			}
		}
		for _, c := range wantOpen {
			if closed(c) {
				t.Errorf("%s: a connection that should be open was closed", step)
			}
		}
		if n := tr.Open(); n > 3 {
			t.Errorf("%s: %d connections counted, cap 3", step, n)
		}
	}

	idle, busy, fresh := add(), add(), add()
	authorise(idle, http.StateIdle)
	authorise(busy, http.StateActive)
	c4 := add()
	check("unauthorised first", []pipe{fresh}, []pipe{idle, busy, c4})

	c5 := add() // c4 is now the oldest unauthorised one
	check("oldest unauthorised", []pipe{c4}, []pipe{idle, busy, c5})

	authorise(c5, http.StateActive)
	c6 := add()
	check("then the idle authorised one", []pipe{idle}, []pipe{busy, c5, c6})

	authorise(c6, http.StateActive)
	c7 := add()
	check("every other one busy: the new one", []pipe{c7}, []pipe{busy, c5, c6})

	tr.ConnState(busy.tc.c, http.StateClosed)
	c8 := add()
	check("room again", nil, []pipe{c5, c6, c8})
	if n := tr.Open(); n != 3 {
		t.Errorf("%d connections counted, want 3", n)
	}
}
