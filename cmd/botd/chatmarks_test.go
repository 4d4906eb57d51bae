package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/ipc"
	"github.com/botd-dev/botd/mcp"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

const markChat = "telegram:-100"

// markingDaemon is the part of botd run that writes the chat marks, over
// a SQLite store that counts its statements, with one group (family).
func markingDaemon(t testing.TB, clk clock.Clock) (*daemon, *storetest.Counts, string) {
	t.Helper()
	st, counts := storetest.OpenCounting(t)
	if err := st.UpsertChat(context.Background(), store.Chat{ID: markChat, Name: "Family", IsGroup: true}); err != nil {
		t.Fatal(err)
	}
	gs, err := groups.NewSet("Andy", []groups.Group{{Folder: "family", Chat: markChat}})
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	l := ipc.GroupLayout(filepath.Join(dataDir, "ipc"), "family")
	if err := os.MkdirAll(l.Root, 0o750); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cfg: &config.Config{DataDir: dataDir}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), store: st, groups: gs, clock: clk}
	return d, counts, filepath.Join(l.Root, mcp.ChatMark)
}

// startMarks runs d.markChats until the test ends.
func startMarks(t testing.TB, d *daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.markChats(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func storeAt(t testing.TB, st *store.Store, id string) {
	t.Helper()
	if _, err := st.PutMessage(context.Background(), store.Message{ChatID: markChat, ID: id, SenderName: "Bob", Text: "hi", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestIdleDaemonDoesNotReadForChatMarks: botd run on SQLite reads the
// messages for the chat marks at start (the newest, one look), then not
// once while nothing is stored, however far the clock moves — it holds no
// timer, so nothing but a stored message can wake it — and a message
// stored then marks its group's chat at once (the last look is long past
// the gap).
func TestIdleDaemonDoesNotReadForChatMarks(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	d, counts, mark := markingDaemon(t, clk)
	before := counts.Statements()
	startMarks(t, d)
	testwait.Until(t, "the reads at start (the newest message, one look)", func() bool { return counts.Statements()-before >= 2 })
	idle := counts.Statements()
	if w := clk.Waiting(); len(w) != 0 {
		t.Fatalf("an idle chat-mark writer holds timers %v: it would wake with nothing stored", w)
	}
	for range 60 {
		clk.Advance(time.Minute)
	}
	// And a stretch of real time, for a timer that would not go through
	// the clock (the old one-second ticker): with a writer that only
	// waits for news this can only pass, however loaded the machine.
	time.Sleep(3 * chatMarkGap)
	if n := counts.Statements() - idle; n != 0 {
		t.Fatalf("idle for an hour, the chat-mark writer ran %d statements", n)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a chat mark was written with nothing stored")
	}
	storeAt(t, d.store, "1")
	testwait.Until(t, "the stored message's chat mark", func() bool {
		_, err := os.Stat(mark)
		return err == nil
	})
}

// BenchmarkChatMarkLatency is the time from a message stored in botd run
// to its group's chat mark written (what botd mcp watches), each message
// a gap after the last as one an idle chat gets (the clock is moved by
// the gap, not slept through).
func BenchmarkChatMarkLatency(b *testing.B) {
	clk := clock.NewFake(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	d, counts, mark := markingDaemon(b, clk)
	before := counts.Statements()
	startMarks(b, d)
	// The look at start is over before the clock moves: it is the last.
	testwait.Until(b, "the reads at start", func() bool { return counts.Statements()-before >= 2 })
	var total time.Duration
	for i := range b.N {
		b.StopTimer()
		if err := os.Remove(mark); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
		clk.Advance(chatMarkGap)
		b.StartTimer()
		start := time.Now()
		storeAt(b, d.store, "m"+strconv.Itoa(i))
		for {
			if _, err := os.Stat(mark); err == nil {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/mark")
}
