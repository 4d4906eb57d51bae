package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/atomicfile"
)

// Message is one entry of a room's log, as the page shows it.
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
	// stream replay): the store, not this log, is what the agent reads.
	keepMessages = 500
	// maxLogLines is how long a log grows before it is compacted to the
	// kept messages: compaction rewrites the log, so not on every post.
	maxLogLines = 2 * keepMessages
	// subBuffer is how far a page may fall behind before it is cut off;
	// it reconnects with Last-Event-ID and catches up from the log.
	subBuffer = 64
)

// room is one web chat: its recent messages, the file they are appended
// to, and the pages listening.
type room struct {
	name, title, folder string

	mu   sync.Mutex
	path string // the log, opened for each append so no descriptor outlives the channel
	// lines is how many messages the log holds; past maxLogLines it is
	// compacted to what is kept, so a flood of posts cannot grow it.
	lines int
	msgs  []Message
	seq   int64
	subs  map[*sub]struct{}
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
	kind   string // "message" | "typing" | "draft" | "draft_end"
	msg    Message
	typing bool
	draft  draft
}

// open loads the newest messages of the room's log (<dir>/<room>.jsonl).
// A log grown past maxLogLines is rewritten to what is kept, before
// anything is appended.
func (r *room) open(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p := filepath.Join(dir, r.name+".jsonl")
	lines := 0
	if raw, err := os.ReadFile(p); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m Message
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue // a line cut by a crash
			}
			lines++
			r.msgs = append(r.msgs, m)
			r.seq = max(r.seq, m.Seq)
			if len(r.msgs) > 2*keepMessages {
				r.msgs = append(r.msgs[:0:0], r.msgs[len(r.msgs)-keepMessages:]...)
			}
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	if len(r.msgs) > keepMessages {
		r.msgs = r.msgs[len(r.msgs)-keepMessages:]
	}
	if lines > maxLogLines {
		if err := r.rewrite(p); err != nil {
			return err
		}
		lines = len(r.msgs)
	}
	r.lines = lines
	r.path = p
	r.subs = map[*sub]struct{}{}
	return nil
}

// rewrite replaces the log with the kept messages (temp file + rename: a
// crash leaves the old log or the new one).
func (r *room) rewrite(p string) error {
	var b bytes.Buffer
	for _, m := range r.msgs {
		line, _ := json.Marshal(m)
		b.Write(line)
		b.WriteByte('\n')
	}
	return atomicfile.WriteFile(p, b.Bytes(), 0o600)
}

// add numbers m, appends it to the log and tells every page.
func (r *room) add(m Message) (Message, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.path == "" {
		return Message{}, fmt.Errorf("room %s is not open", r.name)
	}
	m.Seq = r.seq + 1
	line, err := json.Marshal(m)
	if err != nil {
		return Message{}, err
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return Message{}, fmt.Errorf("room %s log: %w", r.name, err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Message{}, fmt.Errorf("room %s log: %w", r.name, err)
	}
	r.seq = m.Seq
	r.msgs = append(r.msgs, m)
	// The message replaces its draft: pages swap one for the other.
	r.removeDraftLocked(m.ID)
	r.lines++
	if r.lines > maxLogLines {
		r.msgs = append(r.msgs[:0:0], r.msgs[max(0, len(r.msgs)-keepMessages):]...)
		// A failed compaction leaves the longer log, which is still whole.
		if err := r.rewrite(r.path); err == nil {
			r.lines = len(r.msgs)
		}
	} else if len(r.msgs) > 2*keepMessages {
		r.msgs = append(r.msgs[:0:0], r.msgs[len(r.msgs)-keepMessages:]...)
	}
	r.publishLocked(event{kind: "message", msg: m})
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

// setDraft shows an answer so far on every page.
func (r *room) setDraft(d draft) {
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
