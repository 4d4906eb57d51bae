package channels

import (
	"context"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/clock"
)

// Pacer is the pacing half of a live answer shown by edits: Update keeps
// only the newest text and never blocks; Run shows it at most once per
// interval, so a fast model costs one edit a second however many tokens
// it writes; Halt stops Run and waits for it, so Finish and Cancel never
// race an edit in flight; End marks the answer ended once.
type Pacer struct {
	mu     sync.Mutex
	latest string // the newest text from Update
	dirty  bool   // latest not shown yet
	ended  bool

	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewPacer returns a Pacer whose newest text is shown, the text the live
// answer began with.
func NewPacer(shown string) *Pacer {
	return &Pacer{latest: shown, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Update implements LiveMessage.Update.
func (p *Pacer) Update(text string) {
	p.mu.Lock()
	p.latest, p.dirty = text, true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run calls show with the newest text, then waits every before it shows
// again, until Halt or ctx ends. It is the one goroutine that edits
// while the answer is written.
func (p *Pacer) Run(ctx context.Context, clk clock.Clock, every time.Duration, show func(text string)) {
	defer close(p.done)
	for {
		t := clk.NewTimer(every)
		select {
		case <-t.C():
		case <-p.stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		select {
		case <-p.wake:
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		}
		p.mu.Lock()
		text, dirty := p.latest, p.dirty
		p.dirty = false
		p.mu.Unlock()
		if dirty {
			show(text)
		}
	}
}

// Halt stops Run and waits for it to return (Run must have been started).
func (p *Pacer) Halt() {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
}

// End marks the answer ended and reports whether it already was, with
// the newest text Update gave.
func (p *Pacer) End() (already bool, latest string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	already, p.ended = p.ended, true
	return already, p.latest
}

// FinishBy is LiveMessage.Finish of an answer that show draws (final:
// the last time) and ids lists: the pacing stops, then, unless the
// answer already ended, show draws the whole text.
func (p *Pacer) FinishBy(ctx context.Context, text string, show func(ctx context.Context, text string, final bool) error, ids func() []string) (Delivery, error) {
	p.Halt()
	if ended, _ := p.End(); ended {
		return Delivery{MessageIDs: ids()}, nil
	}
	err := show(ctx, text, true)
	return Delivery{MessageIDs: ids()}, err
}

// CancelBy is LiveMessage.Cancel of an answer that show draws: the
// pacing stops, and what was shown is marked with note ("stopped" when
// empty), unless the answer already ended or nothing was shown.
func (p *Pacer) CancelBy(ctx context.Context, note string, show func(ctx context.Context, text string, final bool) error, ids func() []string) error {
	p.Halt()
	ended, text := p.End()
	if ended || len(ids()) == 0 {
		return nil
	}
	if note == "" {
		note = "stopped"
	}
	return show(ctx, text+"\n\n_("+note+")_", true)
}
