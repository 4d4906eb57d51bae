package agent

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/store"
)

const (
	// slowToolAfter is how long a tool call runs before the chat is told
	// the assistant is still at it.
	slowToolAfter = 15 * time.Second
	// livePersistEvery bounds the writes of a growing live answer: a
	// crash loses at most this much of what the interrupted mark shows.
	livePersistEvery = 2 * time.Second
)

// Notes the chat sees about a live answer that did not end in one.
const (
	msgLiveFailed  = "(This answer was cut short. I'll try again.)"
	msgLiveStopped = "(Stopped.)"
)

// toolNotes say, by tool, what a run waiting on a slow tool call is doing.
var toolNotes = map[string]string{
	"fetch_media":    "Still working on it: reading the file…",
	"fetch_url":      "Still working on it: reading the page…",
	"web_search":     "Still working on it: searching the web…",
	"generate_image": "Still working on it: making the picture…",
	"generate_video": "Still working on it: making the video…",
	"speak":          "Still working on it: recording the voice note…",
}

func toolNote(name string) string {
	if n, ok := toolNotes[name]; ok {
		return n
	}
	return "Still working on it…"
}

// liveRun is the live answer of one run: nothing until the model writes
// text the chat may see, then one LiveMessage that each model turn's text
// replaces, finished by the outbox with the final answer. On a channel
// without channels.Streamer it only carries the long-tool note, sent
// plainly.
type liveRun struct {
	reg    *lives
	folder string
	msg    channels.OutMessage // where, with ReplyTo and ThreadID
	ch     channels.Channel
	log    *slog.Logger

	mu        sync.Mutex
	st        channels.Streamer // nil: show nothing before the answer
	lm        channels.LiveMessage
	row       int64  // its live_messages row, 0 when not stored
	shown     string // what lm shows
	persisted time.Time
	voice     bool            // the answer is to be spoken: not streamed
	turn      strings.Builder // the current model turn's raw text
	noted     bool            // the long-tool note was given
}

// begin is the live answer of a run answering to: shown on a channel
// that streams, a carrier of the long-tool note on one that does not.
func (l *lives) begin(folder string, to target, log *slog.Logger) *liveRun {
	lv := &liveRun{reg: l, folder: folder, msg: outMessage(to.chat, "", to.thread, to.replyTo), log: log}
	ch, ok := l.chans.forChat(to.chat)
	if !ok {
		return lv
	}
	lv.ch = ch
	lv.st, _ = ch.(channels.Streamer)
	return lv
}

// startTurn begins a model turn (or a retry of one): its text replaces
// what the previous one showed.
func (lv *liveRun) startTurn() {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	lv.turn.Reset()
	lv.voice = false
}

// delta adds text the model wrote and shows what of it the chat may see.
func (lv *liveRun) delta(ctx context.Context, s string) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	lv.turn.WriteString(s)
	if lv.st == nil || lv.voice {
		return
	}
	vis, ok := visibleSoFar(lv.turn.String())
	if !ok {
		lv.voice = true // the outbox speaks it; what shows is removed then
		return
	}
	lv.showLocked(ctx, vis)
}

// showLocked puts text in the live message, beginning it if need be.
func (lv *liveRun) showLocked(ctx context.Context, text string) {
	if text == "" || text == lv.shown {
		return
	}
	now := lv.reg.chans.clk.Now()
	if lv.lm == nil {
		// A stale instance's begin is refused by the channel's fence
		// (channels.Env.Fence), and the fenced outbox decides whether
		// the answer goes out at all.
		m := lv.msg
		m.Text = text
		lm, err := lv.st.BeginStream(ctx, m)
		if err != nil {
			// One final send still delivers the answer.
			lv.log.Warn("agent: live answer not begun; the answer comes when done", "err", err)
			lv.st = nil
			return
		}
		lv.lm, lv.shown, lv.persisted = lm, text, now
		row, err := lv.reg.st.OpenLive(context.WithoutCancel(ctx), store.LiveMessage{Folder: lv.folder, ChatID: lv.msg.Chat,
			IDs: lm.IDs(), Text: text, Opened: now})
		if err != nil {
			lv.log.Warn("agent: live answer not recorded; a crash now would leave it unmarked", "err", err)
		}
		lv.row = row
		return
	}
	lv.lm.Update(text)
	lv.shown = text
	if lv.row != 0 && now.Sub(lv.persisted) >= livePersistEvery {
		lv.persisted = now
		if err := lv.reg.st.GrowLive(context.WithoutCancel(ctx), lv.row, lv.lm.IDs(), text, now); err != nil {
			lv.log.Warn("agent: live answer not recorded", "err", err)
		}
	}
}

