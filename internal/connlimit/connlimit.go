// Package connlimit caps the open connections of an http.Server so that
// connections which never proved themselves (no token, no session) can
// never lock out a client that did. `botd mcp --http` and the web channel
// both use it.
package connlimit

import (
	"container/list"
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Tracker keeps the open connections in the order they were accepted
// and enforces the cap when one is accepted (ConnContext runs in the
// accept loop, before the connection is served). Hook it into a server
// with ConnContext and ConnState; handlers call Authorise.
type Tracker struct {
	max  int
	log  *slog.Logger
	what string // names the server in the warning

	mu       sync.Mutex
	order    list.List // of *conn, oldest first
	conns    map[net.Conn]*conn
	shed     int // connections closed for the cap since the last warning
	lastWarn time.Time
}

type conn struct {
	t     *Tracker
	c     net.Conn
	elem  *list.Element
	state http.ConnState
	// authorised is set once the connection carried an authorised
	// request; it then outranks every connection that did not.
	authorised bool
	// refused is set once a request on it was turned away for good: it
	// is closing, and makes room before anything that may still prove
	// itself.
	refused bool
	// sentFirst is set when bytes were waiting as it was accepted.
	sentFirst bool
}

type ctxKey struct{}

// New returns a tracker allowing max open connections; what names the
// server in its log line ("mcp http", "web").
func New(max int, what string, log *slog.Logger) *Tracker {
	if log == nil {
		log = slog.Default()
	}
	return &Tracker{max: max, what: what, log: log, conns: map[net.Conn]*conn{}}
}

// ConnContext is the server's ConnContext: it counts c and, one over the
// cap, closes the victim (see victimLocked).
func (t *Tracker) ConnContext(ctx context.Context, c net.Conn) context.Context {
	// Nothing has read from c yet (the server starts to once this
	// returns), so bytes waiting now are what the client sent: with the
	// kernel holding silent connections (Listener), a client's request.
	_, waits := progress(c)
	tc := &conn{t: t, c: c, state: http.StateNew, sentFirst: waits}
	t.mu.Lock()
	tc.elem = t.order.PushBack(tc)
	t.conns[c] = tc
	var victim *conn
	if t.order.Len() > t.max {
		victim = t.victimLocked(tc)
		t.removeLocked(victim)
		t.shed++
	}
	warn := victim != nil && time.Since(t.lastWarn) >= time.Minute
	shed := t.shed
	if warn {
		t.lastWarn, t.shed = time.Now(), 0
	}
	t.mu.Unlock()
	if victim != nil {
		victim.c.Close()
		if warn {
			t.log.Warn(t.what+": connection limit reached; closing connections that never made an authorised request first",
				"max_conns", t.max, "closed", shed)
		}
	}
	return context.WithValue(ctx, ctxKey{}, tc)
}

// victimLocked picks the connection to close when newest is one too many,
// unproven connections (never an authorised request) first:
//  1. the oldest that has sent nothing the server has not read yet
//     (silent), or whose request was refused (it is closing anyway);
//  2. the oldest authorised one idle between requests;
//  3. the oldest unproven one the server has read from without getting a
//     whole request's headers (sent a byte at a time, they must not hold
//     a place), then the oldest whose request is being answered;
//  4. the oldest unproven one whose bytes wait unread: the server has not
//     got to it yet, which is no fault of the client's;
//  5. newest itself, when all others are busy with authorised requests.
//
// Judging by what was sent and read, not by age alone, keeps a churn of
// tokenless connections from closing a client's new connection in the
// moment between its request's arrival and its token's check.
func (t *Tracker) victimLocked(newest *conn) *conn {
	var idle, partial, answering, waiting *conn
	first := func(p **conn, tc *conn) {
		if *p == nil {
			*p = tc
		}
	}
	for e := t.order.Front(); e != nil; e = e.Next() {
		tc := e.Value.(*conn)
		if tc == newest {
			continue
		}
		if tc.authorised {
			if tc.state == http.StateIdle {
				first(&idle, tc)
			}
			continue
		}
		if tc.refused {
			return tc
		}
		switch read, waits := progress(tc.c); {
		case tc.state == http.StateActive:
			first(&answering, tc)
		case read:
			first(&partial, tc)
		case waits || tc.sentFirst:
			// A read in progress has taken the bytes before it says so.
			first(&waiting, tc)
		default:
			return tc // silent
		}
	}
	for _, v := range []*conn{idle, partial, answering, waiting} {
		if v != nil {
			return v
		}
	}
	return newest
}

func (t *Tracker) removeLocked(tc *conn) {
	if tc.elem == nil {
		return
	}
	t.order.Remove(tc.elem)
	tc.elem = nil
	delete(t.conns, tc.c)
}

// ConnState is the server's ConnState.
func (t *Tracker) ConnState(c net.Conn, state http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.conns[c]
	if tc == nil {
		return // closed for the cap already
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		t.removeLocked(tc)
	default:
		tc.state = state
	}
}

// Open is the number of connections counted against the cap.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

// Authorise records that the request's connection carried an authorised
// request (a no-op for a context that did not come through a Tracker's
// ConnContext, e.g. under httptest).
func Authorise(ctx context.Context) {
	tc, _ := ctx.Value(ctxKey{}).(*conn)
	if tc == nil {
		return
	}
	tc.t.mu.Lock()
	tc.authorised = true
	tc.t.mu.Unlock()
}

// Refused records that the request's connection was turned away for good
// (its answer is final and it will close), so that it makes room first.
func Refused(ctx context.Context) {
	tc, _ := ctx.Value(ctxKey{}).(*conn)
	if tc == nil {
		return
	}
	tc.t.mu.Lock()
	tc.refused = true
	tc.t.mu.Unlock()
}

// Refuse makes the server close the connection after this answer: a
// connection that never carries an authorised request must not stay.
func Refuse(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// Listener prepares ln for a Tracker's server. On Linux the kernel hands
// over a connection only once it has sent something, or after about
// holdSilent (TCP_DEFER_ACCEPT; zero or less leaves it off), so silent
// connections take no place under the cap meanwhile. And each connection
// records whether the server has read from it: net/http moves a
// connection to StateActive only once a request's headers are in, so
// without this a client whose request is half read looks as silent as
// one that sent nothing.
func Listener(ln net.Listener, holdSilent time.Duration) net.Listener {
	if secs := int(holdSilent.Round(time.Second).Seconds()); secs > 0 {
		deferAccept(ln, secs)
	}
	return readListener{ln}
}

type readListener struct{ net.Listener }

func (l readListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readConn{Conn: c}, nil
}

// readConn records that a Read returned bytes.
type readConn struct {
	net.Conn
	read atomic.Bool
}

func (c *readConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.read.Load() {
		c.read.Store(true)
	}
	return n, err
}

// progress reports whether the server has read anything from c, and
// whether bytes wait on it unread.
func progress(c net.Conn) (read, waits bool) {
	if rc, ok := c.(*readConn); ok {
		return rc.read.Load(), pending(rc.Conn)
	}
	return false, pending(c)
}
