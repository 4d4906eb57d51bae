package telegram

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/clock"
)

// Pacing of live answers. Telegram allows a bot about one message a
// second in a chat and 20 a minute in a group; edits are throttled by
// the same counters. A live message is edited at most once per
// editEvery, and a group's calls come out of a bucket of groupBurst
// refilled at groupPerMinute, so no minute ever sees more than
// groupBurst+groupPerMinute = 20 of them: short answers grow every
// second, a long one settles to an edit every ~4 s.
const (
	editEvery      = time.Second
	groupBurst     = 6
	groupPerMinute = 14
)

// interruptedNote marks a live answer cut short by a crash.
const interruptedNote = "\n\n(interrupted)"

// chatPace is one chat's budget of live-answer calls.
type chatPace struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
	until  time.Time // nothing before this: a 429's retry_after
}

func (p *chatPace) refill(now time.Time) {
	if p.at.IsZero() {
		p.tokens = groupBurst
	} else if now.After(p.at) {
		p.tokens = min(groupBurst, p.tokens+now.Sub(p.at).Minutes()*groupPerMinute)
	}
	p.at = now
}

func (t *Telegram) pace(chat int64) *chatPace {
	p := t.paces[chat]
	if p == nil {
		p = &chatPace{}
		t.paces[chat] = p
	}
	return p
}

// paceWait is how long a call to chat has to wait: for a 429 to lapse
// and, in a group, for the bucket to hold a call.
func (t *Telegram) paceWait(chat int64, group bool) time.Duration {
	t.paceMu.Lock()
	defer t.paceMu.Unlock()
	now := t.clk.Now()
	p := t.pace(chat)
	d := p.until.Sub(now)
	if group {
		p.refill(now)
		if p.tokens < 1 {
			need := time.Duration(math.Ceil((1 - p.tokens) * float64(time.Minute) / groupPerMinute))
			d = max(d, need)
		}
	}
	return max(d, 0)
}

// spend takes one call from a group's bucket. Finish spends without
// waiting (the answer must arrive), which only delays later calls.
func (t *Telegram) spend(chat int64, group bool) {
	if !group {
		return
	}
	t.paceMu.Lock()
	defer t.paceMu.Unlock()
	p := t.pace(chat)
	p.refill(t.clk.Now())
	p.tokens--
}

// backOff obeys a 429 for the whole chat.
func (t *Telegram) backOff(chat int64, err error) bool {
	var tm *bot.TooManyRequestsError
	if !errors.As(err, &tm) {
		return false
	}
	t.paceMu.Lock()
	defer t.paceMu.Unlock()
	p := t.pace(chat)
	p.until = t.clk.Now().Add(time.Duration(max(tm.RetryAfter, 1)) * time.Second)
	return true
}

// What a live message's loop is doing, for tests that move a fake clock
// and must know when it has nothing left to do before time passes.
const (
	loopIdle int32 = iota // waiting for text
	loopPacing
	loopSending
	loopEnded
)

// shownMsg is one message a live answer spans and the piece it shows.
type shownMsg struct {
	id    int
	piece string
}

// live is one answer being shown while written. The loop goroutine is
// the only one calling Telegram until it ended; Finish and Cancel end it
// first, then make their calls themselves.
type live struct {
	t       *Telegram
	chat    int64
	chatID  string
	group   bool
	thread  int
	replyTo int
	// draft: a private chat shows the piece being written as a draft
	// (sendMessageDraft) and only finished pieces as messages. Cleared
	// when the Bot API refuses drafts; edits take over.
	draft   bool
	draftID int64

	mu     sync.Mutex
	text   string // newest markdown
	msgs   []shownMsg
	ended  bool
	drafty string // the piece the draft shows
	// owed: newer text than the last flush read is waiting to be shown.
	owed bool

	wake     chan struct{}
	stop     context.CancelFunc
	done     chan struct{}
	state    atomic.Int32
	lastCall time.Time // loop only
}

// BeginStream implements channels.Streamer: a group (or a private chat
// whose Bot API has no drafts) gets a message with the first words that
// later grows by edits; a private chat gets drafts.
func (t *Telegram) BeginStream(ctx context.Context, msg channels.OutMessage) (channels.LiveMessage, error) {
	chat, err := nativeChat(msg.Chat)
	if err != nil {
		return nil, err
	}
	l := &live{
		t: t, chat: chat, chatID: msg.Chat,
		// Private chats have the user's (positive) id; groups negative ids.
		group:   chat < 0,
		draft:   chat > 0,
		draftID: rand.Int64N(1<<40) + 1,
		thread:  optInt(msg.ThreadID),
		replyTo: optInt(msg.ReplyTo),
		text:    msg.Text,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	if strings.TrimSpace(msg.Text) != "" {
		if err := l.flush(ctx, false); err != nil {
			return nil, fmt.Errorf("telegram begin live answer in %s: %w", msg.Chat, err)
		}
		l.lastCall = t.clk.Now()
	}
	// The loop outlives BeginStream's call but not the run it serves.
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	stopWithRun := context.AfterFunc(ctx, stop)
	// Nor the channel: no edit goes out after Start's ctx ended.
	t.mu.Lock()
	chanCtx := t.runCtx
	t.mu.Unlock()
	stopWithChan := func() bool { return false }
	if chanCtx != nil {
		stopWithChan = context.AfterFunc(chanCtx, stop)
	}
	l.stop = func() { stopWithRun(); stopWithChan(); stop() }
	go l.run(loopCtx)
	return l, nil
}

// Update implements channels.LiveMessage: it keeps only the newest text
// and nudges the loop.
func (l *live) Update(text string) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.text = text
	l.owed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// IDs implements channels.LiveMessage.
func (l *live) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, len(l.msgs))
	for i, m := range l.msgs {
		ids[i] = strconv.Itoa(m.id)
	}
	return ids
}

