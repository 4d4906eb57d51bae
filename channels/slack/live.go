package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/format"
	"github.com/botd-dev/botd/internal/textclip"
)

var (
	_ channels.Streamer = (*Slack)(nil)
	_ channels.Typer    = (*Slack)(nil)
)

// render formats an answer's markdown as Slack mrkdwn cut at limit
// characters (0: no cut). format escapes &, < and > in the text, so the
// model cannot ping @channel or forge a link with Slack markup.
var render = func(md string, limit int) []string { return format.Render(md, format.Slack, limit) }

// interruptedNote ends what a live answer had shown when botd stopped
// before finishing it.
const interruptedNote = "\n\n_(interrupted)_"

// asker is who addressed the bot in a thread: Slack's streaming methods
// name the person a stream is for when it goes to a channel.
type asker struct{ user, team string }

// unavailable reports whether Slack refused a method for this app or
// workspace as a whole (an older workspace, a missing scope or feature),
// so that botd stops asking for the rest of the process.
func unavailable(err error) bool {
	var e slackapi.SlackErrorResponse
	if !errors.As(err, &e) {
		return false
	}
	switch e.Err {
	case "unknown_method", "not_allowed", "not_allowed_token_type", "missing_scope",
		"feature_not_enabled", "method_deprecated", "team_not_allowed":
		return true
	}
	return false
}

// SetTyping shows Slack's assistant status ("is typing…") in the thread
// the bot was last addressed in, where the workspace has assistant
// threads; elsewhere (a top-level message, an older workspace) Slack has
// no typing indicator for bots and nothing is shown.
func (s *Slack) SetTyping(ctx context.Context, chat string, on bool) error {
	channel, err := nativeID(chat)
	if err != nil {
		return err
	}
	thread, _ := s.typingIn.get(chat)
	if thread == "" || s.noStatus.Load() {
		return nil
	}
	status := ""
	if on {
		status = "is typing…"
	}
	err = s.api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{
		ChannelID: channel, ThreadTS: thread, Status: status})
	if unavailable(err) {
		s.noStatus.Store(true)
		s.log.Info("slack: no assistant status in this workspace, so no typing indicator", "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("slack: assistant.threads.setStatus in %s: %w", chat, err)
	}
	return nil
}

// BeginStream opens a live answer. In a thread it streams with
// chat.startStream/appendStream/stopStream where the workspace has them
// (Slack renders the markdown as it arrives); otherwise, and for the rest
// of the process once Slack said the methods are not there, it posts the
// first words and edits the message with chat.update about once a second.
func (s *Slack) BeginStream(ctx context.Context, msg channels.OutMessage) (channels.LiveMessage, error) {
	channel, err := nativeID(msg.Chat)
	if err != nil {
		return nil, err
	}
	l := &liveMessage{Pacer: channels.NewPacer(msg.Text), s: s, ctx: ctx, chat: msg.Chat, channel: channel, thread: msg.ThreadID}
	if msg.ThreadID != "" && !s.noStream.Load() {
		l.startStream(ctx, msg.Text)
	}
	if l.streamTS == "" {
		if err := l.post(ctx, msg.Text, false); err != nil {
			return nil, err
		}
	}
	go l.pace()
	return l, nil
}

// InterruptStream marks the last message a live answer had shown before
// a crash as interrupted: it closes the stream if it was one and edits the
// message to the tail of text (markdown, what the answer had shown) plus
// "_(interrupted)_". Earlier messages were complete pieces and stay.
func (s *Slack) InterruptStream(ctx context.Context, chat string, ids []string, text string) error {
	channel, err := nativeID(chat)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	pieces := render(text, TextLimit-len(interruptedNote))
	last := ids[len(ids)-1]
	tail := ""
	if len(pieces) > 0 {
		// The pieces now may not fall where they fell when shown; the last
		// message gets the last piece, the others keep their text.
		tail = pieces[len(pieces)-1]
	}
	var stopErr error
	if _, _, err := s.api.StopStreamContext(ctx, channel, last); err != nil && !unavailable(err) {
		// Not a stream, or one Slack already closed: chat.update decides.
		stopErr = err
	}
	if _, _, _, err := s.api.UpdateMessageContext(ctx, channel, last,
		slackapi.MsgOptionText(strings.TrimSpace(tail+interruptedNote), false)); err != nil {
		return fmt.Errorf("slack: mark answer %s in %s interrupted: %w", last, chat, errors.Join(err, stopErr))
	}
	return nil
}

