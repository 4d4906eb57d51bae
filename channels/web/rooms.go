package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// Message is one message of a room, as the page shows it.
type Message struct {
	Seq       int64      `json:"seq"`
	ID        string     `json:"id"`
	Time      time.Time  `json:"time"`
	From      string     `json:"from"`
	Assistant bool       `json:"assistant,omitempty"`
	System    bool       `json:"system,omitempty"`
	Text      string     `json:"text,omitempty"`
	Files     []FileInfo `json:"files,omitempty"`
	ReplyTo   string     `json:"reply_to,omitempty"`
	// Note marks an answer that did not end as written (stopped,
	// interrupted by a restart).
	Note string `json:"note,omitempty"`
}

// Clock is the time as a page shows it.
func (m Message) Clock() string { return m.Time.Local().Format("15:04") }

const (
	// keepMessages is how much of a room a page can show (and an event
	// stream replay): the store's messages table, not this, is what the
	// agent reads.
	keepMessages = 500
	// trimEvery: the room's rows are trimmed to keepMessages when a
	// message's seq is a multiple of it (whichever instance added it), so
	// a room holds at most keepMessages+trimEvery-1 and a post does not
	// pay for a delete.
	trimEvery = 50
	// subBuffer is how far a page may fall behind before it is cut off;
	// it reconnects with Last-Event-ID and catches up from the room.
	subBuffer = 64
	// roomWriteTimeout bounds a message's write to the database. It is
	// not the caller's context: an answer cancelled mid-run is still
	// added, marked stopped.
	roomWriteTimeout = 15 * time.Second
)

// room is one web chat: its recent messages (kept in the database,
// shared by the instances on it, and in memory for this process's
// pages) and the pages listening.
type room struct {
	name, title, folder string

	st  *store.Store
	log *slog.Logger
	// fence is Env.Fence (mayShow): what the assistant shows — its
	// messages, written to the database every instance's pages read, its
	// drafts and typing — is the web channel's way out of the process.
	fence channels.Fence

	mu     sync.Mutex
	opened bool
	// msgs are the newest messages this process knows, in seq order: the
	// database's at open, and every one added here since. No page's event
	// reads the database.
	msgs []Message
	subs map[*sub]struct{}
	// drafts are answers being written, by id, in the order begun: in
	// memory only, resent to every page that connects.
	drafts []draft

	rate roomRate // posts, everyone in the room together
}

type sub struct {
	ch     chan event
	closed bool
}

// event is what a page hears: a new message, the assistant typing, an
// answer so far, or a draft removed.
type event struct {
	kind     string // "message" | "typing" | "draft" | "draft_end" | "reaction"
	msg      Message
	typing   bool
	draft    draft
	reaction reaction
}

// open loads the room's newest messages from the database. Unless the
// instance stands by (which writes nothing), an older botd's log of the
// room (<dir>/<room>.jsonl) is imported first and renamed, and the
// room's rows are trimmed to what is kept.
func (r *room) open(ctx context.Context, st *store.Store, dir string, standby bool, log *slog.Logger) error {
	r.st, r.log = st, log
	if !standby {
		if err := r.importLog(ctx, filepath.Join(dir, r.name+".jsonl")); err != nil {
			return err
		}
		if _, err := st.TrimWebRoom(ctx, r.name, keepMessages); err != nil {
			return err
		}
	}
	msgs, err := r.stored(ctx, 0, keepMessages)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = msgs
	r.subs = map[*sub]struct{}{}
	r.opened = true
	return nil
}

// stored reads the newest limit messages after seq from the database,
// for a standby's pages, which show what the active instance wrote.
func (r *room) stored(ctx context.Context, after int64, limit int) ([]Message, error) {
	rows, err := r.st.WebRoomMessages(ctx, r.name, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(rows))
	for _, row := range rows {
		out = append(out, r.fromRow(row))
	}
	return out, nil
}

func (r *room) toRow(m Message) (store.WebRoomMessage, error) {
	row := store.WebRoomMessage{Room: r.name, Seq: m.Seq, ID: m.ID, Time: m.Time, From: m.From, Assistant: m.Assistant,
		System: m.System, Text: m.Text, ReplyTo: m.ReplyTo, Note: m.Note}
	if len(m.Files) > 0 {
		raw, err := json.Marshal(m.Files)
		if err != nil {
			return store.WebRoomMessage{}, err
		}
		row.Files = string(raw)
	}
	return row, nil
}

