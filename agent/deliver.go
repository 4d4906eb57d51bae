package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// captionMax is the longest text sent as a file's caption instead of a
// separate message; channels cap captions (Telegram at 1024 characters).
const captionMax = 900

// outbox delivers answers: each is written down before it is sent (the
// run queues it), sent part by part with its progress recorded, and
// marked sent together with the move of the group's cursor, so a crash
// neither loses an answer nor sends it twice. A live answer the item
// finishes (lives) and a voice note (speak) hook in here.
type outbox struct {
	db        outboxdb.DB  // its queries
	st        *store.Store // the assistant's own messages
	chans     *channelSet
	book      *groupBook
	lives     *lives
	groupsDir string
	assistant string // the name the assistant's own messages are stored under
	maxTries  int
	now       func() time.Time
	log       *slog.Logger
	// speak makes the voice note of an answer tagged [[audio_as_voice]]
	// (a path in the group folder and its type); nil: no speech.
	speak func(ctx context.Context, folder, text string) (path, mime string, err error)
}

// speakWith is outbox.speak through botd's own speak tool of the group.
func speakWith(media func(group string) tools.Caller) func(ctx context.Context, folder, text string) (string, string, error) {
	return func(ctx context.Context, folder, text string) (string, string, error) {
		var res tools.GeneratedResult
		if err := media(folder).Call(ctx, tools.Speak, tools.SpeakArgs{Text: text}, &res); err != nil {
			return "", "", err
		}
		return res.Path, res.MIME, nil
	}
}

// storeFailure is the result of a run the database failed.
func storeFailure(ctx context.Context, err error) runResult {
	// Fenced: this instance lost the lease; its successor answers, and
	// the daemon is stopping this one.
	if ctx.Err() != nil || errors.Is(err, store.ErrFenced) {
		return runResult{outcome: outcomeStopped, err: err}
	}
	// The database is local; treat a failure like a delivery failure:
	// retried with backoff, no message to a chat we may not reach anyway.
	return runResult{outcome: outcomeDeliveryFailed, err: err}
}

// drain delivers the group's unsent answers, oldest first. ok is
// false when the run must stop here (a delivery failed, or shutdown).
func (o *outbox) drain(ctx context.Context, folder string) (runResult, bool) {
	items, err := o.db.Pending(ctx, folder)
	if err != nil {
		return storeFailure(ctx, err), false
	}
	for i := range items {
		it := &items[i]
		if err := o.deliver(ctx, it); err != nil {
			if ctx.Err() != nil || errors.Is(err, store.ErrFenced) {
				return runResult{outcome: outcomeStopped, err: err}, false
			}
			return runResult{outcome: outcomeDeliveryFailed, err: err}, false
		}
	}
	return runResult{}, true
}

// deliver sends one outbox item, resuming after the parts already sent,
// then marks it sent and advances the cursor in one transaction. After
// MaxTries failed attempts the item is abandoned, leaving the cursor for
// the next trigger to answer afresh.
//
// The claim before sending is fenced: an instance that lost the lease
// (store.ErrFenced) sends nothing and counts no failed attempt, and an
// item its successor finished meanwhile is skipped.
func (o *outbox) deliver(ctx context.Context, it *outboxdb.Item) error {
	if err := o.db.Claim(ctx, it.ID); err != nil {
		if errors.Is(err, outboxdb.ErrDone) {
			return nil
		}
		return fmt.Errorf("deliver answer %d: %w", it.ID, err)
	}
	err := o.send(ctx, it)
	if err == nil {
		// Written down even when shutdown began meanwhile: what the network
		// accepted must never be sent again after a restart.
		if err := o.db.Complete(context.WithoutCancel(ctx), it.ID); err != nil {
			return fmt.Errorf("deliver answer %d: %w", it.ID, err)
		}
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, store.ErrFenced) {
		return err
	}
	n, ferr := o.db.AttemptFailed(ctx, it.ID, err.Error())
	if ferr != nil {
		o.log.Warn("agent: cannot record failed delivery", "outbox", it.ID, "err", ferr)
	}
	if n >= o.maxTries {
		o.log.Error("agent: giving up on an answer that cannot be delivered", "group", it.Folder, "outbox", it.ID, "attempts", n, "err", err)
		if held, ok := o.lives.heldFor(it.ID); ok {
			if cerr := held.lm.Cancel(ctx, msgLiveFailed); cerr != nil {
				o.log.Warn("agent: live answer not cancelled", "outbox", it.ID, "err", cerr)
			}
			o.lives.done(ctx, it.ID, held)
		}
		if err := o.db.Abandon(ctx, it.ID, err.Error()); err != nil {
			return fmt.Errorf("abandon answer %d: %w", it.ID, err)
		}
		return nil
	}
	return err
}

