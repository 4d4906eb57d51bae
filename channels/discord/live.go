package discord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/botd-dev/botd/channels"
)

// interruptedNote ends what a live answer had shown when botd stopped
// before finishing it.
const interruptedNote = "\n\n_(interrupted)_"

// BeginStream implements channels.Streamer: the first words are posted at
// once (as a reply when msg.ReplyTo is set), and the message grows by
// edits at most once per editEvery. Past 2000 characters the answer goes
// on in new messages, cut where Send would cut it.
func (d *Discord) BeginStream(ctx context.Context, msg channels.OutMessage) (channels.LiveMessage, error) {
	ch, err := nativeChat(msg.Chat)
	if err != nil {
		return nil, err
	}
	l := &liveMessage{Pacer: channels.NewPacer(msg.Text), d: d, ctx: ctx, chat: msg.Chat, channel: ch, replyTo: msg.ReplyTo}
	if strings.TrimSpace(msg.Text) != "" {
		if err := l.show(ctx, msg.Text, false); err != nil {
			return nil, err
		}
	}
	go l.pace()
	return l, nil
}

// InterruptStream marks the last message a live answer had shown before a
// crash as interrupted: it is edited to the tail of text plus
// "_(interrupted)_". Earlier messages were complete pieces and stay.
func (d *Discord) InterruptStream(ctx context.Context, chat string, ids []string, text string) error {
	ch, err := nativeChat(chat)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	tail := ""
	if pieces := render(text, MaxMessageRunes-len(interruptedNote)); len(pieces) > 0 {
		tail = pieces[len(pieces)-1]
	}
	if err := d.edit(ctx, ch, ids[len(ids)-1], strings.TrimSpace(tail+interruptedNote)); err != nil {
		return fmt.Errorf("discord: mark answer %s in %s interrupted: %w", ids[len(ids)-1], chat, err)
	}
	return nil
}

func (d *Discord) edit(ctx context.Context, ch, id, content string) error {
	_, err := d.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: id, Channel: ch, Content: &content,
		AllowedMentions: noPings(false)}, discordgo.WithContext(ctx))
	if err != nil {
		return restError("edit message", err)
	}
	return nil
}

// liveMessage is one answer growing in a channel. Update hands the newest
// text to the pacing goroutine, which shows it at most once per
// editEvery; Finish and Cancel stop that goroutine and then own the
// messages.
type liveMessage struct {
	d       *Discord
	ctx     context.Context // BeginStream's: the paced edits end with it
	chat    string
	channel string
	replyTo string

	*channels.Pacer

	mu    sync.Mutex
	ids   []string
	shown []string // what each message in ids shows
}

func (l *liveMessage) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ids...)
}

// pace runs the Pacer with this answer's edits.
func (l *liveMessage) pace() {
	l.Run(l.ctx, l.d.clock, l.d.editEvery, func(text string) {
		if err := l.show(l.ctx, text, false); err != nil && l.ctx.Err() == nil {
			l.d.log.Warn("discord: live answer edit failed; the final answer still comes", "chat", l.chat, "err", err)
		}
	})
}

func (l *liveMessage) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	return l.FinishBy(ctx, text, l.show, l.IDs)
}

func (l *liveMessage) Cancel(ctx context.Context, note string) error {
	return l.CancelBy(ctx, note, l.show, l.IDs)
}

// show makes the messages read text: pieces that changed are edited,
// new ones posted (the first as the reply); final removes messages a
// shorter text (a retried answer) no longer needs. A partial text that
// stops inside a code block shows the block closed.
func (l *liveMessage) show(ctx context.Context, text string, final bool) error {
	pieces := render(text, MaxMessageRunes-4)
	if final && len(pieces) == 0 {
		return fmt.Errorf("discord send to %s: empty message", l.chat)
	}
	if !final && len(pieces) > 0 {
		if open, _ := fenceState(pieces[len(pieces)-1]); open {
			pieces[len(pieces)-1] += "\n```"
		}
	}
	var errs []error
	for i, p := range pieces {
		l.mu.Lock()
		have := i < len(l.ids)
		var id, was string
		if have {
			id, was = l.ids[i], l.shown[i]
		}
		l.mu.Unlock()
		switch {
		case have && was == p:
		case have:
			if err := l.d.edit(ctx, l.channel, id, p); err != nil {
				errs = append(errs, err)
				continue
			}
			l.mu.Lock()
			l.shown[i] = p
			l.mu.Unlock()
		default:
			reply := ""
			if i == 0 {
				reply = l.replyTo
			}
			newID, err := l.d.post(ctx, l.channel, &discordgo.MessageSend{Content: p}, reply)
			if err != nil {
				// Later pieces would land out of order.
				return errors.Join(append(errs, err)...)
			}
			l.mu.Lock()
			l.ids, l.shown = append(l.ids, newID), append(l.shown, p)
			l.mu.Unlock()
		}
	}
	if final {
		l.mu.Lock()
		extra := append([]string(nil), l.ids[min(len(pieces), len(l.ids)):]...)
		l.ids, l.shown = l.ids[:min(len(pieces), len(l.ids))], l.shown[:min(len(pieces), len(l.shown))]
		l.mu.Unlock()
		for _, id := range extra {
			if err := l.d.s.ChannelMessageDelete(l.channel, id, discordgo.WithContext(ctx)); err != nil {
				errs = append(errs, restError("delete message", err))
			}
		}
	}
	return errors.Join(errs...)
}
