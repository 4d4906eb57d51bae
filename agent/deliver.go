package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// captionMax is the longest text sent as a file's caption instead of a
// separate message; channels cap captions (Telegram at 1024 characters).
const captionMax = 900

func (a *Agent) channelFor(chat string) (channels.Channel, bool) {
	ch, ok := a.opts.Channels[store.Channel(chat)]
	return ch, ok && ch != nil
}

func outMessage(chat, text, thread, replyTo string) channels.OutMessage {
	return channels.OutMessage{Chat: chat, Text: text, ThreadID: thread, ReplyTo: replyTo}
}

// drainOutbox delivers the group's unsent answers, oldest first. ok is
// false when the run must stop here (a delivery failed, or shutdown).
func (a *Agent) drainOutbox(ctx context.Context, folder string) (runResult, bool) {
	items, err := a.opts.Store.PendingOutbox(ctx, folder)
	if err != nil {
		return a.storeFailure(ctx, err), false
	}
	for i := range items {
		it := &items[i]
		if err := a.deliver(ctx, it); err != nil {
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
func (a *Agent) deliver(ctx context.Context, it *store.OutboxItem) error {
	if err := a.opts.Store.ClaimOutbox(ctx, it.ID); err != nil {
		if errors.Is(err, store.ErrOutboxDone) {
			return nil
		}
		return fmt.Errorf("deliver answer %d: %w", it.ID, err)
	}
	err := a.send(ctx, it)
	if err == nil {
		// Written down even when shutdown began meanwhile: what the network
		// accepted must never be sent again after a restart.
		if err := a.opts.Store.CompleteOutbox(context.WithoutCancel(ctx), it.ID); err != nil {
			return fmt.Errorf("deliver answer %d: %w", it.ID, err)
		}
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, store.ErrFenced) {
		return err
	}
	n, ferr := a.opts.Store.OutboxAttemptFailed(ctx, it.ID, err.Error())
	if ferr != nil {
		a.log.Warn("agent: cannot record failed delivery", "outbox", it.ID, "err", ferr)
	}
	if n >= a.opts.MaxTries {
		a.log.Error("agent: giving up on an answer that cannot be delivered", "group", it.Folder, "outbox", it.ID, "attempts", n, "err", err)
		if held, ok := a.heldLive(it.ID); ok {
			a.dropLive(it.ID)
			if cerr := held.lm.Cancel(ctx, msgLiveFailed); cerr != nil {
				a.log.Warn("agent: live answer not cancelled", "outbox", it.ID, "err", cerr)
			}
			a.closeLive(ctx, held.row)
		}
		if err := a.opts.Store.AbandonOutbox(ctx, it.ID, err.Error()); err != nil {
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
func (a *Agent) send(ctx context.Context, it *store.OutboxItem) error {
	ch, ok := a.channelFor(it.ChatID)
	if !ok {
		return fmt.Errorf("deliver to %s: no such channel is running", it.ChatID)
	}
	ms, canMedia := ch.(channels.MediaSender)
	g, gok := a.group(it.Folder)
	var ws groups.Workspace
	if gok {
		ws = groups.Workspace{Root: filepath.Join(a.opts.GroupsDir, g.Folder)}
	}

	text := it.Text
	files := it.Media
	if len(files) > 0 && (!canMedia || !gok) {
		note := "(I could not attach files on this channel.)"
		text = strings.TrimSpace(text + "\n\n" + note)
		files = nil
	}
	held, live := a.heldLive(it.ID)
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
			} else if sent, ok := a.sendVoice(ctx, it, ws, ms, canMedia && gok, text); ok {
				d, err = sent, nil
			} else {
				d, err = ch.Send(ctx, outMessage(it.ChatID, text, it.ThreadID, it.ReplyTo))
			}
			if err != nil {
				return fmt.Errorf("send answer to %s: %w", it.ChatID, err)
			}
			// Sent: the bookkeeping outlives a shutdown that began meanwhile.
			if live {
				a.dropLive(it.ID)
				a.closeLive(ctx, held.row)
			}
			a.recordOwn(context.WithoutCancel(ctx), it, d, text)
			a.progress(context.WithoutCancel(ctx), it, part)
		}
	}
	for _, rel := range files {
		part++
		if it.PartsDone >= part {
			continue
		}
		f, _, err := ws.Open(rel)
		if err != nil {
			a.log.Warn("agent: answer file gone before it was sent", "group", it.Folder, "path", rel, "err", err)
			a.progress(ctx, it, part)
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
			a.recordOwn(context.WithoutCancel(ctx), it, d, caption)
		}
		a.progress(context.WithoutCancel(ctx), it, part)
	}
	return nil
}

// recordOwn stores a sent answer as the assistant's own message, so the
// next run sees what it last said (most networks do not echo a bot's own
// messages). Keyed by the network's message id, an echo that does arrive
// updates the same row instead of doubling it.
func (a *Agent) recordOwn(ctx context.Context, it *store.OutboxItem, d channels.Delivery, text string) {
	id := fmt.Sprintf("botd-out-%d", it.ID)
	if len(d.MessageIDs) > 0 && d.MessageIDs[0] != "" {
		id = d.MessageIDs[0]
	}
	_, err := a.opts.Store.PutMessage(ctx, store.Message{ChatID: it.ChatID, ID: id, SenderName: a.opts.AssistantName,
		Text: text, Time: a.now(), FromMe: true, ThreadID: it.ThreadID})
	if err != nil {
		a.log.Warn("agent: sent answer not recorded", "group", it.Folder, "err", err)
	}
}

func (a *Agent) progress(ctx context.Context, it *store.OutboxItem, part int) {
	it.PartsDone = part
	if err := a.opts.Store.OutboxProgress(ctx, it.ID, part); err != nil {
		a.log.Warn("agent: cannot record delivery progress", "outbox", it.ID, "err", err)
	}
}

// sendVoice speaks an answer tagged [[audio_as_voice]] and sends it as a
// voice note. ok is false when it did not go out that way (no voice
// asked for, speech not configured, the provider failed or refused, the
// channel cannot send files): the caller sends the text instead, so an
// answer is never lost over its voice. The speech is made through the
// same speak the tool uses (stored, registered, placed) and only sent
// here, so the outbox keeps its one-part-at-a-time bookkeeping.
func (a *Agent) sendVoice(ctx context.Context, it *store.OutboxItem, ws groups.Workspace, ms channels.MediaSender, canMedia bool, text string) (channels.Delivery, bool) {
	if !it.Voice || !canMedia || !a.opts.Generate.Speech || a.opts.Media == nil {
		return channels.Delivery{}, false
	}
	var res tools.GeneratedResult
	if err := a.opts.Media(it.Folder).Call(ctx, tools.Speak, tools.SpeakArgs{Text: text}, &res); err != nil {
		a.log.Warn("agent: answer not spoken; sending it as text", "group", it.Folder, "outbox", it.ID, "err", err)
		return channels.Delivery{}, false
	}
	f, _, err := ws.Open(res.Path)
	if err != nil {
		a.log.Warn("agent: spoken answer cannot be opened; sending it as text", "group", it.Folder, "path", res.Path, "err", err)
		return channels.Delivery{}, false
	}
	defer f.Close()
	d, err := ms.SendMedia(ctx, channels.OutMedia{Chat: it.ChatID, File: f, FileName: filepath.Base(res.Path), MIME: res.MIME,
		ThreadID: it.ThreadID, Voice: true})
	if err != nil {
		a.log.Warn("agent: voice note not sent; sending the answer as text", "group", it.Folder, "outbox", it.ID, "err", err)
		return channels.Delivery{}, false
	}
	return d, true
}
