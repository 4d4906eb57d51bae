package chantest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/mediaregistry"
)

// Sink is a channels.Sink that records what a channel delivered. It is
// safe for concurrent use; Wait blocks until a number of deliveries
// arrived, without polling.
type Sink struct {
	// OnDeliver, when set, runs first in every Deliver (storing the
	// message the way the router would, or holding it up); its error is
	// returned and the message is not recorded. Set it before the channel
	// starts.
	OnDeliver func(ctx context.Context, in channels.Inbound) error

	mu         sync.Mutex
	registered map[string]bool
	match      func(chat string) bool
	got        []channels.Inbound
	total      int // deliveries ever recorded; Take does not reset it
	migrated   [][2]string
	changed    chan struct{} // closed and replaced on every delivery
}

var _ channels.Sink = (*Sink)(nil)

// NewSink returns a sink for which chats are registered.
func NewSink(chats ...string) *Sink {
	s := &Sink{registered: map[string]bool{}, changed: make(chan struct{})}
	s.Register(chats...)
	return s
}

// Register adds chats to the registered set.
func (s *Sink) Register(chats ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range chats {
		s.registered[c] = true
	}
}

// RegisterFunc makes every chat for which f is true registered as well
// (fuzz targets reach both paths by the shape of the chat id).
func (s *Sink) RegisterFunc(f func(chat string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.match = f
}

// Registered implements channels.Sink.
func (s *Sink) Registered(chat string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered[chat] || (s.match != nil && s.match(chat))
}

// Deliver implements channels.Sink.
func (s *Sink) Deliver(ctx context.Context, in channels.Inbound) error {
	if s.OnDeliver != nil {
		if err := s.OnDeliver(ctx, in); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, in)
	s.total++
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// Migrated implements channels.Sink.
func (s *Sink) Migrated(_ context.Context, from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.migrated = append(s.migrated, [2]string{from, to})
}

// Inbounds returns what was delivered (since the last Take), in order.
func (s *Sink) Inbounds() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Inbound(nil), s.got...)
}

// Take returns what was delivered since the last Take and forgets it.
func (s *Sink) Take() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	return got
}

// Total counts every delivery since the sink was made.
func (s *Sink) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Migrations returns the chat id changes reported so far.
func (s *Sink) Migrations() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][2]string(nil), s.migrated...)
}

// WaitContext blocks until n messages were delivered in all, or ctx ends,
// and returns what Inbounds returns.
func (s *Sink) WaitContext(ctx context.Context, n int) ([]channels.Inbound, error) {
	for {
		s.mu.Lock()
		if s.total >= n {
			got := append([]channels.Inbound(nil), s.got...)
			s.mu.Unlock()
			return got, nil
		}
		changed, have := s.changed, s.total
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d messages delivered: %w", have, n, ctx.Err())
		}
	}
}

// HangGuard bounds a wait that should end at once in a working program;
// it only turns a hang into a failure, never decides a verdict. It is the
// one hang guard of botd's tests.
const HangGuard = testwait.HangGuard

// Wait is WaitContext for a test: it fails t if n messages did not arrive
// within HangGuard.
func (s *Sink) Wait(t testing.TB, n int) []channels.Inbound {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	defer cancel()
	got, err := s.WaitContext(ctx, n)
	if err != nil {
		t.Fatalf("waiting for deliveries: %v", err)
	}
	return got
}

// Next waits for the next delivery after the ones already taken and takes
// it: a test that reads messages one by one.
func (s *Sink) Next(t testing.TB) channels.Inbound {
	t.Helper()
	s.mu.Lock()
	want := s.total - len(s.got) + 1
	s.mu.Unlock()
	s.Wait(t, want)
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.got[0]
	s.got = s.got[1:]
	return in
}

// CheckInbound asserts what must hold for every message any channel
// delivers. For an unregistered chat: no text and no refs. For a
// registered one: every placeholder in Text names a ref registered in reg
// for in.ChatID, in.Refs are exactly the placeholders' refs in order (of
// the same kind, registered for that chat and channel), and no
// placeholder's line carries a control or bidi character.
func CheckInbound(t testing.TB, reg *mediaregistry.Registry, in channels.Inbound, registered bool) {
	t.Helper()
	channel, _, ok := strings.Cut(in.ChatID, ":")
	if !ok || channel == "" {
		t.Fatalf("chat id %q does not start with <channel>:", in.ChatID)
	}
	if !registered {
		// Only a short chat command of a stranger reaches the sink (an
		// owner's /approve in a DM).
		cmd := len(in.Text) <= 64 && !strings.ContainsAny(in.Text, "\n\r") && strings.Contains(in.Text, "/")
		if (in.Text != "" && !cmd) || len(in.Refs) != 0 {
			t.Fatalf("unregistered chat %s delivered text %q and %d refs", in.ChatID, in.Text, len(in.Refs))
		}
		return
	}
	ctx := context.Background()
	ps := mediaregistry.Parse(in.Text)
	if len(ps) != len(in.Refs) {
		t.Fatalf("%d refs but %d placeholders in %q", len(in.Refs), len(ps), in.Text)
	}
	for i, p := range ps {
		r := in.Refs[i]
		if p.Ref != r.ID || p.Kind != r.Kind {
			t.Fatalf("placeholder %d is %s %s, ref %d is %s %s, in %q", i, p.Kind, p.Ref, i, r.Kind, r.ID, in.Text)
		}
		if r.Chat != in.ChatID || r.Channel != channel || !mediaregistry.ValidRefID(r.ID) {
			t.Fatalf("ref %d of %s: id %q chat %q channel %q", i, in.ChatID, r.ID, r.Chat, r.Channel)
		}
		got, err := reg.Get(ctx, mediaregistry.Chats{in.ChatID}, p.Ref)
		if err != nil && !errors.Is(err, mediaregistry.ErrExpired) {
			t.Fatalf("placeholder %s in %s is not a registered ref: %v", p.Ref, in.ChatID, err)
		}
		if got.Chat != in.ChatID || got.Kind != p.Kind {
			t.Fatalf("placeholder %s %s in %s: the registry has %s for %s", p.Kind, p.Ref, in.ChatID, got.Kind, got.Chat)
		}
		line := in.Text[p.Start:]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		for _, c := range line {
			if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
				t.Fatalf("invisible %U in placeholder line %q", c, line)
			}
		}
	}
}

// WaitReturns calls w.Wait and fails t if it did not return within
// HangGuard (a channel that never stops would hang the test instead).
func WaitReturns(t testing.TB, w channels.Waiter) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Wait()
	}()
	select {
	case <-done:
	case <-time.After(HangGuard):
		t.Fatalf("%T.Wait did not return within %s of the end of Start's ctx", w, HangGuard)
	}
}