// note tells the chat, once per run, that a tool call is taking long. In
// a live message the answer replaces it; elsewhere (no Streamer, or one
// that shows nothing before Finish) it is a message of its own and stays.
func (lv *liveRun) note(ctx context.Context, text string) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if lv.noted || lv.ch == nil {
		return
	}
	lv.noted = true
	// A network that shows a live answer only when it is finished would
	// keep the note to itself: it goes as a message of its own.
	w, ok := lv.st.(channels.WholeAtFinish)
	whole := ok && w.WholeAtFinish()
	if !whole && lv.st != nil && !lv.voice {
		lv.showLocked(ctx, text)
		if lv.lm != nil {
			return
		}
	}
	m := lv.msg
	m.Text = text
	if _, err := lv.ch.Send(ctx, m); err != nil {
		lv.log.Warn("agent: could not say the run is still working", "err", err)
	}
}

// take hands the live message to the outbox item that finishes it; nil
// when there is none.
func (lv *liveRun) take() (channels.LiveMessage, int64) {
	if lv == nil {
		return nil, 0
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	lm, row := lv.lm, lv.row
	if row != 0 && lv.shown != "" {
		// All it shows is written down, for the mark after a crash.
		if err := lv.reg.st.GrowLive(context.Background(), row, lm.IDs(), lv.shown, lv.reg.chans.clk.Now()); err != nil {
			lv.log.Warn("agent: live answer not recorded", "err", err)
		}
	}
	lv.lm, lv.row, lv.st = nil, 0, nil
	return lm, row
}

// cancel ends a live answer that gets no answer in it (the run failed, or
// the answer is silent or spoken); note says why, "" removes it.
func (lv *liveRun) cancel(ctx context.Context, note string) {
	lm, row := lv.take()
	if lm == nil {
		return
	}
	if err := lm.Cancel(context.WithoutCancel(ctx), note); err != nil {
		lv.log.Warn("agent: live answer not cancelled", "err", err)
	}
	lv.reg.close(ctx, row)
}

// lives are the live answers of the process: the rows that record what
// each shows (so a crash's leftovers are marked interrupted at the next
// start) and the live messages outbox items finish when delivered.
type lives struct {
	st    *store.Store
	chans *channelSet
	log   *slog.Logger

	mu   sync.Mutex
	held map[int64]finishing // by outbox item id
}

// close forgets a live answer's row (0: none).
func (l *lives) close(ctx context.Context, row int64) {
	if row == 0 {
		return
	}
	if err := l.st.CloseLive(context.WithoutCancel(ctx), row); err != nil {
		l.log.Warn("agent: live answer record not closed", "err", err)
	}
}

// finishing is a live message an outbox item finishes, with its row.
type finishing struct {
	lm  channels.LiveMessage
	row int64
}

// hold keeps lm for the outbox item id until its delivery finishes it.
func (l *lives) hold(id int64, lm channels.LiveMessage, row int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[int64]finishing{}
	}
	l.held[id] = finishing{lm, row}
}

func (l *lives) heldFor(id int64) (finishing, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.held[id]
	return f, ok
}

