package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/clock"
)

var _ channels.Streamer = (*Matrix)(nil)

const (
	// editEvery paces a live answer's edits. Synapse's default message
	// rate limit (rc_message: 0.2/s, bursts of 10) is what a bot account
	// without an exemption gets: an edit every 4 s keeps a minute-long
	// answer (15 edits, plus its start and end) inside it.
	editEvery = 4 * time.Second
	// interruptedNote ends what a live answer had shown when botd stopped
	// before finishing it.
	interruptedNote = "\n\n_(interrupted)_"
)

// BeginStream implements channels.Streamer: the first words are posted at
// once (as a reply when msg.ReplyTo is set, in msg.ThreadID's thread),
// and the message grows by m.replace edits at most once per editEvery,
// encrypted like any event in an encrypted room. Past TextLimit the
// answer goes on in new messages, cut where Send would cut it.
func (m *Matrix) BeginStream(ctx context.Context, msg channels.OutMessage) (channels.LiveMessage, error) {
	r, err := nativeRoom(msg.Chat)
	if err != nil {
		return nil, err
	}
	l := &liveMessage{Pacer: channels.NewPacer(msg.Text), m: m, ctx: ctx, chat: msg.Chat, room: r,
		thread: msg.ThreadID, replyTo: msg.ReplyTo}
	if len(m.pieces(msg.Text)) > 0 {
		if err := l.show(ctx, msg.Text, false); err != nil {
			return nil, err
		}
	}
	go l.Run(ctx, m.liveClock(), m.liveEvery(), func(text string) {
		if err := l.show(ctx, text, false); err != nil && ctx.Err() == nil {
			m.log.Warn("matrix: live answer edit failed; the final answer still comes", "chat", msg.Chat, "err", err)
		}
	})
	return l, nil
}

// InterruptStream marks the last message a live answer had shown before a
// crash as interrupted: it is edited to the tail of text plus
// "_(interrupted)_". Earlier messages were complete pieces and stay.
func (m *Matrix) InterruptStream(ctx context.Context, chat string, ids []string, text string) error {
	r, err := nativeRoom(chat)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	ps := m.pieces(text + interruptedNote)
	if len(ps) == 0 {
		return nil
	}
	last := ids[len(ids)-1]
	if err := m.edit(ctx, r, last, ps[len(ps)-1]); err != nil {
		return fmt.Errorf("matrix: mark answer %s in %s interrupted: %w", last, chat, err)
	}
	return nil
}

func (m *Matrix) liveClock() clock.Clock {
	if m.clock != nil {
		return m.clock
	}
	return clock.Real{}
}

func (m *Matrix) liveEvery() time.Duration {
	if m.editEvery > 0 {
		return m.editEvery
	}
	return editEvery
}

// edit replaces event orig's content with p (m.replace): clients show the
// new content in its place; those without edits show "* " and the text.
func (m *Matrix) edit(ctx context.Context, r id.RoomID, orig string, p piece) error {
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: p.body, Format: event.FormatHTML,
		FormattedBody: p.html, Mentions: &event.Mentions{}}
	c.SetEdit(id.EventID(orig))
	_, err := m.sendEvent(ctx, r, event.EventMessage, c)
	return err
}

// liveMessage is one answer growing in a room. The Pacer's goroutine
// shows the newest text at most once per editEvery; Finish and Cancel
// halt it and then own the messages.
type liveMessage struct {
	*channels.Pacer
	m               *Matrix
	ctx             context.Context
	chat            string
	room            id.RoomID
	thread, replyTo string

	mu    sync.Mutex
	ids   []string
	shown []piece // what each message in ids shows
}

func (l *liveMessage) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ids...)
}

func (l *liveMessage) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	return l.FinishBy(ctx, text, l.show, l.IDs)
}

func (l *liveMessage) Cancel(ctx context.Context, note string) error {
	return l.CancelBy(ctx, note, l.show, l.IDs)
}

// show makes the messages read text: pieces that changed are edited, new
// ones posted (the first as the reply); final redacts messages a shorter
// text (a retried answer) no longer needs.
func (l *liveMessage) show(ctx context.Context, text string, final bool) error {
	ps := l.m.pieces(text)
	if final && len(ps) == 0 {
		return fmt.Errorf("matrix send to %s: empty message", l.chat)
	}
	var errs []error
	for i, p := range ps {
		l.mu.Lock()
		have := i < len(l.ids)
		var evID string
		var was piece
		if have {
			evID, was = l.ids[i], l.shown[i]
		}
		l.mu.Unlock()
		switch {
		case have && was == p:
		case have:
			if err := l.m.edit(ctx, l.room, evID, p); err != nil {
				errs = append(errs, err)
				continue
			}
			l.mu.Lock()
			l.shown[i] = p
			l.mu.Unlock()
		default:
			c := &event.MessageEventContent{MsgType: event.MsgText, Body: p.body, Format: event.FormatHTML,
				FormattedBody: p.html, Mentions: &event.Mentions{}}
			replyTo := ""
			if i == 0 {
				replyTo = l.replyTo
			}
			c.RelatesTo = relation(l.thread, replyTo)
			newID, err := l.m.sendEvent(ctx, l.room, event.EventMessage, c)
			if err != nil {
				// Later pieces would land out of order.
				return errors.Join(append(errs, fmt.Errorf("matrix send to %s: %w", l.chat, err))...)
			}
			l.mu.Lock()
			l.ids, l.shown = append(l.ids, newID), append(l.shown, p)
			l.mu.Unlock()
		}
	}
	if final {
		l.mu.Lock()
		n := min(len(ps), len(l.ids))
		extra := append([]string(nil), l.ids[n:]...)
		l.ids, l.shown = l.ids[:n], l.shown[:n]
		l.mu.Unlock()
		for _, evID := range extra {
			if _, err := l.m.cli.RedactEvent(ctx, l.room, id.EventID(evID), mautrix.ReqRedact{Reason: "the answer was rewritten"}); err != nil {
				errs = append(errs, l.m.sendError(err))
			}
		}
	}
	return errors.Join(errs...)
}