func (r *room) fromRow(row store.WebRoomMessage) Message {
	m := Message{Seq: row.Seq, ID: row.ID, Time: row.Time, From: row.From, Assistant: row.Assistant, System: row.System,
		Text: row.Text, ReplyTo: row.ReplyTo, Note: row.Note}
	if row.Files != "" {
		if err := json.Unmarshal([]byte(row.Files), &m.Files); err != nil && r.log != nil {
			r.log.Warn("web room message with unreadable files", "room", r.name, "id", row.ID, "err", err)
		}
	}
	return m
}

// add appends m to the room in the database, which numbers it after the
// room's newest message (whichever instance added that), keeps it and
// tells every page of this process. A message whose id the room holds
// already is returned as stored, and not shown again.
func (r *room) add(m Message) (Message, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.opened {
		return Message{}, fmt.Errorf("room %s is not open", r.name)
	}
	row, err := r.toRow(m)
	if err != nil {
		return Message{}, fmt.Errorf("room %s: %w", r.name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), roomWriteTimeout)
	defer cancel()
	if m.Assistant {
		if err := r.mayShow(ctx); err != nil {
			return Message{}, err
		}
	}
	row, added, err := r.st.AppendWebRoomMessage(ctx, row)
	if err != nil {
		return Message{}, fmt.Errorf("room %s: %w", r.name, err)
	}
	m = r.fromRow(row)
	if !added {
		return m, nil
	}
	r.msgs = append(r.msgs, m)
	if len(r.msgs) > 2*keepMessages {
		r.msgs = append(r.msgs[:0:0], r.msgs[len(r.msgs)-keepMessages:]...)
	}
	// The message replaces its draft: pages swap one for the other.
	r.removeDraftLocked(m.ID)
	r.publishLocked(event{kind: "message", msg: m})
	if m.Seq%trimEvery == 0 {
		// A failed trim leaves more rows until the next one; nothing shown
		// depends on it.
		if _, err := r.st.TrimWebRoom(ctx, r.name, keepMessages); err != nil && r.log != nil {
			r.log.Warn("web room not trimmed", "room", r.name, "err", err)
		}
	}
	return m, nil
}

// recent is the newest n messages.
func (r *room) recent(n int) []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := max(0, len(r.msgs)-n)
	return append([]Message(nil), r.msgs[from:]...)
}

// has reports whether a message with id is kept.
func (r *room) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if m.ID == id {
			return true
		}
	}
	return false
}

// mayShow asks the fence before the assistant shows anything in r: a
// stale instance shows nothing (channels.FencedTransport is the same for
// the networks).
func (r *room) mayShow(ctx context.Context) error {
	if r.fence == nil {
		return nil
	}
	if err := r.fence.CheckFence(ctx); err != nil {
		return fmt.Errorf("room %s: not shown: %w", r.name, err)
	}
	return nil
}

// setDraft shows an answer so far on every page.
func (r *room) setDraft(d draft) {
	ctx, cancel := context.WithTimeout(context.Background(), roomWriteTimeout)
	err := r.mayShow(ctx)
	cancel()
	if err != nil {
		if r.log != nil {
			r.log.Info("web: draft not shown", "room", r.name, "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for i := range r.drafts {
		if r.drafts[i].ID == d.ID {
			r.drafts[i], found = d, true
		}
	}
	if !found {
		r.drafts = append(r.drafts, d)
	}
	r.publishLocked(event{kind: "draft", draft: d})
}

// dropDraft removes an answer that ended without a message.
func (r *room) dropDraft(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removeDraftLocked(id) {
		r.publishLocked(event{kind: "draft_end", draft: draft{ID: id}})
	}
}

func (r *room) removeDraftLocked(id string) bool {
	for i := range r.drafts {
		if r.drafts[i].ID == id {
			r.drafts = append(r.drafts[:i:i], r.drafts[i+1:]...)
			return true
		}
	}
	return false
}

// subscribe returns a new listener, the kept messages after seq and the
// drafts, taken together so that nothing falls between them.
func (r *room) subscribe(after int64) (*sub, []Message, []draft) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &sub{ch: make(chan event, subBuffer)}
	r.subs[s] = struct{}{}
	var backlog []Message
	for _, m := range r.msgs {
		if m.Seq > after {
			backlog = append(backlog, m)
		}
	}
	if len(backlog) > keepMessages {
		backlog = backlog[len(backlog)-keepMessages:]
	}
	return s, backlog, append([]draft(nil), r.drafts...)
}

func (r *room) unsubscribe(s *sub) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(s)
}

func (r *room) drop(s *sub) {
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	delete(r.subs, s)
}

func (r *room) publish(ev event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.publishLocked(ev)
}

// publishLocked never blocks: a page that cannot keep up is cut off and
// catches up when its browser reconnects.
func (r *room) publishLocked(ev event) {
	for s := range r.subs {
		select {
		case s.ch <- ev:
		default:
			r.drop(s)
		}
	}
}
