package agent

import (
	"context"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/store"
)

// Gate answers what needs no model before a message is routed (package
// access: pairing codes for unknown chats, an owner's /approve). g is the
// chat's group, nil for a chat no group registers. It reports whether it
// dealt with the message.
type Gate interface {
	Intercept(ctx context.Context, in channels.Inbound, g *groups.Group) bool
}

// gate asks Options.Gate about in.
func (a *Agent) gate(ctx context.Context, in channels.Inbound, g groups.Group, registered bool) bool {
	gt := a.settings().Gate
	if gt == nil {
		return false
	}
	if !registered {
		return gt.Intercept(ctx, in, nil)
	}
	return gt.Intercept(ctx, in, &g)
}

// ackTimeout bounds one change of the reaction.
const ackTimeout = 10 * time.Second

// failReaction replaces the ack reaction when a run fails; every network
// with reactions offers it (Telegram's bots pick from a fixed list).
const failReaction = "😢"

// ackRun puts emoji (the run's settings' AckReaction) on the message
// trig points at, where its network has reactions, and returns what ends
// it with the run: off once the answer is out (or nothing was to be
// said), a failure mark when the run failed, left alone when botd is
// stopping (the run comes again). A scheduled task's message is botd's
// own: no reaction.
func (a *Agent) ackRun(ctx context.Context, trig store.Trigger, emoji string) func(runResult) {
	nothing := func(runResult) {}
	if emoji == "" || trig.MessageID == "" {
		return nothing
	}
	ch, ok := a.chans.forChat(trig.ChatID)
	if !ok {
		return nothing
	}
	r, ok := ch.(channels.Reactor)
	if !ok {
		return nothing
	}
	m, err := a.opts.Store.Message(ctx, trig.ChatID, trig.MessageID)
	if err != nil || isTask(&m) {
		return nothing
	}
	react := func(ctx context.Context, old, emoji string) {
		// A network that does not answer must not hold the run up.
		ctx, cancel := context.WithTimeout(ctx, ackTimeout)
		defer cancel()
		if err := r.React(ctx, channels.Reaction{Chat: trig.ChatID, MessageID: trig.MessageID, Sender: m.SenderID, Old: old, Emoji: emoji}); err != nil {
			a.log.Debug("agent: reaction not set", "chat", trig.ChatID, "message", trig.MessageID, "emoji", emoji, "err", err)
		}
	}
	old := ""
	if a.queue.retrying(trig.Folder) {
		old = failReaction // a retry: the last run marked a failure
	}
	react(ctx, old, emoji)
	return func(res runResult) {
		ctx := context.WithoutCancel(ctx)
		switch res.outcome {
		case outcomeDone:
			react(ctx, emoji, "")
		case outcomeModelFailed, outcomeDeliveryFailed:
			react(ctx, emoji, failReaction)
		}
	}
}
