package agent

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/store"
)

// groupBook is the configured groups under a lock: groups.Set is a plain
// map that Migrated changes while channels deliver concurrently. Lookups
// return copies, so a run never reads aliases while an alias is added.
type groupBook struct {
	mu  sync.RWMutex
	set *groups.Set
}

func (b *groupBook) byFolder(folder string) (groups.Group, bool) {
	return b.lookup((*groups.Set).ByFolder, folder)
}

func (b *groupBook) byChat(chat string) (groups.Group, bool) {
	return b.lookup((*groups.Set).ByChat, chat)
}

// lookup runs find for key under the lock and copies what it found.
func (b *groupBook) lookup(find func(*groups.Set, string) (*groups.Group, bool), key string) (groups.Group, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	g, ok := find(b.set, key)
	if !ok {
		return groups.Group{}, false
	}
	return copyGroup(g), true
}

func (b *groupBook) all() []groups.Group {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []groups.Group
	for _, g := range b.set.All() {
		out = append(out, copyGroup(g))
	}
	return out
}

// disabled reports a group whose folder was refused at start.
func (b *groupBook) disabled(folder string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, off := b.set.Disabled(folder)
	return off
}

// addAlias gives the group of chat from the alias to; ok is false when
// from is no group's.
func (b *groupBook) addAlias(from, to string) (folder string, ok bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g, ok := b.set.ByChat(from)
	if !ok {
		return "", false, nil
	}
	return g.Folder, true, b.set.AddAlias(g.Folder, to)
}

// copyGroup is a copy of g that shares no slice with it.
func copyGroup(g *groups.Group) groups.Group {
	c := *g
	c.Aliases = slices.Clone(g.Aliases)
	return c
}

// channelSet is the running channels by name; an answer goes to the one
// its chat id's prefix names. Channels are added before Start only.
type channelSet struct {
	m   map[string]channels.Channel
	clk clock.Clock
	log *slog.Logger
}

func (c *channelSet) forChat(chat string) (channels.Channel, bool) {
	ch, ok := c.m[store.Channel(chat)]
	return ch, ok && ch != nil
}

func outMessage(chat, text, thread, replyTo string) channels.OutMessage {
	return channels.OutMessage{Chat: chat, Text: text, ThreadID: thread, ReplyTo: replyTo}
}

// say sends text to chat (in thread) outside the outbox: what botd says
// about itself (a failure, a spent budget), which answers nothing.
func (c *channelSet) say(ctx context.Context, chat, thread, text string) error {
	ch, ok := c.forChat(chat)
	if !ok {
		return nil
	}
	_, err := ch.Send(ctx, outMessage(chat, text, thread, ""))
	return err
}

// notifyFailure tells the chat once per failure streak that the model is
// unreachable. It bypasses the outbox and the cursor: it answers nothing.
func (c *channelSet) notifyFailure(ctx context.Context, folder string, res runResult) {
	if res.chat == "" {
		return
	}
	if err := c.say(ctx, res.chat, res.thread, msgModelFailed); err != nil {
		c.log.Warn("agent: could not tell the chat about the failure", "group", folder, "err", err)
	}
}

func (c *channelSet) typing(ctx context.Context, chat string, on bool) {
	ch, ok := c.forChat(chat)
	if !ok {
		return
	}
	if t, ok := ch.(interface {
		SetTyping(context.Context, string, bool) error
	}); ok {
		if err := t.SetTyping(ctx, chat, on); err != nil {
			c.log.Debug("agent: typing indicator failed", "chat", chat, "err", err)
		}
	}
}

// keepTyping shows "typing…" in chat and renews it every typingEvery
// until stop.
func (c *channelSet) keepTyping(ctx context.Context, chat string) (stop func()) {
	c.typing(ctx, chat, true)
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for clock.Wait(tctx, c.clk, typingEvery, nil) {
			c.typing(tctx, chat, true)
		}
	}()
	return func() { cancel(); <-done }
}

// typingEvery renews "typing…" before it lapses: Telegram shows it for
// five seconds.
const typingEvery = 4 * time.Second
