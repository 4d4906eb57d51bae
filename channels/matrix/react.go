package matrix

import (
	"context"
	"fmt"
	"sync"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
)

var _ channels.Reactor = (*Matrix)(nil)

// maxReactionEvents bounds what the channel remembers of its reactions:
// one per run in flight is what is needed.
const maxReactionEvents = 1024

// reactionEvents maps a reaction the bot put (room, message, key) to its
// event, which is what taking it off redacts.
type reactionEvents struct {
	mu sync.Mutex
	m  map[[3]string]string
}

func (r *reactionEvents) put(k [3]string, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxReactionEvents {
		r.m = map[[3]string]string{} // older ones can no longer be taken off: they stay shown
	}
	r.m[k] = ev
}

func (r *reactionEvents) take(k [3]string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev, ok := r.m[k]
	delete(r.m, k)
	return ev, ok
}

// React implements channels.Reactor: an m.reaction annotating the message
// with the emoji as its key (sealed like any event in an encrypted room),
// and a redaction of the bot's earlier reaction old. A reaction put
// before a restart is not known here and stays.
func (m *Matrix) React(ctx context.Context, r channels.Reaction) error {
	room, err := nativeRoom(r.Chat)
	if err != nil {
		return err
	}
	if r.Old != "" {
		if ev, ok := m.reactions.take([3]string{r.Chat, r.MessageID, r.Old}); ok {
			if _, err := m.cli.RedactEvent(ctx, room, id.EventID(ev), mautrix.ReqRedact{}); err != nil {
				return fmt.Errorf("matrix: redacting the reaction in %s: %s", r.Chat, m.redact(err.Error()))
			}
		}
	}
	if r.Emoji == "" {
		return nil
	}
	ev, err := m.sendEvent(ctx, room, event.EventReaction, &event.ReactionEventContent{RelatesTo: event.RelatesTo{
		Type: event.RelAnnotation, EventID: id.EventID(r.MessageID), Key: r.Emoji}})
	if err != nil {
		return err
	}
	m.reactions.put([3]string{r.Chat, r.MessageID, r.Emoji}, ev)
	return nil
}
