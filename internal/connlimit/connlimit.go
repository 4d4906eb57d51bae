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
	tc := &conn{t: t, c: c, state: http.StateNew}
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

// victimLocked picks the connection to close when newest is one too many:
// the oldest that never carried an authorised request (silent, sending
// its headers slowly, or being refused), then the oldest authorised one
// that is idle between requests, and newest itself only when all others
// are busy with authorised requests.
func (t *Tracker) victimLocked(newest *conn) *conn {
	var idle *conn
	for e := t.order.Front(); e != nil; e = e.Next() {
		tc := e.Value.(*conn)
		if tc == newest {
			continue
		}
		if !tc.authorised {
			return tc
		}
		if idle == nil && tc.state == http.StateIdle {
			idle = tc
		}
	}
	if idle != nil {
		return idle
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

// Refuse makes the server close the connection after this answer: a
// connection that never carries an authorised request must not stay.
func Refuse(w http.ResponseWriter) { w.Header().Set("Connection", "close") }