// liveMessage is one answer growing in a thread or chat. Update hands the
// newest text to the pacing goroutine, which shows it at most once per
// s.editEvery; Finish and Cancel stop that goroutine and then own the
// message state.
type liveMessage struct {
	s       *Slack
	ctx     context.Context // BeginStream's: the paced edits end with it
	chat    string
	channel string
	thread  string

	*channels.Pacer

	mu  sync.Mutex
	ids []string

	// The stream (chat.startStream) shows text[:len(streamed)]; the
	// posted messages show text[base:], cut by render.
	streamTS  string
	streaming bool // streamTS still takes appends
	streamed  string
	base      int
	posts     []string
	shown     []string
}

func (l *liveMessage) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ids...)
}

// pace runs the Pacer with this answer's edits.
func (l *liveMessage) pace() {
	l.Run(l.ctx, l.s.clock, l.s.editEvery, func(text string) {
		if err := l.show(l.ctx, text, false); err != nil && l.ctx.Err() == nil {
			l.s.log.Warn("slack: live answer edit failed; the final answer still comes", "chat", l.chat, "err", err)
		}
	})
}

func (l *liveMessage) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	return l.FinishBy(ctx, text, l.show, l.IDs)
}

func (l *liveMessage) Cancel(ctx context.Context, note string) error {
	return l.CancelBy(ctx, note, l.show, l.IDs)
}

// show makes the messages read text: appended to the stream while text
// extends what was streamed, then in posted messages. final closes the
// stream and removes posted messages the text no longer needs (a retry
// that came out shorter).
func (l *liveMessage) show(ctx context.Context, text string, final bool) error {
	if l.streaming && l.appendStream(ctx, text, final) {
		return nil
	}
	if l.streamTS != "" && !l.streaming && !strings.HasPrefix(text, l.streamed) {
		// A retried or fallback answer replaces what was streamed: the
		// closed stream is edited like a posted message, at Finish only,
		// so the chat never sees the answer flip back and forth.
		if !final {
			return nil
		}
		l.posts, l.shown = append([]string{l.streamTS}, l.posts...), append([]string{""}, l.shown...)
		l.streamTS, l.streamed, l.base = "", "", 0
	}
	return l.post(ctx, text, final)
}

// streamPrefix is how much of text one streamed message takes: all of
// it up to TextLimit, else up to a break before it, so the rest continues
// in a new message at a place a reader expects.
func streamPrefix(text string) (prefix string, full bool) {
	if utf8.RuneCountInString(text) <= TextLimit {
		return text, false
	}
	head, _ := textclip.Head(text, TextLimit)
	if !strings.HasPrefix(text, head) || head == "" {
		head, _ = textclip.Prefix(text, TextLimit)
	}
	return head, true
}

func (l *liveMessage) startStream(ctx context.Context, text string) {
	prefix, _ := streamPrefix(text)
	opts := []slackapi.MsgOption{slackapi.MsgOptionTS(l.thread)}
	if prefix != "" {
		opts = append(opts, slackapi.MsgOptionMarkdownText(slackutilsx.EscapeMessage(prefix)))
	}
	if who, ok := l.s.askers.get(l.channel + "/" + l.thread); ok {
		opts = append(opts, slackapi.MsgOptionRecipientUserID(who.user), slackapi.MsgOptionRecipientTeamID(who.team))
	}
	_, ts, err := l.s.api.StartStreamContext(ctx, l.channel, opts...)
	switch {
	case unavailable(err):
		l.s.noStream.Store(true)
		l.s.log.Info("slack: no chat streaming in this workspace; live answers edit a message instead", "err", err)
		return
	case err != nil:
		l.s.log.Warn("slack: chat.startStream failed; this answer edits a message instead", "chat", l.chat, "err", err)
		return
	}
	l.streamTS, l.streaming, l.streamed = ts, true, prefix
	l.setIDs()
}

