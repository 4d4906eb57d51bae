package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/store/storetest"
)

// withStandbyPoll sets how often a standby's event streams read new
// messages.
func withStandbyPoll(d time.Duration) harnessOpt {
	return func(_ *Config, o *Options) { o.standbyPoll = d }
}

// Two web servers on one database, A active and B standing by: what is
// posted and answered on A shows on B's room page and arrives on B's
// event stream (which reads the database); after A stops, an instance
// that takes over on another data_dir shows the whole history, numbered
// on, and a page resumes its stream there after what A had sent it.
func TestRoomHistoryShared(t *testing.T) {
	storetest.EachDialect(t, func(t *testing.T, d sqldialect.Dialect) {
		c := storetest.Config(t, d)
		a, b := pair(t, c, withLease(true, LeaseView{This: "beta", Active: "alpha", Epoch: 1}), withStandbyPoll(10*time.Millisecond))
		admin := a.admin()
		fromB := b.events(admin, "main", 0)
		fromA := a.events(admin, "main", 0)

		csrf := a.roomCSRF(admin, "main")
		var want []string
		for i := range 3 {
			text := fmt.Sprintf("question %d from A", i)
			if resp, body := a.post(admin, "main", csrf, "Ann", text); resp.StatusCode != http.StatusOK {
				t.Fatalf("post on A: %d %s", resp.StatusCode, body)
			}
			a.sink.Next(t)
			if _, err := a.w.Send(context.Background(), channels.OutMessage{Chat: "web:main", Text: fmt.Sprintf("**answer %d**", i)}); err != nil {
				t.Fatal(err)
			}
			want = append(want, text, fmt.Sprintf("answer %d", i))
		}
		for i, text := range want {
			m := fromB.message()
			if m.Seq != int64(i+1) || !strings.Contains(m.Text, text) {
				t.Fatalf("B's stream event %d = seq %d %q, want seq %d %q", i, m.Seq, m.Text, i+1, text)
			}
			if m.Assistant && !strings.Contains(string(m.HTML), "<strong>") {
				t.Errorf("B's stream shows an answer unrendered: %+v", m)
			}
		}
		_, page := b.get(admin, "/r/main")
		for _, text := range want {
			if !strings.Contains(page, text) {
				t.Errorf("B's room page lacks %q", text)
			}
		}
		if !strings.Contains(page, `data-last-seq="6"`) {
			t.Errorf("B's page does not resume after seq 6")
		}
		// The page on A saw the first two; it resumes on the next active.
		for range 2 {
			fromA.message()
		}
		a.stop()
		chantest.WaitReturns(t, a.w)

		next := newHarness(t, withStore(storetest.Open(t, c)), withSessionCheck(-1), withAdminToken(a.token))
		_, page = next.get(admin, "/r/main")
		for _, text := range want {
			if !strings.Contains(page, text) {
				t.Errorf("the instance that took over lacks %q", text)
			}
		}
		resumed := next.events(admin, "main", 2)
		if m := resumed.message(); m.Seq != 3 || m.Text != want[2] {
			t.Fatalf("resumed on the next active after seq 2: %+v", m)
		}
		dl, err := next.w.Send(context.Background(), channels.OutMessage{Chat: "web:main", Text: "after the failover"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			m := resumed.message()
			if m.ID == dl.MessageIDs[0] {
				if m.Seq != 7 {
					t.Fatalf("the first message after the failover has seq %d, want 7", m.Seq)
				}
				break
			}
		}
		if m := fromB.message(); m.Text != "after the failover" || m.Seq != 7 {
			t.Fatalf("B's stream after the failover: %+v", m)
		}
	})
}

// writeLog writes an older botd's room log: one JSON message a line.
func writeLog(t *testing.T, p string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func logLine(t *testing.T, m Message) string {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// An older botd's room log is imported at the first start, numbering
// included (a page resumes after the seq it had), and renamed; a line
// cut by a crash or too long is skipped; importing it again (a copy on
// another instance, or a crash before the rename) adds nothing; a
// standby leaves it for when it takes over.
func TestImportOldRoomLog(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "web", "rooms", "main.jsonl")
	at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	old := []Message{
		{Seq: 7, ID: "m7", Time: at, From: "Ann", Text: "from the old log"},
		{Seq: 8, ID: "m8", Time: at.Add(time.Minute), From: "Andy", Assistant: true, Text: "an **answer**", ReplyTo: "m7",
			Files: []FileInfo{{ID: "f1", Name: "a.png", MIME: "image/png", Size: 10}}},
		{Seq: 9, ID: "m9", Time: at.Add(2 * time.Minute), From: "Andy", Assistant: true, Text: "cut short", Note: "stopped"},
	}
	lines := []string{logLine(t, old[0]), `{"seq":8,"id":"cut`, logLine(t, old[1]),
		`{"seq":99,"id":"huge","text":"` + strings.Repeat("x", maxLogLine) + `"}`, logLine(t, old[2])}
	writeLog(t, p, lines...)
	copyOf := filepath.Join(t.TempDir(), "main.jsonl")
	writeLog(t, copyOf, lines...)

	// A standby writes nothing: the log stays for its takeover.
	sb := startHarness(t, dir, withLease(true, LeaseView{This: "beta", Active: "alpha"}))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("a standby moved the log: %v", err)
	}
	sb.stop()
	chantest.WaitReturns(t, sb.w)

	h := startHarness(t, dir)
	h.token = sb.token
	got := h.w.rooms["main"].recent(10)
	if len(got) != 3 {
		t.Fatalf("imported %d messages, want 3: %+v", len(got), got)
	}
	for i, m := range got {
		w := old[i]
		if !m.Time.Equal(w.Time) {
			t.Errorf("message %d time %v, want %v", i, m.Time, w.Time)
		}
		m.Time = w.Time
		if fmt.Sprint(m) != fmt.Sprint(w) {
			t.Errorf("message %d = %+v\nwant %+v", i, m, w)
		}
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the log was not moved away: %v", err)
	}
	if _, err := os.Stat(p + importedSuffix); err != nil {
		t.Errorf("no %s: %v", importedSuffix, err)
	}
	c := h.admin()
	if m := h.events(c, "main", 8).message(); m.ID != "m9" || m.Seq != 9 {
		t.Fatalf("a page that had seq 8 resumes with %+v", m)
	}
	d, _ := h.w.Send(context.Background(), channels.OutMessage{Chat: "web:main", Text: "new"})
	if m := h.events(c, "main", 9).message(); m.ID != d.MessageIDs[0] || m.Seq != 10 {
		t.Fatalf("the next message: %+v", m)
	}

	// The same log again, as another instance on this database would
	// import its copy: nothing is added.
	r := &room{name: "main", st: h.st, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := r.importLog(context.Background(), copyOf); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := h.st.DB.QueryRow(`SELECT COUNT(*) FROM web_room_messages WHERE room = 'main'`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("after importing the log again the room holds %d messages (%v), want 4", n, err)
	}
}

// A room log that is not a regular file stops the start with a sentence
// that says what to do, and nothing is imported.
func TestImportRoomLogNotAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "web", "rooms", "main.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, filepath.Join(dir, "botd.db"))
	r := &room{name: "main"}
	err := r.open(context.Background(), st, filepath.Join(dir, "web", "rooms"), false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "not a regular file; move it away") {
		t.Fatalf("open = %v", err)
	}
}

// BenchmarkRoomAdd is one message added to a room: its row appended
// (seq taken in the same statement), kept in memory and published to the
// room's pages (none here), with the trim every trimEvery messages.
// Before the rooms were in the database: an append to the room's log,
// 23–25 µs.
func BenchmarkRoomAdd(b *testing.B) {
	storetest.EachB(b, func(b *testing.B, c store.Config) {
		st := storetest.Open(b, c)
		r := &room{name: "main"}
		if err := r.open(context.Background(), st, b.TempDir(), false, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.add(Message{ID: newID(), Time: time.Now(), From: "Ann", Text: "see you at the station at six, bring the tickets please"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