// send delivers the parts of it after it.PartsDone: the text, then each
// file. A single file with a short text goes as one captioned file. The
// text of an answer that was shown while written finishes that live
// message instead (while this process holds it; after a restart the live
// message was marked interrupted and the text is sent anew).
func (o *outbox) send(ctx context.Context, it *outboxdb.Item) error {
	ch, ok := o.chans.forChat(it.ChatID)
	if !ok {
		return fmt.Errorf("deliver to %s: no such channel is running", it.ChatID)
	}
	ms, canMedia := ch.(channels.MediaSender)
	g, gok := o.book.byFolder(it.Folder)
	var ws groups.Workspace
	if gok {
		ws = groups.Workspace{Root: filepath.Join(o.groupsDir, g.Folder)}
	}
	var out mediaOut
	if canMedia && gok {
		out = mediaOut{ws: ws, ms: ms}
	}

	text := it.Text
	files := it.Media
	if len(files) > 0 && out.ms == nil {
		note := "(I could not attach files on this channel.)"
		text = strings.TrimSpace(text + "\n\n" + note)
		files = nil
	}
	held, live := o.lives.heldFor(it.ID)
	caption := ""
	if len(files) == 1 && text != "" && len([]rune(text)) <= captionMax && !it.Voice && !live {
		caption, text = text, ""
	}

	// Part numbering is fixed by the stored item so a resumed delivery
	// skips exactly what went out before the crash.
	part := 0
	if text != "" {
		part++
		if it.PartsDone < part {
			var d channels.Delivery
			var err error
			if live {
				d, err = held.lm.Finish(ctx, text)
			} else if sent, ok := o.sendVoice(ctx, it, out, text); ok {
				d, err = sent, nil
			} else {
				d, err = ch.Send(ctx, outMessage(it.ChatID, text, it.ThreadID, it.ReplyTo))
			}
			if err != nil {
				return fmt.Errorf("send answer to %s: %w", it.ChatID, err)
			}
			// Sent: the bookkeeping outlives a shutdown that began meanwhile.
			if live {
				o.lives.done(ctx, it.ID, held)
			}
			o.recordOwn(context.WithoutCancel(ctx), it, d, text)
			o.progress(context.WithoutCancel(ctx), it, part)
		}
	}
	for _, rel := range files {
		part++
		if it.PartsDone >= part {
			continue
		}
		f, _, err := ws.Open(rel)
		if err != nil {
			o.log.Warn("agent: answer file gone before it was sent", "group", it.Folder, "path", rel, "err", err)
			o.progress(ctx, it, part)
			continue
		}
		mime, err := mediaregistry.FileMIME(f)
		if err != nil {
			mime = "application/octet-stream"
		}
		m := channels.OutMedia{Chat: it.ChatID, File: f, FileName: filepath.Base(f.Name()), MIME: mime, Caption: caption, ThreadID: it.ThreadID,
			Voice: it.Voice && strings.HasPrefix(mime, "audio/")}
		d, err := ms.SendMedia(ctx, m)
		f.Close()
		if err != nil {
			return fmt.Errorf("send file to %s: %w", it.ChatID, err)
		}
		if caption != "" {
			o.recordOwn(context.WithoutCancel(ctx), it, d, caption)
		}
		o.progress(context.WithoutCancel(ctx), it, part)
	}
	return nil
}

// recordOwn stores a sent answer as the assistant's own message, so the
// next run sees what it last said (most networks do not echo a bot's own
// messages). Keyed by the network's message id, an echo that does arrive
// updates the same row instead of doubling it.
func (o *outbox) recordOwn(ctx context.Context, it *outboxdb.Item, d channels.Delivery, text string) {
	id := fmt.Sprintf("botd-out-%d", it.ID)
	if len(d.MessageIDs) > 0 && d.MessageIDs[0] != "" {
		id = d.MessageIDs[0]
	}
	_, err := o.st.PutMessage(ctx, store.Message{ChatID: it.ChatID, ID: id, SenderName: o.assistant,
		Text: text, Time: o.now(), FromMe: true, ThreadID: it.ThreadID})
	if err != nil {
		o.log.Warn("agent: sent answer not recorded", "group", it.Folder, "err", err)
	}
}

func (o *outbox) progress(ctx context.Context, it *outboxdb.Item, part int) {
	it.PartsDone = part
	if err := o.db.Progress(ctx, it.ID, part); err != nil {
		o.log.Warn("agent: cannot record delivery progress", "outbox", it.ID, "err", err)
	}
}

// mediaOut is where an item's files go: the group folder they are read
// from and the channel that sends them (nil ms: files cannot be sent).
type mediaOut struct {
	ws groups.Workspace
	ms channels.MediaSender
}

// sendVoice speaks an answer tagged [[audio_as_voice]] and sends it as a
// voice note. ok is false when it did not go out that way (no voice
// asked for, speech not configured, the provider failed or refused, the
// channel cannot send files): the caller sends the text instead, so an
// answer is never lost over its voice. The speech is made through the
// same speak the tool uses (stored, registered, placed) and only sent
// here, so the outbox keeps its one-part-at-a-time bookkeeping.
func (o *outbox) sendVoice(ctx context.Context, it *outboxdb.Item, to mediaOut, text string) (channels.Delivery, bool) {
	if !it.Voice || to.ms == nil || o.speak == nil {
		return channels.Delivery{}, false
	}
	path, mime, err := o.speak(ctx, it.Folder, text)
	if err != nil {
		o.log.Warn("agent: answer not spoken; sending it as text", "group", it.Folder, "outbox", it.ID, "err", err)
		return channels.Delivery{}, false
	}
	f, _, err := to.ws.Open(path)
	if err != nil {
		o.log.Warn("agent: spoken answer cannot be opened; sending it as text", "group", it.Folder, "path", path, "err", err)
		return channels.Delivery{}, false
	}
	defer f.Close()
	d, err := to.ms.SendMedia(ctx, channels.OutMedia{Chat: it.ChatID, File: f, FileName: filepath.Base(path), MIME: mime,
		ThreadID: it.ThreadID, Voice: true})
	if err != nil {
		o.log.Warn("agent: voice note not sent; sending the answer as text", "group", it.Folder, "outbox", it.ID, "err", err)
		return channels.Delivery{}, false
	}
	return d, true
}