// appendStream appends what text adds to the stream and reports whether
// the stream shows all there is to show now; otherwise show goes on with
// posted messages for text[l.base:]. A text that no longer extends what
// was streamed waits for Finish, which closes the stream and edits it.
func (l *liveMessage) appendStream(ctx context.Context, text string, final bool) bool {
	if !strings.HasPrefix(text, l.streamed) {
		if final {
			l.stopStream(ctx)
		}
		return !final
	}
	prefix, full := streamPrefix(text)
	if len(prefix) < len(l.streamed) {
		// A cut that falls earlier now than what was streamed before:
		// the streamed text stands.
		prefix = l.streamed
	}
	if delta := prefix[len(l.streamed):]; delta != "" {
		_, _, err := l.s.api.AppendStreamContext(ctx, l.channel, l.streamTS,
			slackapi.MsgOptionMarkdownText(slackutilsx.EscapeMessage(delta)))
		if err != nil {
			// A broken stream takes no more: the rest of the answer goes
			// on in posted messages after what it showed.
			l.s.log.Warn("slack: chat.appendStream failed; the answer goes on in a new message", "chat", l.chat, "err", err)
			l.stopStream(ctx)
			l.base = len(l.streamed)
			return false
		}
		l.streamed = prefix
	}
	if !full && !final {
		return true
	}
	l.stopStream(ctx)
	l.base = len(l.streamed)
	return !full
}

// stopStream closes the stream; a failure leaves the text Slack has
// (Slack ends an idle stream itself), so it is only logged.
func (l *liveMessage) stopStream(ctx context.Context) {
	l.streaming = false
	if _, _, err := l.s.api.StopStreamContext(ctx, l.channel, l.streamTS); err != nil {
		l.s.log.Warn("slack: chat.stopStream failed", "chat", l.chat, "err", err)
	}
}

// post makes the posted messages read text[l.base:]: each piece edits the
// message that shows it when it changed, a new piece is posted in the
// thread, and on final the messages past the last piece are deleted.
func (l *liveMessage) post(ctx context.Context, text string, final bool) error {
	pieces := render(text[min(l.base, len(text)):], TextLimit)
	for i, p := range pieces {
		if i < len(l.posts) {
			if l.shown[i] == p {
				continue
			}
			if _, _, _, err := l.s.api.UpdateMessageContext(ctx, l.channel, l.posts[i], slackapi.MsgOptionText(p, false)); err != nil {
				return fmt.Errorf("slack: chat.update in %s: %w", l.chat, err)
			}
			l.shown[i] = p
			continue
		}
		opts := []slackapi.MsgOption{slackapi.MsgOptionText(p, false)}
		if l.thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(l.thread))
		}
		_, ts, err := l.s.api.PostMessageContext(ctx, l.channel, opts...)
		if err != nil {
			return fmt.Errorf("slack: chat.postMessage to %s: %w", l.chat, err)
		}
		l.posts, l.shown = append(l.posts, ts), append(l.shown, p)
		l.setIDs()
	}
	if final && len(l.posts) > len(pieces) {
		for _, ts := range l.posts[len(pieces):] {
			if _, _, err := l.s.api.DeleteMessageContext(ctx, l.channel, ts); err != nil {
				return fmt.Errorf("slack: chat.delete in %s: %w", l.chat, err)
			}
		}
		l.posts, l.shown = l.posts[:len(pieces)], l.shown[:len(pieces)]
		l.setIDs()
	}
	return nil
}

func (l *liveMessage) setIDs() {
	var ids []string
	if l.streamTS != "" {
		ids = append(ids, l.streamTS)
	}
	ids = append(ids, l.posts...)
	l.mu.Lock()
	l.ids = ids
	l.mu.Unlock()
}