func (l *live) run(ctx context.Context) {
	defer close(l.done)
	defer l.state.Store(loopEnded)
	for {
		l.state.Store(loopIdle)
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		}
		l.mu.Lock()
		owed := l.owed
		l.mu.Unlock()
		if !owed {
			continue // a nudge for text an earlier flush already took
		}
		l.state.Store(loopPacing)
		for {
			d := l.t.paceWait(l.chat, l.group)
			if !l.lastCall.IsZero() {
				d = max(d, l.lastCall.Add(editEvery).Sub(l.t.clk.Now()))
			}
			if d <= 0 {
				break
			}
			if !clock.Wait(ctx, l.t.clk, d, nil) {
				return
			}
		}
		l.state.Store(loopSending)
		err := l.flush(ctx, false)
		l.lastCall = l.t.clk.Now()
		switch {
		case err == nil, ctx.Err() != nil:
		case l.t.backOff(l.chat, err):
			// The newest text is still owed: try again once allowed.
			l.mu.Lock()
			l.owed = true
			l.mu.Unlock()
			select {
			case l.wake <- struct{}{}:
			default:
			}
		default:
			// The next Update tries again, and Finish delivers anyway.
			l.t.log.Warn("telegram: live answer update failed", "chat", l.chatID, "err", redact(err.Error(), l.t.cfg.Token))
		}
	}
}

// end stops the loop and waits until it made its last call.
func (l *live) end() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.stop()
	<-l.done
}

// flush shows the newest text: every piece but a private chat's last
// (the draft) as a message, sent or edited; final also turns the draft
// into a message and removes messages a shorter replacement no longer
// needs. Calls made outside the loop (final) wait out 429s themselves.
func (l *live) flush(ctx context.Context, final bool) error {
	l.mu.Lock()
	text := l.text
	l.owed = false
	l.mu.Unlock()
	pieces := l.t.render(text, MaxMessageRunes)
	if len(pieces) == 0 {
		if final {
			return errors.New("empty answer")
		}
		return nil
	}
	settled := pieces
	if l.draft && !final {
		settled = pieces[:len(pieces)-1]
	}
	for i, p := range settled {
		if err := l.show(ctx, i, p, final); err != nil {
			return err
		}
	}
	if l.draft && !final {
		last := pieces[len(pieces)-1]
		if last == l.drafty {
			return nil
		}
		err := l.sendDraft(ctx, len(pieces)-1, last)
		if err == nil || l.t.backOff(l.chat, err) || ctx.Err() != nil {
			return err
		}
		l.t.log.Info("telegram: drafts refused in a private chat; editing a message instead",
			"chat", l.chatID, "err", redact(err.Error(), l.t.cfg.Token))
		l.draft = false
		return l.show(ctx, len(pieces)-1, last, false)
	}
	if final {
		for len(l.msgs) > len(pieces) {
			last := l.msgs[len(l.msgs)-1]
			if err := l.t.deleteMessage(ctx, l.chat, last.id); err != nil {
				return err
			}
			l.mu.Lock()
			l.msgs = l.msgs[:len(l.msgs)-1]
			l.mu.Unlock()
		}
	}
	return nil
}

// show makes message i show piece p: sent if it is new, edited if it
// shows something else, left alone if it shows p already.
func (l *live) show(ctx context.Context, i int, p string, final bool) error {
	if i < len(l.msgs) {
		if l.msgs[i].piece == p {
			return nil
		}
		l.t.spend(l.chat, l.group)
		if err := l.t.editPiece(ctx, l.chatID, l.chat, l.msgs[i].id, p, final); err != nil {
			return err
		}
		l.mu.Lock()
		l.msgs[i].piece = p
		l.mu.Unlock()
		return nil
	}
	l.t.spend(l.chat, l.group)
	replyTo := 0
	if i == 0 {
		replyTo = l.replyTo
	}
	id, err := l.t.sendOnce(ctx, l.chatID, &l.chat, p, l.thread, replyTo, final)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.msgs = append(l.msgs, shownMsg{id: id, piece: p})
	l.mu.Unlock()
	return nil
}

