package chantest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/botd-dev/botd/channels"
)

// Live event kinds, in the order a live answer meets them.
const (
	LiveBegin     = "begin"
	LiveUpdate    = "update"
	LiveFinish    = "finish"
	LiveCancel    = "cancel"
	LiveInterrupt = "interrupt"
)

// LiveEvent is one thing done to a live answer. Stream numbers the live
// answers a Streaming channel began, from 1 (0 for an interrupt, which
// names its messages by IDs).
type LiveEvent struct {
	Kind   string
	Stream int
	Chat   string
	Text   string
	IDs    []string
	// Msg is what BeginStream was given (thread, reply-to).
	Msg channels.OutMessage
}

// Streaming is a Channel that also shows answers while they are written
// (channels.Streamer). It records every begin, update, finish, cancel and
// interrupt in order and shows each update at once: throttling is the
// real networks' business. Its embedded Channel alone is the same fake
// without the capability.
type Streaming struct {
	*Channel

	mu      sync.Mutex
	events  []LiveEvent
	streams int
	// beginErr fails BeginStream; finishErr fails Finish.
	beginErr, finishErr error
	whole               bool
}

// SetWholeAtFinish makes the fake say, as WhatsApp does, that its live
// answers show nothing before Finish (channels.WholeAtFinish).
func (s *Streaming) SetWholeAtFinish(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.whole = v
}

// WholeAtFinish implements channels.WholeAtFinish.
func (s *Streaming) WholeAtFinish() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whole
}

var _ channels.WholeAtFinish = (*Streaming)(nil)

// NewStreaming returns a fake channel called name that streams answers.
func NewStreaming(name string) *Streaming {
	return &Streaming{Channel: New(name)}
}

// FailBegin makes BeginStream fail with err (nil to recover).
func (s *Streaming) FailBegin(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beginErr = err
}

// FailFinish makes Finish fail with err (nil to recover).
func (s *Streaming) FailFinish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishErr = err
}

func (s *Streaming) record(e LiveEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

// Events returns what was done to live answers so far, in order.
func (s *Streaming) Events() []LiveEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// EventsOf returns the events of one kind.
func (s *Streaming) EventsOf(kind string) []LiveEvent {
	var out []LiveEvent
	for _, e := range s.Events() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func (s *Streaming) BeginStream(ctx context.Context, msg channels.OutMessage) (channels.LiveMessage, error) {
	if err := s.fenced(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.beginErr != nil {
		err := s.beginErr
		s.mu.Unlock()
		return nil, err
	}
	s.streams++
	n := s.streams
	ids := []string{fmt.Sprintf("live%d", n)}
	s.events = append(s.events, LiveEvent{Kind: LiveBegin, Stream: n, Chat: msg.Chat, Text: msg.Text, IDs: ids, Msg: msg})
	s.mu.Unlock()
	return &liveMessage{s: s, n: n, chat: msg.Chat, ids: ids}, nil
}

func (s *Streaming) InterruptStream(ctx context.Context, chat string, ids []string, text string) error {
	if err := s.fenced(ctx); err != nil {
		return err
	}
	s.record(LiveEvent{Kind: LiveInterrupt, Chat: chat, Text: text, IDs: slices.Clone(ids)})
	return nil
}

// liveMessage is one fake live answer.
type liveMessage struct {
	s    *Streaming
	n    int
	chat string
	ids  []string

	mu   sync.Mutex
	done bool
}

func (l *liveMessage) event(kind, text string) LiveEvent {
	return LiveEvent{Kind: kind, Stream: l.n, Chat: l.chat, Text: text, IDs: slices.Clone(l.ids)}
}

func (l *liveMessage) Update(text string) {
	if l.s.fenced(context.Background()) != nil {
		return // a real network's edit fails; Update reports nothing
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		// A real network would edit a finished message; the agent must not.
		l.s.record(l.event("update after end", text))
		return
	}
	l.s.record(l.event(LiveUpdate, text))
}

func (l *liveMessage) IDs() []string { return slices.Clone(l.ids) }

func (l *liveMessage) Finish(ctx context.Context, text string) (channels.Delivery, error) {
	if err := l.s.fenced(ctx); err != nil {
		return channels.Delivery{}, err
	}
	l.s.mu.Lock()
	err := l.s.finishErr
	l.s.mu.Unlock()
	if err != nil {
		return channels.Delivery{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	l.s.record(l.event(LiveFinish, text))
	return channels.Delivery{MessageIDs: slices.Clone(l.ids)}, nil
}

func (l *liveMessage) Cancel(ctx context.Context, note string) error {
	if err := l.s.fenced(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	l.s.record(l.event(LiveCancel, note))
	return nil
}
