package ops

import (
	"context"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

// nopSink stores nothing: what is measured is the counting alone.
type nopSink struct{}

func (nopSink) Registered(string) bool                          { return true }
func (nopSink) Deliver(context.Context, channels.Inbound) error { return nil }
func (nopSink) Migrated(context.Context, string, string)        {}

// The hot path: every message a channel hands over passes the counting
// sink. Compare with BenchmarkSinkBare (the same delivery uncounted).
func BenchmarkSinkCounted(b *testing.B) {
	s := New().Sink(nopSink{})
	benchDeliver(b, s)
}

func BenchmarkSinkBare(b *testing.B) { benchDeliver(b, nopSink{}) }

func benchDeliver(b *testing.B, s channels.Sink) {
	ctx := context.Background()
	text := channels.Inbound{ChatID: "telegram:-100123", ID: "1", Text: "hello"}
	photo := channels.Inbound{ChatID: "whatsapp:123@g.us", ID: "2",
		Refs: []mediaregistry.MediaReference{{ID: "wa_1", Channel: "whatsapp", Size: 120_000}}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			in := text
			if i%4 == 0 {
				in = photo
			}
			i++
			if err := s.Deliver(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Once per run: its outcome and a typical bill of three model calls.
func BenchmarkRunDone(b *testing.B) {
	m := New()
	now := time.Now()
	r := store.AgentRun{Outcome: "answered", Started: now.Add(-3 * time.Second), Finished: now}
	for range 3 {
		r.Attempts = append(r.Attempts, store.Attempt{Provider: "anthropic", Model: "claude-sonnet-4-5", Outcome: "succeeded",
			Input: 5000, Output: 300, CacheRead: 4000, CostMicrocents: 2_000_000, CostKnown: true})
	}
	b.ReportAllocs()
	for b.Loop() {
		m.RunDone(r)
	}
}

// What one scrape costs the daemon (the Go runtime's series included).
func BenchmarkGather(b *testing.B) {
	m := New()
	m.WatchQueue(func() QueueState { return QueueState{Running: 1} })
	m.WatchLease(func() LeaseState { return LeaseState{Active: true, Epoch: 3} })
	m.RunDone(store.AgentRun{Outcome: "answered", Attempts: []store.Attempt{{Provider: "p", Model: "m", Outcome: "succeeded", Input: 1}}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
