package whatsapp

import (
	"context"
	"sync"

	"go.mau.fi/whatsmeow/types"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/format"
)

var (
	_ channels.Streamer      = (*WhatsApp)(nil)
	_ channels.WholeAtFinish = (*WhatsApp)(nil)
)

// WholeAtFinish is true: BeginStream shows nothing (see there).
func (w *WhatsApp) WholeAtFinish() bool { return true }

// render formats an answer's markdown for WhatsApp (*bold*, _italic_,
// ~strike~, monospace) and cuts it at limit characters (0: no cut).
var render = func(md string, limit int) []string { return format.Render(md, format.WhatsApp, limit) }

// BeginStream shows nothing: edits of a growing WhatsApp message notify
// and jump on every phone, so the answer goes out whole at Finish and the
// chat sees "typing…" meanwhile.
func (w *WhatsApp) BeginStream(ctx context.Context, msg channels.OutMessage) (channels.LiveMessage, error) {
	cli, err := w.client()
	if err != nil {
		return nil, err
	}
	to, err := parseChat(msg.Chat)
	if err != nil {
		return nil, err
	}
	if err := cli.SendChatPresence(ctx, to, types.ChatPresenceComposing, types.ChatPresenceMediaText); err != nil {
		// Presence is a nicety; the answer still comes at Finish.
		w.log.Debug("whatsapp typing presence", "chat", msg.Chat, "err", err)
	}
	return &liveMessage{w: w, msg: msg, to: to}, nil
}

// InterruptStream has nothing to mark: a WhatsApp live answer shows
// nothing before Finish.
func (w *WhatsApp) InterruptStream(context.Context, string, []string, string) error { return nil }

// liveMessage holds the newest text until Finish sends it as a normal
// message.
type liveMessage struct {
	w   *WhatsApp
	msg channels.OutMessage
	to  types.JID

	mu   sync.Mutex
	ids  []string
	done bool
}

// Update keeps nothing: Finish gets the whole answer anyway.
func (l *liveMessage) Update(string) {}

func (l *liveMessage) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ids...)
}

// Finish sends the complete answer once; a second Finish (or one after
// Cancel) sends nothing more.
func (l *liveMessage) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return channels.Delivery{MessageIDs: append([]string(nil), l.ids...)}, nil
	}
	out := l.msg
	out.Text = text
	d, err := l.w.Send(ctx, out)
	l.ids = append(l.ids, d.MessageIDs...)
	if err != nil {
		// Pieces already sent stay counted, so a retry of Finish must not
		// send them again; it is the outbox's to deliver the answer anew.
		l.done = len(l.ids) > 0
		return d, err
	}
	l.done = true
	return d, nil
}

// Cancel clears "typing…"; nothing was shown, so nothing is removed.
func (l *liveMessage) Cancel(ctx context.Context, _ string) error {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
	return l.w.SetTyping(ctx, l.msg.Chat, false)
}
