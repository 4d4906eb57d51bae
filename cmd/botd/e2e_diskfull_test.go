//go:build linux

package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
)

// mountTmpfs mounts a tmpfs of size bytes on dir for the test, or skips
// the test when this process may not mount (not root, no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0750", size)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs at %s: %v", dir, err)
		}
	})
}

// fillUp writes path until the filesystem has no room left.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	// The last bytes of a page: what a smaller write could still use.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
}

// TestDiskFullDelaysAnswersNeverLosesThem runs botd with data_dir on a
// small tmpfs and fills it while four messages (three texts, one asking
// the assistant, and a photo) arrive from Telegram. While the disk is full none
// is confirmed to Telegram (the fake keeps all four); once space is freed
// botd catches up by itself: every message is stored once, the photo
// with its ref, and the question answered exactly once.
func TestDiskFullDelaysAnswersNeverLosesThem(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end fault test")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	mountTmpfs(t, data, 32<<20)
	tg := telegramtest.New(t)
	model := newFaultModel(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(faultConfig, telegramtest.Token, tg.URL(), model.srv.URL))
	p := startBotd(t, dir, "run", "--config", "botd.yaml")
	p.waitLog(t, "botd running")

	answers := func(q string) int {
		n := 0
		for _, s := range tg.Sent() {
			if s.Method == "sendMessage" && strings.HasPrefix(s.Text, "ANS") && slices.Contains(strings.Fields(s.Text), q) {
				n++
			}
		}
		return n
	}
	// A first question: botd answers with the disk healthy.
	tg.Enqueue(faultMsg{chat: -100, id: 1, trigger: "q001"}.update())
	testwait.Until(t, "the answer to q001", func() bool { return answers("q001") == 1 })

	filler := filepath.Join(data, "filler")
	fillUp(t, filler)
	tg.AddFile(telegramtest.File{ID: "held-photo", Data: pngOf(t, 16, 16)})
	tg.Enqueue(
		faultMsg{chat: -100, id: 2}.update(),
		photoUpdate(-100, 3, "held-photo", 300, "a photo"),
		faultMsg{chat: -100, id: 4, trigger: "q002"}.update(),
		faultMsg{chat: -100, id: 5}.update(),
	)
	p.waitLog(t, "store refused a message")
	if !strings.Contains(p.Logs(), "database or disk is full") {
		t.Errorf("the refusal does not name the full disk:\n%s", p.Logs())
	}
	if n := tg.Pending(); n != 4 {
		t.Fatalf("%d of 4 updates unconfirmed at Telegram while the disk is full, want 4", n)
	}
	// The disk stays full a while longer: several retries at growing
	// waits. This only prolongs the fault; every verdict below waits on a
	// condition.
	time.Sleep(2 * time.Second)
	if n := tg.Pending(); n != 4 {
		t.Fatalf("%d of 4 updates unconfirmed at Telegram after the disk was full for 2 s, want 4", n)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the answer to q002", func() bool { return answers("q002") >= 1 })
	testwait.Until(t, "every update confirmed", func() bool { return tg.Pending() == 0 })
	p.waitLog(t, "store takes messages again")
	// A last question: the runs of a group are serial, so a second answer
	// to q002 would have come before this one's.
	tg.Enqueue(faultMsg{chat: -100, id: 6, trigger: "q003"}.update())
	testwait.Until(t, "the answer to q003", func() bool { return answers("q003") == 1 })
	p.stop(t)

	for _, q := range []string{"q001", "q002", "q003"} {
		if n := answers(q); n != 1 {
			t.Errorf("%s answered %d times, want once", q, n)
		}
	}
	if n := strings.Count(p.Logs(), "store refused a message"); n != 1 {
		t.Errorf("the outage was logged %d times, want once (not once per retry)", n)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "botd.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, text FROM messages WHERE chat_id = 'telegram:-100' AND from_me = 0 ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	texts := map[string]string{}
	for rows.Next() {
		var id, text string
		if err := rows.Scan(&id, &text); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		texts[id] = text
	}
	rows.Close()
	if want := []string{"1", "2", "3", "4", "5", "6"}; !slices.Equal(ids, want) {
		t.Fatalf("stored messages %v, want %v: each once, in order", ids, want)
	}
	ref := refRe.FindStringSubmatch(texts["3"])
	if ref == nil {
		t.Fatalf("the photo sent while the disk was full lost its ref: %q", texts["3"])
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM media_refs WHERE id = ? AND message_id = '3'`, ref[1]).Scan(&n); err != nil || n != 1 {
		t.Errorf("the photo's ref %s: %d rows (%v), want 1", ref[1], n, err)
	}
}
