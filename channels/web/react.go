package web

import (
	"context"
	"fmt"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Reactor = (*Web)(nil)

// reaction is the assistant's reaction on a room message as a page hears
// it; Emoji "" takes it off.
type reaction struct {
	ID    string `json:"id"`
	Emoji string `json:"emoji"`
}

// React implements channels.Reactor: every open page of the room shows
// the emoji beside the message (until taken off). It is not kept: a page
// opened later does not show it.
func (w *Web) React(ctx context.Context, r channels.Reaction) error {
	rm, err := w.room(r.Chat)
	if err != nil {
		return err
	}
	if err := rm.mayShow(ctx); err != nil {
		return fmt.Errorf("web: %w", err)
	}
	rm.publish(event{kind: "reaction", reaction: reaction{ID: r.MessageID, Emoji: r.Emoji}})
	return nil
}
