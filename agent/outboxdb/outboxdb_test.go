package outboxdb_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func TestOutboxLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		st := storetest.Open(t, c)
		s := outboxdb.New(st)
		id, err := s.Add(ctx, outboxdb.Item{Folder: "fam", ChatID: "telegram:1", UpToSeq: 9, Text: "hi", Media: []string{"media/a.png"}, ThreadID: "th"})
		if err != nil {
			t.Fatal(err)
		}
		other, _ := s.Add(ctx, outboxdb.Item{Folder: "work", ChatID: "slack:C1", UpToSeq: 3, Text: "yo"})
		pend, err := s.Pending(ctx, "fam")
		if err != nil || len(pend) != 1 || pend[0].ID != id || !reflect.DeepEqual(pend[0].Media, []string{"media/a.png"}) || pend[0].ThreadID != "th" {
			t.Fatalf("pending = %+v, %v", pend, err)
		}
		if all, _ := s.Pending(ctx, ""); len(all) != 2 {
			t.Fatalf("all pending = %d, want 2", len(all))
		}
		if err := s.Progress(ctx, id, 1); err != nil {
			t.Fatal(err)
		}
		if n, err := s.AttemptFailed(ctx, id, "boom"); n != 1 || err != nil {
			t.Fatalf("attempts = %d, %v", n, err)
		}
		if err := s.Complete(ctx, id); err != nil {
			t.Fatal(err)
		}
		it, _ := s.Get(ctx, id)
		if it.Status != outboxdb.Sent || it.PartsDone != 1 || it.LastError != "boom" {
			t.Errorf("item after completion = %+v", it)
		}
		if c, _ := st.AgentCursor(ctx, "fam"); c != 9 {
			t.Errorf("cursor = %d, want 9", c)
		}
		// Completing twice is an error and changes nothing.
		if err := s.Complete(ctx, id); err == nil {
			t.Error("second completion succeeded")
		}
		if err := s.Abandon(ctx, other, "chat gone"); err != nil {
			t.Fatal(err)
		}
		if c, _ := st.AgentCursor(ctx, "work"); c != 0 {
			t.Errorf("abandoning moved the cursor to %d", c)
		}
		if all, _ := s.Pending(ctx, ""); len(all) != 0 {
			t.Errorf("still pending: %+v", all)
		}
	})
}

func TestOutboxKeepsLiveIDs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		s := outboxdb.New(storetest.Open(t, c))
		for _, ids := range [][]string{nil, {"5", "6"}} {
			id, err := s.Add(ctx, outboxdb.Item{Folder: "family", ChatID: "telegram:-1", Text: "answer", LiveIDs: ids})
			if err != nil {
				t.Fatal(err)
			}
			it, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(it.LiveIDs) != len(ids) || (len(ids) > 0 && !slices.Equal(it.LiveIDs, ids)) {
				t.Errorf("live ids = %q, want %q", it.LiveIDs, ids)
			}
		}
	})
}

// The outbox's writes are fenced: once another instance took the lease,
// the stale holder adds, claims, completes and records progress of
// nothing, and the new holder delivers what is pending with its epoch.
func TestOutboxWritesOfAStaleHolder(t *testing.T) {
	const ttl = 30 * time.Second
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		sa, sb := storetest.Open(t, c), storetest.Open(t, c)
		sa.RequireLease()
		sb.RequireLease()
		a, b := outboxdb.New(sa), outboxdb.New(sb)
		if _, err := a.Add(ctx, outboxdb.Item{Folder: "fam", ChatID: "telegram:1", UpToSeq: 1, Text: "hi"}); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("an answer queued standing by: %v", err)
		}
		if _, ok, err := sa.TryAcquireLease(ctx, "A", t0, ttl); !ok || err != nil {
			t.Fatal(ok, err)
		}
		first, err := a.Add(ctx, outboxdb.Item{Folder: "fam", ChatID: "telegram:1", UpToSeq: 5, Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		second, err := a.Add(ctx, outboxdb.Item{Folder: "fam", ChatID: "telegram:1", UpToSeq: 7, Text: "again"})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Claim(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := a.Complete(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := a.Claim(ctx, first); !errors.Is(err, outboxdb.ErrDone) {
			t.Errorf("claim of a sent item: %v, want ErrDone", err)
		}

		// A stops renewing; B takes over after the lapse.
		if _, ok, err := sb.TryAcquireLease(ctx, "B", t0.Add(ttl), ttl); !ok || err != nil {
			t.Fatal(ok, err)
		}
		for what, write := range map[string]func() error{
			"add": func() error {
				_, err := a.Add(ctx, outboxdb.Item{Folder: "fam", ChatID: "telegram:1", UpToSeq: 8, Text: "late"})
				return err
			},
			"claim":      func() error { return a.Claim(ctx, second) },
			"completion": func() error { return a.Complete(ctx, second) },
			"progress":   func() error { return a.Progress(ctx, second, 1) },
		} {
			if err := write(); !errors.Is(err, store.ErrFenced) {
				t.Errorf("outbox %s by the stale holder: %v, want ErrFenced", what, err)
			}
		}
		// Nothing of it landed.
		if it, _ := b.Get(ctx, second); it.Status != outboxdb.Pending || it.PartsDone != 0 {
			t.Errorf("stale writes changed the outbox item: %+v", it)
		}
		if items, _ := b.Pending(ctx, "fam"); len(items) != 1 || items[0].ID != second {
			t.Errorf("pending answers after the stale writes: %+v, want only the second", items)
		}
		if cur, _ := sb.AgentCursor(ctx, "fam"); cur != 5 {
			t.Errorf("cursor = %d, want 5 (A's delivery)", cur)
		}
		// The new holder delivers it, under its epoch.
		if err := b.Claim(ctx, second); err != nil {
			t.Fatal(err)
		}
		if err := b.Complete(ctx, second); err != nil {
			t.Fatal(err)
		}
		if cur, _ := sb.AgentCursor(ctx, "fam"); cur != 7 {
			t.Errorf("cursor after B's delivery = %d, want 7", cur)
		}
		var claimed int64
		sb.DB.QueryRowContext(ctx, `SELECT claimed_epoch FROM agent_outbox WHERE id = ?`, second).Scan(&claimed)
		if claimed != 2 {
			t.Errorf("claimed_epoch = %d, want 2", claimed)
		}
	})
}

// BenchmarkFencedDelivery: an answer's claim and completion (with its
// cursor move), unfenced and fenced by a held lease: what the epoch check
// in each transaction costs.
func BenchmarkFencedDelivery(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, c store.Config) {
		for _, fenced := range []bool{false, true} {
			name := "unfenced"
			if fenced {
				name = "fenced"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				st := storetest.Open(b, c)
				if fenced {
					if _, ok, err := st.TryAcquireLease(ctx, "A", time.Now(), time.Hour); !ok || err != nil {
						b.Fatal(ok, err)
					}
				}
				ob := outboxdb.New(st)
				ids := make([]int64, b.N)
				for i := range ids {
					id, err := ob.Add(ctx, outboxdb.Item{Folder: "fam", ChatID: "telegram:1", UpToSeq: int64(i + 1), Text: "hi"})
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = id
				}
				b.ResetTimer()
				for _, id := range ids {
					if err := ob.Claim(ctx, id); err != nil {
						b.Fatal(err)
					}
					if err := ob.Complete(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
