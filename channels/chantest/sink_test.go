package chantest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/botd-dev/botd/channels"
)

func TestSinkRegistered(t *testing.T) {
	s := NewSink("slack:C1")
	s.RegisterFunc(func(chat string) bool { return strings.HasSuffix(chat, "@g.us") })
	s.Register("telegram:-1")
	for chat, want := range map[string]bool{
		"slack:C1": true, "telegram:-1": true, "whatsapp:1@g.us": true, "slack:C2": false, "": false,
	} {
		if got := s.Registered(chat); got != want {
			t.Errorf("Registered(%q) = %v, want %v", chat, got, want)
		}
	}
}

// Deliveries from many goroutines are all recorded, and Wait returns
// once the last of them arrived.
func TestSinkWaitsForConcurrentDeliveries(t *testing.T) {
	s := NewSink()
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.Deliver(context.Background(), channels.Inbound{ChatID: "slack:C1", ID: string(rune('A' + i))}); err != nil {
				t.Error(err)
			}
		})
	}
	if got := s.Wait(t, n); len(got) != n {
		t.Errorf("Wait returned %d, want %d", len(got), n)
	}
	wg.Wait()
	if s.Total() != n {
		t.Errorf("Total = %d", s.Total())
	}
}

func TestSinkWaitEndsWithContext(t *testing.T) {
	s := NewSink()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.WaitContext(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestSinkNextAndTake(t *testing.T) {
	s := NewSink()
	ctx := context.Background()
	for _, id := range []string{"1", "2", "3"} {
		if err := s.Deliver(ctx, channels.Inbound{ChatID: "telegram:1", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if in := s.Next(t); in.ID != "1" {
		t.Errorf("Next = %s, want 1", in.ID)
	}
	if got := s.Take(); len(got) != 2 || got[0].ID != "2" || got[1].ID != "3" {
		t.Errorf("Take = %+v", got)
	}
	go s.Deliver(ctx, channels.Inbound{ChatID: "telegram:1", ID: "4"})
	if in := s.Next(t); in.ID != "4" {
		t.Errorf("Next after Take = %s, want 4", in.ID)
	}
	if s.Total() != 4 || len(s.Inbounds()) != 0 {
		t.Errorf("total %d, left %d", s.Total(), len(s.Inbounds()))
	}
}

func TestSinkOnDeliverError(t *testing.T) {
	s := NewSink()
	boom := errors.New("disk full")
	s.OnDeliver = func(context.Context, channels.Inbound) error { return boom }
	if err := s.Deliver(context.Background(), channels.Inbound{ChatID: "telegram:1"}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if s.Total() != 0 {
		t.Error("a refused message was recorded")
	}
	s.Migrated(context.Background(), "telegram:1", "telegram:-1001")
	if m := s.Migrations(); len(m) != 1 || m[0] != [2]string{"telegram:1", "telegram:-1001"} {
		t.Errorf("migrations %v", m)
	}
}
