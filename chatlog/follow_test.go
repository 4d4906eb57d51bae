package chatlog_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/chatlog"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

func TestChangedNamesTheChatsWithNewMessages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, c store.Config) {
		st := storetest.Open(t, c)
		ctx := context.Background()
		l := chatlog.New(st)
		if seq, err := l.Newest(ctx); err != nil || seq != 0 {
			t.Fatalf("newest of no messages: %d %v", seq, err)
		}
		conversation(t, st)
		start, err := l.Newest(ctx)
		if err != nil || start == 0 {
			t.Fatalf("newest: %d %v", start, err)
		}
		chats, newest, err := l.Changed(ctx, start)
		if err != nil || len(chats) != 0 || newest != start {
			t.Fatalf("nothing new: %v %d %v", chats, newest, err)
		}
		put(t, st, msg{other, "2", "Mallory", "one more", t0.Add(5 * time.Minute)})
		chats, newest, err = l.Changed(ctx, start)
		if err != nil || !slices.Equal(chats, []string{other}) || newest <= start {
			t.Fatalf("after one message of %s: %v %d %v", other, chats, newest, err)
		}
		// An edit keeps its seq: no change.
		if _, err := st.UpdateText(ctx, fam, "1", "edited"); err != nil {
			t.Fatal(err)
		}
		if chats, _, err := l.Changed(ctx, newest); err != nil || len(chats) != 0 {
			t.Fatalf("an edit is a change: %v %v", chats, err)
		}
	})
}

func TestFollowCallsWithEachNewChat(t *testing.T) {
	st := storetest.Open(t, storetest.Config(t, sqldialect.SQLite))
	conversation(t, st) // before since: not a change
	ctx, cancel := context.WithCancel(context.Background())
	since, err := chatlog.New(st).Newest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen [][]string
	done := make(chan struct{})
	go func() {
		defer close(done)
		chatlog.New(st).Follow(ctx, since, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), func(chats []string) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, chats)
		})
	}()
	put(t, st, msg{fam, "9", "Bob", "new", t0.Add(10 * time.Minute)})
	testwait.Until(t, "Follow reports the family chat", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen[0], []string{fam}) || len(seen) != 1 {
		t.Fatalf("follow saw %v, want only [%s]", seen, fam)
	}
}

// BenchmarkChatlogChanged is what botd run's look for new messages costs
// the database each second (chat marks for botd mcp): a million messages
// (BOTD_BENCH_MESSAGES), nothing new since the last look, then ten new.
func BenchmarkChatlogChanged(b *testing.B) {
	n := benchMessages(b)
	storetest.EachB(b, func(b *testing.B, cfg store.Config) {
		st := storetest.Open(b, cfg)
		fill(b, st, newCorpus(1), n)
		l := chatlog.New(st)
		ctx := context.Background()
		newest, err := l.Newest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("nothing new", func(b *testing.B) {
			for b.Loop() {
				if chats, _, err := l.Changed(ctx, newest); err != nil || len(chats) != 0 {
					b.Fatal(chats, err)
				}
			}
		})
		b.Run("ten new", func(b *testing.B) {
			for b.Loop() {
				if chats, _, err := l.Changed(ctx, newest-10); err != nil || len(chats) == 0 {
					b.Fatal(chats, err)
				}
			}
		})
	})
}
