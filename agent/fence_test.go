package agent

import (
	"context"
	"testing"
	"time"

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
		id, err := h.st.AddOutbox(ctx, store.OutboxItem{Folder: "family", ChatID: famChat, UpToSeq: seq, Text: "At seven.", ReplyTo: q})
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
		it, err := b.Outbox(ctx, id)
		if err != nil || it.Status != store.OutboxPending || it.Attempts != 0 || h.cursor("family") != 0 {
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