func (l *live) sendDraft(ctx context.Context, piece int, p string) error {
	err := l.t.formatted(ctx, l.chatID, p, func(text string, mode models.ParseMode) error {
		_, err := l.t.b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{
			ChatID: l.chat, MessageThreadID: l.thread,
			// A new draft per piece: the finished one became a message.
			DraftID: strconv.FormatInt(l.draftID+int64(piece), 10),
			Text:    text, ParseMode: mode,
		})
		return err
	})
	if err == nil {
		l.drafty = p
	}
	return err
}

// Finish implements channels.LiveMessage.
func (l *live) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	l.end()
	l.mu.Lock()
	l.text = text
	l.mu.Unlock()
	// A 429 still running is obeyed before the final calls.
	if d := l.t.paceWait(l.chat, false); d > 0 && !clock.Wait(ctx, l.t.clk, d, nil) {
		return channels.Delivery{MessageIDs: l.IDs()}, fmt.Errorf("telegram finish live answer in %s: %w", l.chatID, ctx.Err())
	}
	err := l.flush(ctx, true)
	d := channels.Delivery{MessageIDs: l.IDs()}
	if err != nil {
		return d, fmt.Errorf("telegram finish live answer in %s: %w", l.chatID, err)
	}
	return d, nil
}

// Cancel implements channels.LiveMessage: what was shown stays, with the
// note after it; without a note it is removed. A private chat's draft
// is not a message and lapses by itself.
func (l *live) Cancel(ctx context.Context, note string) error {
	l.end()
	l.mu.Lock()
	shown := len(l.msgs) > 0 || l.drafty != ""
	text := l.text
	l.mu.Unlock()
	if !shown {
		return nil
	}
	if note == "" {
		for _, m := range l.msgs {
			if err := l.t.deleteMessage(ctx, l.chat, m.id); err != nil {
				return fmt.Errorf("telegram cancel live answer in %s: %w", l.chatID, err)
			}
		}
		return nil
	}
	l.mu.Lock()
	l.text = strings.TrimSpace(text) + "\n\n" + note
	l.mu.Unlock()
	if err := l.flush(ctx, true); err != nil {
		return fmt.Errorf("telegram cancel live answer in %s: %w", l.chatID, err)
	}
	return nil
}

// InterruptStream implements channels.Streamer: each message shows its
// part of text again, the last one followed by "(interrupted)".
func (t *Telegram) InterruptStream(ctx context.Context, chat string, ids []string, text string) error {
	id, err := nativeChat(chat)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	pieces := t.render(text, MaxMessageRunes)
	if n := len(pieces); n > 0 && len([]rune(plainOf(pieces[n-1])+interruptedNote)) > MaxMessageRunes {
		pieces = t.render(text, MaxMessageRunes-len(interruptedNote))
	}
	n := min(len(pieces), len(ids))
	for i := range n {
		msg, err := strconv.Atoi(ids[i])
		if err != nil {
			return fmt.Errorf("telegram interrupt in %s: message id %q is not a number", chat, ids[i])
		}
		p := pieces[i]
		if i == n-1 {
			p += escapeHTML(interruptedNote)
		}
		if err := t.editPiece(ctx, chat, id, msg, p, true); err != nil {
			return fmt.Errorf("telegram interrupt in %s: %w", chat, err)
		}
	}
	return nil
}

// editPiece edits message msg to show piece; retry waits out 429s, which
// otherwise come back for the caller's pacing.
func (t *Telegram) editPiece(ctx context.Context, chatID string, chat int64, msg int, piece string, retry bool) error {
	err := t.formatted(ctx, chatID, piece, func(text string, mode models.ParseMode) error {
		call := func() error {
			_, err := t.b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: msg, Text: text, ParseMode: mode})
			if notModified(err) {
				return nil
			}
			return err
		}
		if retry {
			return t.retry(ctx, true, call)
		}
		return call()
	})
	if err != nil {
		return redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
	}
	return nil
}

// sendOnce sends a piece as a new message; without retry a 429 comes back
// for the caller's pacing instead of being waited out here.
func (t *Telegram) sendOnce(ctx context.Context, chatID string, chat *int64, piece string, thread, replyTo int, retry bool) (int, error) {
	if retry {
		return t.sendPiece(ctx, chatID, chat, piece, thread, replyTo)
	}
	var sent *models.Message
	err := t.formatted(ctx, chatID, piece, func(text string, mode models.ParseMode) error {
		params := &bot.SendMessageParams{ChatID: *chat, Text: text, ParseMode: mode, MessageThreadID: thread}
		if replyTo != 0 {
			params.ReplyParameters = &models.ReplyParameters{MessageID: replyTo, AllowSendingWithoutReply: true}
		}
		var err error
		sent, err = t.b.SendMessage(ctx, params)
		return err
	})
	if err != nil {
		return 0, redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
	}
	return sent.ID, nil
}

func (t *Telegram) deleteMessage(ctx context.Context, chat int64, msg int) error {
	err := t.retry(ctx, true, func() error {
		_, err := t.b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: chat, MessageID: msg})
		return err
	})
	if err != nil {
		return redactedErr{err: err, msg: redact(err.Error(), t.cfg.Token)}
	}
	return nil
}
