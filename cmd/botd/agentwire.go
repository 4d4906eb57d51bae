package main

import (
	"context"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

// startAgent sets up the sink the channels deliver to. Until the agent
// loop lands, messages are stored and nothing answers.
func (d *daemon) startAgent(ctx context.Context) error {
	d.sink = &storeSink{d: d}
	return nil
}

func (d *daemon) waitAgent() {}

type storeSink struct{ d *daemon }

func (s *storeSink) Registered(chat string) bool { _, ok := s.d.groups.ByChat(chat); return ok }

func (s *storeSink) Deliver(ctx context.Context, in channels.Inbound) error {
	if err := s.d.store.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: in.Time}); err != nil {
		return err
	}
	_, err := s.d.store.PutMessage(ctx, store.Message{ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID, SenderName: in.SenderName,
		Text: in.Text, Time: in.Time, FromMe: in.FromMe, IsBot: in.IsBot, ReplyTo: in.ReplyTo, ThreadID: in.ThreadID})
	return err
}

func (s *storeSink) Migrated(ctx context.Context, from, to string) {
	if g, ok := s.d.groups.ByChat(from); ok {
		s.d.groups.AddAlias(g.Folder, to)
	}
}
