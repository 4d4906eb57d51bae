package channels

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
)

// Many updates within one interval are one show of the newest text; an
// interval without updates shows nothing; after Halt nothing more shows.
func TestPacer(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := NewPacer("The")
	var mu sync.Mutex
	var shown []string
	go p.Run(context.Background(), clk, time.Second, func(text string) {
		mu.Lock()
		shown = append(shown, text)
		mu.Unlock()
	})
	got := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(shown) }
	timer := func() { testwait.Until(t, "the pacer's timer", func() bool { return len(clk.Waiting()) == 1 }) }

	timer()
	p.Update("The rota")
	p.Update("The rota works")
	clk.Advance(time.Second)
	testwait.Until(t, "one show", func() bool { return len(got()) == 1 })
	timer()
	clk.Advance(time.Second) // nothing new: Run waits for an update
	p.Update("The rota works in turns")
	testwait.Until(t, "the second show", func() bool { return len(got()) == 2 })
	if want := []string{"The rota works", "The rota works in turns"}; !slices.Equal(got(), want) {
		t.Fatalf("shown %q, want %q", got(), want)
	}
	p.Update("never shown")
	p.Halt()
	if ended, latest := p.End(); ended || latest != "never shown" {
		t.Errorf("End() = %v, %q", ended, latest)
	}
	if ended, _ := p.End(); !ended {
		t.Error("a second End did not see the first")
	}
	if n := len(got()); n != 2 {
		t.Errorf("%d shows after Halt, want 2", n)
	}
}

// FinishBy draws the whole text once; a Cancel after it draws nothing; a
// CancelBy with nothing shown draws nothing; otherwise it marks the
// newest text with the note.
func TestPacerFinishAndCancel(t *testing.T) {
	ctx := context.Background()
	type draw struct {
		text  string
		final bool
	}
	run := func(shownIDs []string) (*Pacer, *[]draw, func(context.Context, string, bool) error, func() []string) {
		p := NewPacer("Half")
		go p.Run(ctx, clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), time.Second, func(string) {})
		var draws []draw
		return p, &draws, func(_ context.Context, text string, final bool) error {
			draws = append(draws, draw{text, final})
			return nil
		}, func() []string { return shownIDs }
	}

	p, draws, show, ids := run([]string{"m1"})
	d, err := p.FinishBy(ctx, "Whole answer", show, ids)
	if err != nil || !slices.Equal(d.MessageIDs, []string{"m1"}) {
		t.Fatalf("FinishBy = %+v, %v", d, err)
	}
	if err := p.CancelBy(ctx, "", show, ids); err != nil {
		t.Fatal(err)
	}
	if want := []draw{{"Whole answer", true}}; !slices.Equal(*draws, want) {
		t.Fatalf("drawn %+v, want %+v", *draws, want)
	}

	p, draws, show, ids = run(nil)
	if err := p.CancelBy(ctx, "failed", show, ids); err != nil || len(*draws) != 0 {
		t.Fatalf("a cancel with nothing shown drew %+v (%v)", *draws, err)
	}

	p, draws, show, ids = run([]string{"m1"})
	p.Update("Half an answer")
	if err := p.CancelBy(ctx, "", show, ids); err != nil {
		t.Fatal(err)
	}
	if want := []draw{{"Half an answer\n\n_(stopped)_", true}}; !slices.Equal(*draws, want) {
		t.Fatalf("drawn %+v, want %+v", *draws, want)
	}
}
