package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

// An instance that lost the lease sends nothing of its outbox, counts no
// failed attempt and leaves the cursor; the instance that took over
// delivers the answer, once.
func TestStaleInstanceSendsNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
			t.Error("the model was asked again for an answer already in the outbox")
			return nil, errScript
		})
		h := newHarnessOn(t, c, f, nil)
		ctx := context.Background()
		now := time.Now()
		if _, ok, err := h.st.TryAcquireLease(ctx, "A", now, 30*time.Second); !ok || err != nil {
			t.Fatal(ok, err)
		}
		q := h.say(famChat, "Alice", "@Andy when is dinner?")
		seq := h.lastSeq(famChat)
		id, err := outboxdb.New(h.st).Add(ctx, outboxdb.Item{Folder: "family", ChatID: famChat, UpToSeq: seq, Text: "At seven.", ReplyTo: q})
		if err != nil {
			t.Fatal(err)
		}
		b := storetest.Open(t, c)
		if _, ok, err := b.TryAcquireLease(ctx, "B", now.Add(30*time.Second), 30*time.Second); !ok || err != nil {
			t.Fatal(ok, err)
		}

		h.start()
		h.idle()
		if got := h.tg.Sent(); len(got) != 0 {
			t.Fatalf("the stale instance sent %q", sentTexts(got))
		}
		it, err := outboxdb.New(b).Get(ctx, id)
		if err != nil || it.Status != outboxdb.Pending || it.Attempts != 0 || h.cursor("family") != 0 {
			t.Fatalf("after the stale instance: %+v, %v, cursor %d", it, err, h.cursor("family"))
		}

		// The instance that holds the lease: the same channel, its store.
		h.st = b
		h.restart(nil)
		h.idle()
		if got := h.tg.Sent(); len(got) != 1 || got[0].Text != "At seven." {
			t.Fatalf("the new active sent %q", sentTexts(got))
		}
		if h.cursor("family") != seq {
			t.Errorf("cursor = %d, want %d", h.cursor("family"), seq)
		}
	})
}

// An instance frozen in the middle of a run past its lease (the model's
// answer reaches it after another instance took over), thawed before its
// own lease timers stop it, shows nothing: no typing renewed, no live
// answer begun, and no answer left in the outbox for the instance that
// took over to send a second time. That one answers, once.
func TestThawedInstanceShowsNothing(t *testing.T) {
	c := store.Config{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "botd.db")}
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	gate, asked := make(chan struct{}), make(chan struct{})
	sl := &streamLLM{script: func(n int) []step {
		if n == 1 {
			close(asked)
			return append([]step{{gate: gate}}, answerSteps("Dinner", " is at seven.")...)
		}
		return answerSteps("Dinner is at seven.")
	}}
	stg := chantest.NewStreaming("telegram")
	h := newHarnessOn(t, c, newFakeLLM(nil), func(o *Options) {
		o.LLM, o.Time.Clock = sl, clk
		o.Channels["telegram"] = stg
	})
	// The channel asks the store's lease where its calls leave, as every
	// channel does (channels.Env.Fence); the agent checks nothing itself.
	stg.Fence = h.st
	ctx := context.Background()
	if _, ok, err := h.st.TryAcquireLease(ctx, "A", t0, 30*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	h.start()
	h.say(famChat, "Alice", "@Andy when is dinner?")
	testwait.Until(t, "the model asked", func() bool {
		select {
		case <-asked:
			return true
		default:
			return false
		}
	})
	waitTimer(t, clk, t0.Add(typingEvery))
	typed := stg.TypingShown(famChat)
	if typed != 1 {
		t.Fatalf("typing shown %d times while holding the lease, want 1", typed)
	}

	// Frozen here past the lease: B takes over.
	b := storetest.Open(t, c)
	if _, ok, err := b.TryAcquireLease(ctx, "B", t0.Add(30*time.Second), 30*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Thawed: the typing renewal comes due (the next one waiting shows
	// this one was tried), then the model's answer arrives.
	clk.Advance(typingEvery)
	waitTimer(t, clk, t0.Add(2*typingEvery))
	close(gate)
	h.idle()
	if n := stg.TypingShown(famChat); n != typed {
		t.Errorf("typing renewed %d times after the lease was taken", n-typed)
	}
	if evs, sent := stg.Events(), stg.Sent(); len(evs)+len(sent) != 0 {
		t.Fatalf("the thawed instance showed %q and sent %q", kinds(evs), sentTexts(sent))
	}
	if items, err := outboxdb.New(b).Pending(ctx, "family"); err != nil || len(items) != 0 {
		t.Fatalf("the thawed instance left %d answers in the outbox (%v)", len(items), err)
	}

	// The instance that holds the lease answers, once.
	h.st = b
	stg.Fence = b
	h.restart(func(o *Options) {
		o.LLM, o.Time.Clock = sl, clk
		o.Channels["telegram"] = stg
	})
	h.idle()
	if fin := stg.EventsOf(chantest.LiveFinish); len(fin) != 1 || fin[0].Text != "Dinner is at seven." {
		t.Errorf("the new holder's answer: %q, sent %q", kinds(stg.Events()), sentTexts(stg.Sent()))
	}
	if h.cursor("family") != h.lastSeq(famChat) {
		t.Errorf("cursor = %d, want %d", h.cursor("family"), h.lastSeq(famChat))
	}
}