// done forgets the live message of the outbox item id and closes its row.
func (l *lives) done(ctx context.Context, id int64, f finishing) {
	l.mu.Lock()
	delete(l.held, id)
	l.mu.Unlock()
	l.close(ctx, f.row)
}

// interruptAll marks every live answer a crash left open as
// interrupted and forgets it; the outbox or a new run answers again.
func (l *lives) interruptAll(ctx context.Context) error {
	open, err := l.st.OpenLives(ctx)
	if err != nil {
		return err
	}
	for _, m := range open {
		ch, ok := l.chans.forChat(m.ChatID)
		if st, can := ch.(channels.Streamer); ok && can {
			if err := st.InterruptStream(ctx, m.ChatID, m.IDs, m.Text); err != nil {
				// The answer still comes; only the mark is missing.
				l.log.Warn("agent: interrupted live answer not marked", "chat", m.ChatID, "err", err)
			}
		}
		l.close(ctx, m.ID)
	}
	return nil
}

// watchTool gives the long-tool note if the call named name is still
// running after slowToolAfter; stop ends the watch.
func (lv *liveRun) watchTool(ctx context.Context, name string) (stop func()) {
	if lv == nil {
		return func() {}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t := lv.reg.chans.clk.NewTimer(slowToolAfter)
	go func() {
		defer close(done)
		defer t.Stop()
		select {
		case <-t.C():
			lv.note(ctx, toolNote(name))
		case <-wctx.Done():
		}
	}()
	return func() { cancel(); <-done }
}

var (
	// internalOpenTag hides everything from an internal note that is not
	// closed yet; the model may still close it.
	internalOpenTag = regexp.MustCompile(`(?i)<internal`)
)

// visibleSoFar is what of a turn's text so far the chat may see, as
// parseAnswer would make of it: internal notes (closed or not) and
// MEDIA: lines removed, a tag still being written held back. ok is false
// once the answer asks to be spoken: it is not streamed.
func visibleSoFar(raw string) (string, bool) {
	raw = newlines(raw)
	if strings.Contains(raw, voiceTag) {
		return "", false
	}
	// It runs on every delta, over the whole turn so far: the common
	// text, with no tag and no MEDIA: line, skips the regexps and the
	// line walk.
	if strings.Contains(raw, "<") {
		raw = internalBlock.ReplaceAllString(raw, "")
		if loc := internalOpenTag.FindStringIndex(raw); loc != nil {
			raw = raw[:loc[0]]
		}
	}
	raw = holdPartialTag(raw, "<internal>")
	raw = holdPartialTag(raw, voiceTag)
	lastLine := strings.TrimSpace(raw[strings.LastIndexByte(raw, '\n')+1:])
	if !strings.Contains(raw, "MEDIA:") && !strings.Contains(raw, "\n\n\n") && (lastLine == "" || !strings.HasPrefix("MEDIA:", lastLine)) {
		return strings.TrimSpace(raw), true
	}
	kept, _ := walkAnswer(raw, func(rest string, last bool) (string, bool) {
		// A path quoted once has a known end without the group folder:
		// the text after it shows now, as the final answer will keep
		// it. Any other line waits for the final answer, which tries
		// its readings against the folder's files.
		if cands := quotedReadings(strings.TrimSpace(rest)); len(cands) == 1 && !last {
			after := cleanAfter(cands[0].after)
			return after, after != ""
		}
		return "", false
	})
	// A last line that may yet become "MEDIA:" is held back.
	if n := len(kept); n > 0 {
		if t := strings.TrimSpace(kept[n-1]); t != "" && strings.HasPrefix("MEDIA:", t) {
			kept = kept[:n-1]
		}
	}
	return strings.TrimSpace(collapseBlankLines(strings.Join(kept, "\n"))), true
}

// holdPartialTag drops the end of s when it is the start of tag (case
// aside), so "<inter" is not shown a moment before it hides the rest.
func holdPartialTag(s, tag string) string {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.EqualFold(s[len(s)-n:], tag[:n]) {
			return s[:len(s)-n]
		}
	}
	return s
}
