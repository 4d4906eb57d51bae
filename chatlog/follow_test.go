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
	"github.com/botd-dev/botd/internal/clock"
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
		chatlog.New(st).Follow(ctx, since, chatlog.Following{Gap: 10 * time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)), func(chats []string) {
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

// TestFollowIsIdleWithoutNews: a follower of a store no other process
// writes to (Poll 0) reads the database once at start, then not at all
// however long nothing is stored: it holds no timer, so no clock can wake
// it; it sleeps on the store's news alone. A message stored then is read
// at once; a burst is read in one look a Gap after the last; and a
// message stored while fn runs (the chat marks being written) is read at
// the next look, not lost.
func TestFollowIsIdleWithoutNews(t *testing.T) {
	st, counts := storetest.OpenCounting(t)
	conversation(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	since, err := chatlog.New(st).Newest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	var mu sync.Mutex
	var seen [][]string
	var putErr error
	calls := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	before := counts.Statements()
	done := make(chan struct{})
	go func() {
		defer close(done)
		chatlog.New(st).Follow(ctx, since, chatlog.Following{Gap: time.Second, Clock: clk}, slog.New(slog.NewTextHandler(io.Discard, nil)), func(chats []string) {
			mu.Lock()
			seen = append(seen, chats)
			first := len(seen) == 1
			mu.Unlock()
			if first {
				// Stored while the marks are written: the next look's.
				_, err := st.PutMessage(ctx, store.Message{ChatID: fam, ID: "during", SenderName: "Dan", Text: "while you wrote", Time: t0})
				mu.Lock()
				putErr = err
				mu.Unlock()
			}
		})
	}()
	defer func() { cancel(); <-done }()

	testwait.Until(t, "the look at start", func() bool { return counts.Statements() > before })
	idle := counts.Statements()
	if w := clk.Waiting(); len(w) != 0 {
		t.Fatalf("an idle follower holds timers %v: it would wake without news", w)
	}
	clk.Advance(time.Hour)
	if n := counts.Statements() - idle; n != 0 {
		t.Fatalf("idle for an hour, the follower ran %d statements", n)
	}
	if len(calls()) != 0 {
		t.Fatalf("nothing was stored, yet fn was called: %v", calls())
	}

	// The last look was an hour ago: a message is read at once.
	put(t, st, msg{other, "new1", "Mallory", "hello", t0.Add(time.Hour)})
	testwait.Until(t, "the stored message's chat reported", func() bool { return len(calls()) == 1 })
	if c := calls(); !slices.Equal(c[0], []string{other}) {
		t.Fatalf("first report %v, want [%s]", c[0], other)
	}
	// fn stored a message: the follower waits out the Gap, then reads it.
	testwait.Until(t, "the follower spacing its next look", func() bool { return len(clk.Waiting()) == 1 })
	mu.Lock()
	if putErr != nil {
		t.Fatal(putErr)
	}
	mu.Unlock()
	// A burst meanwhile joins the same look.
	put(t, st, msg{other, "new2", "Mallory", "one", t0.Add(time.Hour)}, msg{other, "new3", "Mallory", "two", t0.Add(time.Hour)})
	if len(calls()) != 1 {
		t.Fatalf("looked before the gap passed: %v", calls())
	}
	clk.Advance(time.Second)
	testwait.Until(t, "the message stored during fn and the burst reported", func() bool { return len(calls()) == 2 })
	c := calls()[1]
	slices.Sort(c)
	if want := []string{fam, other}; !slices.Equal(c, want) {
		t.Fatalf("second report %v, want %v in one look", c, want)
	}
}

// BenchmarkChatlogChanged is what botd run's look for new messages costs
// the database (chat marks for botd mcp; a look after each message stored,
// at most one a second, and one a minute on Postgres): a million messages
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
