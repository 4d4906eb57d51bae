package mcp

import (
	"container/list"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultMaxSessionsPerToken bounds the sessions one token's clients hold
// open at once. A desktop client holds one or two; 256 leaves room for a
// client that reconnects often without ever saying DELETE, while a token
// that initialises in a loop costs botd at most 256 sessions' state.
const DefaultMaxSessionsPerToken = 256

// sessionSet is one token's open sessions, least recently used first.
//
// mcp-go mints session ids without keeping them (its default id manager is
// stateless), so a session it has swept or never made would be served
// with fresh state. This set is what makes a session a thing botd can
// close: a request naming an id the token does not hold is answered 404,
// which the MCP spec tells a client to answer by initialising again.
type sessionSet struct {
	max int

	mu    sync.Mutex
	order list.List // of string, least recently used first
	ids   map[string]*list.Element
}

func newSessionSet(max int) *sessionSet {
	return &sessionSet{max: max, ids: map[string]*list.Element{}}
}

// touch marks id used and reports whether the token holds it.
func (s *sessionSet) touch(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ids[id]
	if e != nil {
		s.order.MoveToBack(e)
	}
	return e != nil
}

// add records a new session and returns the ones it displaced, which the
// caller closes.
func (s *sessionSet) add(id string) (closed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.ids[id]; e != nil {
		s.order.MoveToBack(e)
		return nil
	}
	s.ids[id] = s.order.PushBack(id)
	for s.order.Len() > s.max {
		e := s.order.Front()
		old := s.order.Remove(e).(string)
		delete(s.ids, old)
		closed = append(closed, old)
	}
	return closed
}

func (s *sessionSet) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.ids[id]; e != nil {
		s.order.Remove(e)
		delete(s.ids, id)
	}
}

func (s *sessionSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

// sessionIDWriter keeps the session id an initialize answer hands out.
type sessionIDWriter struct {
	http.ResponseWriter
	id string
}

func (w *sessionIDWriter) capture() {
	if w.id == "" {
		w.id = w.Header().Get(server.HeaderKeySessionID)
	}
}

func (w *sessionIDWriter) WriteHeader(code int) {
	w.capture()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionIDWriter) Write(p []byte) (int, error) {
	w.capture()
	return w.ResponseWriter.Write(p)
}

func (w *sessionIDWriter) Flush() {
	w.capture()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// closeSession drops everything mcp-go holds for id (its registration, its
// notification queues, its idle clock) the way a client's DELETE does, so
// there is one way a session ends.
func closeSession(sh http.Handler, id string) {
	r, _ := http.NewRequest(http.MethodDelete, HTTPPath, nil)
	r.Host, r.RemoteAddr = "localhost", "127.0.0.1:0"
	r.Header.Set(server.HeaderKeySessionID, id)
	sh.ServeHTTP(discardWriter{h: http.Header{}}, r)
}

// discardWriter is the answer to a DELETE nobody sent.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}
