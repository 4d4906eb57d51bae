package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/store"
)

// A scheduled task's run reaches the agent as a message in its group's
// chat (DeliverTask), so it is queued, answered and delivered like any
// other. Two rules make it a task rather than a chat message:
//
//   - a task message runs alone: a run's new messages stop before a task
//     message, and a task message is a run of its own, so the model
//     answers the task, not whatever was said last, and what people asked
//     meanwhile gets its own run;
//   - an isolated task's run sees the prompt alone: no memory, no earlier
//     messages, no summary.
//
// The mark is the sender id, which no network produces:
// "botd:task[:isolated][:batch]".
const (
	taskSender         = "botd:task"
	taskSenderIsolated = "botd:task:isolated"
	batchSuffix        = ":batch"
)

// DeliverTask stores a due task as an addressed message of its group's
// chat and queues a run, exactly as Deliver does for what channels hear.
// Delivering the same run again changes nothing the agent already did.
func (a *Agent) DeliverTask(ctx context.Context, t scheduler.Run) error {
	sender := taskSender
	if t.Isolated {
		sender = taskSenderIsolated
	}
	if t.Batch {
		sender += batchSuffix
	}
	text := fmt.Sprintf("Scheduled task #%d (%s) is due. Carry it out now; your reply goes to the chat:\n%s", t.TaskID, t.Schedule, t.Prompt)
	// The task does not say what kind of chat it runs in; keep what the
	// network said (a main group may be a DM), a group when never heard.
	isGroup, known, err := a.opts.Store.ChatIsGroup(ctx, t.Chat)
	if err != nil {
		return err
	}
	if !known {
		isGroup = true
	}
	return a.Deliver(ctx, channels.Inbound{ChatID: t.Chat, IsGroup: isGroup, ID: t.MessageID, SenderID: sender,
		SenderName: fmt.Sprintf("scheduled task %d", t.TaskID), Text: text, Time: t.Due, Mentioned: true})
}

func isTask(m *store.Message) bool { return strings.HasPrefix(m.SenderID, taskSender) }

// taskAlone cuts the new messages of a run so that a task message runs
// alone: what people wrote before the first one gets a run first, then
// the task gets its own. The assistant's own messages (its answers are
// stored after the cursor) do not need a run: they come along as context.
func taskAlone(msgs []store.Message) []store.Message {
	for i := range msgs {
		if !isTask(&msgs[i]) {
			continue
		}
		for j := range msgs[:i] {
			if !msgs[j].FromMe && !msgs[j].IsBot {
				return msgs[:i]
			}
		}
		return msgs[:i+1]
	}
	return msgs
}

// isolatedRun reports a run of an isolated task (after taskAlone: the
// task last, only the assistant's own messages before it), which sees
// nothing but its prompt.
func isolatedRun(msgs []store.Message) bool {
	return len(msgs) > 0 && strings.TrimSuffix(msgs[len(msgs)-1].SenderID, batchSuffix) == taskSenderIsolated
}

// batchRun reports a run of a task marked batch: the task alone (after
// taskAlone), which may wait for the provider's batch API.
func batchRun(msgs []store.Message) bool {
	return len(msgs) > 0 && isTask(&msgs[len(msgs)-1]) && strings.HasSuffix(msgs[len(msgs)-1].SenderID, batchSuffix)
}
