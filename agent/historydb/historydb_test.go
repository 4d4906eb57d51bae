package historydb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/botd-dev/botd/agent/historydb"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func TestSummariesKeepOnlyTheNewest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		st := storetest.Open(t, c)
		s := historydb.New(st)
		now := time.Now()
		for i, text := range []string{"first", "second", "third"} {
			if err := s.SaveSummary(ctx, historydb.Summary{Folder: "family", UpToSeq: int64(10 * (i + 1)), Text: text, Created: now}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SaveSummary(ctx, historydb.Summary{Folder: "work", UpToSeq: 5, Text: "work's", Created: now}); err != nil {
			t.Fatal(err)
		}
		sm, ok, err := s.LatestSummary(ctx, "family")
		if err != nil || !ok || sm.Text != "third" || sm.UpToSeq != 30 {
			t.Fatalf("latest = %+v, %v, %v; want the third", sm, ok, err)
		}
		var n int
		st.DB.QueryRow(`SELECT COUNT(*) FROM agent_summaries`).Scan(&n)
		if n != 2 {
			t.Errorf("%d summaries kept, want 2 (the newest per group)", n)
		}
		if _, ok, _ := s.LatestSummary(ctx, "none"); ok {
			t.Errorf("a group without a summary has one")
		}
	})
}

// A note is the group's own: another group's note on the same ref is not
// returned, a second note on a ref replaces the first, and refs without
// a note are simply missing.
func TestNotesAreTheGroupsOwn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		s := historydb.New(storetest.Open(t, c))
		at := time.UnixMilli(1_700_000_000_000)
		for _, n := range []struct {
			folder string
			note   historydb.Note
		}{
			{"family", historydb.Note{Ref: "tg_A", Note: "a cat", RunID: "r1", Created: at}},
			{"family", historydb.Note{Ref: "tg_A", Note: "a red cat", RunID: "r2", Created: at.Add(time.Second)}},
			{"work", historydb.Note{Ref: "tg_B", Note: "the work's", RunID: "r3", Created: at}},
		} {
			if err := s.PutNote(ctx, n.folder, n.note); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Notes(ctx, "family", []string{"tg_A", "tg_B", "tg_none"})
		if err != nil {
			t.Fatal(err)
		}
		want := historydb.Note{Ref: "tg_A", Note: "a red cat", RunID: "r2", Created: at.Add(time.Second)}
		if len(got) != 1 || got["tg_A"] != want {
			t.Errorf("family's notes = %+v, want only %+v", got, want)
		}
		if got, err := s.Notes(ctx, "family", nil); got != nil || err != nil {
			t.Errorf("notes on no refs = %v, %v", got, err)
		}
	})
}

// /new leaves an empty summary at the newest message of the group's
// chats only (another group's newer message does not count) and moves the
// cursor there; a second /new moves both on.
func TestStartAfresh(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		ctx := context.Background()
		st := storetest.Open(t, c)
		s := historydb.New(st)
		for _, chat := range []string{"telegram:-100", "telegram:-200"} {
			if err := st.UpsertChat(ctx, store.Chat{ID: chat, IsGroup: true, LastMessageAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		put := func(chat, id string) int64 {
			t.Helper()
			seq, err := st.PutMessage(ctx, store.Message{ChatID: chat, ID: id, SenderID: "1", Text: "hi", Time: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			return seq
		}
		afresh := func(want int64) {
			t.Helper()
			if err := s.StartAfresh(ctx, "family", []string{"telegram:-100"}, time.Now()); err != nil {
				t.Fatal(err)
			}
			sm, ok, err := s.LatestSummary(ctx, "family")
			if err != nil || !ok || sm.Text != "" || sm.UpToSeq != want {
				t.Fatalf("summary after /new = %+v, %v, %v; want an empty one up to %d", sm, ok, err, want)
			}
			if cur, err := st.AgentCursor(ctx, "family"); err != nil || cur != want {
				t.Fatalf("cursor after /new = %d, %v; want %d", cur, err, want)
			}
		}
		if err := s.SaveSummary(ctx, historydb.Summary{Folder: "family", UpToSeq: 0, Text: "old talk", Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		put("telegram:-100", "1")
		mine := put("telegram:-100", "2")
		put("telegram:-200", "3") // another group's, newer
		afresh(mine)
		afresh(mine) // again, nothing new: the same
		afresh(put("telegram:-100", "4"))
		if _, ok, _ := s.LatestSummary(ctx, "club"); ok {
			t.Error("another group got a summary")
		}
	})
}
