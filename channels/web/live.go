package web

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/format"
)

var _ channels.Streamer = (*Web)(nil)

// render turns an assistant's markdown into the HTML a room shows:
// sanitised by format, so raw HTML from the model never passes. A
// finished answer is shown again on every page load and event stream,
// and colouring its code is slow: the HTML is kept (renderCache).
var render = func(md string) string {
	if h, ok := rendered.get(md); ok {
		return h
	}
	h := ""
	if p := format.Render(md, format.Web, 0); len(p) > 0 {
		h = p[0]
	}
	rendered.put(md, h)
	return h
}

// renderDraft is render for an answer still being written: its code is
// coloured once it is finished.
var renderDraft = func(md string) string {
	if p := format.Render(md, format.WebDraft, 0); len(p) > 0 {
		return p[0]
	}
	return ""
}

// rendered is the HTML of the answers shown last.
var rendered = newRenderCache(renderCacheBytes)

// renderCacheBytes bounds the HTML rendered keeps.
const renderCacheBytes = 8 << 20

// renderCache keeps rendered HTML by the markdown's SHA-256, the least
// recently used dropped past max bytes.
type renderCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *renderEntry, the most recent first
	byKey map[[32]byte]*list.Element
}

type renderEntry struct {
	key  [32]byte
	html string
}

func newRenderCache(max int) *renderCache {
	return &renderCache{max: max, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

func (c *renderCache) get(md string) (string, bool) {
	k := sha256.Sum256([]byte(md))
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*renderEntry).html, true
	}
	return "", false
}

func (c *renderCache) put(md, html string) {
	if len(html) > c.max/8 {
		return // one answer must not empty the cache
	}
	k := sha256.Sum256([]byte(md))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.order.PushFront(&renderEntry{key: k, html: html})
	c.size += len(html)
	for c.size > c.max {
		e := c.order.Back()
		old := e.Value.(*renderEntry)
		c.order.Remove(e)
		delete(c.byKey, old.key)
		c.size -= len(old.html)
	}
}

// renderHTML is render's answer as the one value templates insert
// unescaped.
func renderHTML(md string) template.HTML {
	return template.HTML(render(md)) //nolint:gosec // render's contract is sanitised HTML
}

// draftGap is the least time between two drafts of one answer a page
// hears: token by token to the eye, without an event per token when a
// model writes faster than a page repaints.
const draftGap = 50 * time.Millisecond

// draft is an answer being written, as pages hear it.
type draft struct {
	ID      string        `json:"id"`
	From    string        `json:"from"`
	ReplyTo string        `json:"reply_to,omitempty"`
	HTML    template.HTML `json:"html"`
}

// SetStopper sets what the room's Stop button calls with the room's chat
// ("web:<room>"): it cancels the run working for that chat and reports
// whether there was one. Without it the button answers that stopping is
// not available.
func (w *Web) SetStopper(stop func(chat string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopper = stop
}

// BeginStream implements channels.Streamer: the room's pages show the
// answer as a draft that grows until Finish replaces it with the message.
func (w *Web) BeginStream(ctx context.Context, m channels.OutMessage) (channels.LiveMessage, error) {
	r, err := w.room(m.Chat)
	if err != nil {
		return nil, err
	}
	l := &liveMsg{w: w, r: r, id: newID(), replyTo: m.ReplyTo}
	if m.Text != "" {
		l.Update(m.Text)
	}
	return l, nil
}

// InterruptStream implements channels.Streamer. Drafts live in memory
// only, so after a restart the pages no longer have one to edit: what
// was shown is added to the room once, marked, and the answer follows
// through the outbox.
func (w *Web) InterruptStream(ctx context.Context, chat string, ids []string, text string) error {
	r, err := w.room(chat)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	id := newID()
	if len(ids) > 0 && ids[0] != "" {
		id = ids[0]
	}
	if r.has(id) {
		return nil // marked already: a second restart before the answer went out
	}
	_, err = r.add(Message{ID: id, Time: w.now(), From: w.env.AssistantName, Assistant: true, Text: text,
		Note: "interrupted: botd restarted while writing this; the answer follows"})
	if err != nil {
		return err
	}
	return nil
}

// liveMsg is one answer streaming into a room.
type liveMsg struct {
	w       *Web
	r       *room
	id      string
	replyTo string

	mu    sync.Mutex
	text  string // the newest text
	shown string // what the pages were last sent
	last  time.Time
	timer *time.Timer
	done  bool
}

func (l *liveMsg) Update(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || text == l.text {
		return
	}
	l.text = text
	if l.timer != nil {
		return // the pending flush sends the newest text
	}
	if wait := draftGap - time.Since(l.last); wait > 0 {
		l.timer = time.AfterFunc(wait, l.flush)
		return
	}
	l.publishLocked()
}

func (l *liveMsg) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = nil
	if !l.done {
		l.publishLocked()
	}
}

