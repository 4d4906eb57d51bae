package channels

import "context"

// Streamer is a channel that shows an answer while the model writes it:
// one live message (or a few, past the network's length limit) that grows
// by edits, drafts or appended text, throttled by the channel to what the
// network allows. The agent falls back to one final Send on a channel
// without it.
type Streamer interface {
	// BeginStream opens a live answer in msg.Chat (ThreadID and ReplyTo
	// as for Send) showing msg.Text, the first words (markdown). A
	// channel may show nothing yet (a WhatsApp answer goes out whole at
	// Finish) and still return a LiveMessage.
	BeginStream(ctx context.Context, msg OutMessage) (LiveMessage, error)
	// InterruptStream marks what a live answer begun before a crash had
	// shown as interrupted (text is what it showed, ids its messages),
	// where the network can edit; the answer itself then comes again
	// through the outbox.
	InterruptStream(ctx context.Context, chat string, ids []string, text string) error
}

// LiveMessage is one answer being shown while it is written. Text is
// always the whole answer so far, in markdown; each channel formats it
// (see package format) and never shows half a formatting entity.
type LiveMessage interface {
	// Update shows the answer so far. It returns at once: the channel
	// keeps only the newest text and sends it at its own pace (about one
	// edit a second on Telegram and Slack); errors are the channel's to
	// log, and Finish still delivers.
	Update(text string)
	// IDs are the network ids of the messages shown so far (for the
	// outbox, so a restart can mark them interrupted).
	IDs() []string
	// Finish shows the complete answer (it may replace text shown before:
	// a retried or fallback model's answer edits what is there, never
	// adds a second copy) and reports every message id it now spans.
	Finish(ctx context.Context, text string) (Delivery, error)
	// Cancel ends the live answer without one (the run was stopped or
	// failed): what was shown is edited to say so, or removed.
	Cancel(ctx context.Context, note string) error
}

// WholeAtFinish is a Streamer whose live answers show nothing before
// Finish (a WhatsApp answer goes out whole): a note the chat should see
// while a run works goes out as a message of its own there.
type WholeAtFinish interface {
	Streamer
	WholeAtFinish() bool
}