func (l *liveMsg) publishLocked() {
	if l.text == l.shown {
		return
	}
	l.shown, l.last = l.text, time.Now()
	l.r.setDraft(draft{ID: l.id, From: l.w.env.AssistantName, ReplyTo: l.replyTo, HTML: template.HTML(renderDraft(l.text))}) //nolint:gosec // sanitised by format
}

func (l *liveMsg) IDs() []string { return []string{l.id} }

// end stops further drafts and returns what the pages were shown.
func (l *liveMsg) end() (shown string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return "", false
	}
	l.done = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	return l.shown, true
}

// Finish replaces the draft with the answer, under the draft's id, so a
// page swaps one for the other and a retried answer is never shown twice.
func (l *liveMsg) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	if _, ok := l.end(); !ok {
		return channels.Delivery{}, errors.New("web: this answer was finished or cancelled already")
	}
	l.w.stopTyping(l.r.name)
	_, err := l.r.add(Message{ID: l.id, Time: l.w.now(), From: l.w.env.AssistantName, Assistant: true, Text: text, ReplyTo: l.replyTo})
	if err != nil {
		return channels.Delivery{}, err
	}
	return channels.Delivery{MessageIDs: []string{l.id}}, nil
}

// Cancel keeps what was shown, marked with note, or removes an empty
// draft.
func (l *liveMsg) Cancel(ctx context.Context, note string) error {
	shown, ok := l.end()
	if !ok {
		return nil
	}
	l.w.stopTyping(l.r.name)
	if strings.TrimSpace(shown) == "" {
		l.r.dropDraft(l.id)
		return nil
	}
	if note == "" {
		note = "stopped"
	}
	_, err := l.r.add(Message{ID: l.id, Time: l.w.now(), From: l.w.env.AssistantName, Assistant: true, Text: shown,
		ReplyTo: l.replyTo, Note: note})
	return err
}

// stop is the room's Stop button: it asks the agent to cancel the run
// working for the room.
func (w *Web) stop(rw http.ResponseWriter, r *http.Request) {
	rm, s := w.authRoom(rw, r, false)
	if rm == nil {
		return
	}
	if !w.auth.checkCSRF(r, s) {
		w.fail(rw, r, http.StatusForbidden, "missing or wrong CSRF token; reload the page")
		return
	}
	w.mu.Lock()
	stop := w.stopper
	w.mu.Unlock()
	if stop == nil {
		w.fail(rw, r, http.StatusNotImplemented, "this botd cannot stop an answer from the room")
		return
	}
	stopped := stop(ChatID(rm.name))
	w.log.Info("web stop pressed", "room", rm.name, "stopped", stopped)
	rw.Header().Set("Content-Type", "application/json")
	if stopped {
		rw.Write([]byte(`{"stopped":true}`))
		return
	}
	rw.Write([]byte(`{"stopped":false,"error":"nothing is being answered in this room"}`))
}
