package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
)

const diskConfig = `
assistant_name: Andy
data_dir: ./data
groups_dir: ./groups
log_level: debug
media:
  max_download_bytes: 200000
  inline_max_bytes: 100000
  max_disk_bytes: 400000
channels:
  telegram: {enabled: true, token: "%s", api_url: "%s"}
llm:
  providers:
    local: {type: openai, base_url: "http://127.0.0.1:9/v1"}
  model: {provider: local, name: test-model}
groups:
  - {folder: family, name: Family, chat: "telegram:-100"}
  - {folder: work, name: Work, chat: "telegram:-200"}
`

// bytesUnder sums the regular files under the folders (relative to dir).
func bytesUnder(t *testing.T, dir string, folders ...string) int64 {
	t.Helper()
	var n int64
	for _, d := range folders {
		filepath.WalkDir(filepath.Join(dir, d), func(_ string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				if fi, err := e.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
	}
	return n
}

// The real daemon under a small disk budget: fetching past it evicts the
// least recently used bytes; `botd media` reports each group beside the
// running daemon and prunes one group; a ref from yesterday is fetchable
// after a restart, and one past its lifetime says how old it is.
func TestDiskBudgetAndLifetimeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tg := telegramtest.New(t)
	writeFile(t, filepath.Join(dir, "botd.yaml"), fmt.Sprintf(diskConfig, tgToken, tg.URL()))
	const size = 120_000 // stored twice per fetch: the cache's blob and the group's copy
	for i := range 6 {
		data := make([]byte, size)
		rand.Read(data)
		id := fmt.Sprintf("doc%d", i)
		tg.AddFile(telegramtest.File{ID: id, Data: data})
		chat := int64(-100)
		if i == 5 {
			chat = -200
		}
		tg.Enqueue(docUpdate(chat, 10+i, id, id+".bin", "application/octet-stream", size))
	}

	host := startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	fam := mcpStdio(t, dir, "botd.yaml", "family")
	refs := refsByName(t, fam, 5)
	cacheDir := filepath.Join("data", "media")
	famDir, workDir := filepath.Join("groups", "family", "media"), filepath.Join("groups", "work", "media")
	for i := range 3 {
		ref := refNamed(t, refs, fmt.Sprintf("doc%d.bin", i))
		if res := callTool(t, fam, "fetch_media", map[string]any{"mediaRef": ref}); res.IsError {
			t.Fatalf("fetch doc%d: %s", i, resultText(res))
		}
		// Each fetch stores 240 kB against a budget of 400 kB; the
		// sweeper, woken by the fetch, brings it back under.
		testwait.Within(t, 30*time.Second, "bytesUnder(t, dir, cacheDir, famDir, workDir) <= 400_000", func() bool { return bytesUnder(t, dir, cacheDir, famDir, workDir) <= 400_000 })
	}
	// Work's document last: the most recently used, it stays.
	work := mcpStdio(t, dir, "botd.yaml", "work")
	workRef := refNamed(t, refsByName(t, work, 1), "doc5.bin")
	if res := callTool(t, work, "fetch_media", map[string]any{"mediaRef": workRef}); res.IsError {
		t.Fatalf("fetch work's doc: %s", resultText(res))
	}
	testwait.Within(t, 30*time.Second, "bytesUnder(t, dir, cacheDir, famDir, workDir) <= 400_000", func() bool { return bytesUnder(t, dir, cacheDir, famDir, workDir) <= 400_000 })
	if !strings.Contains(host.Logs(), "evicted least recently used files") {
		t.Errorf("no eviction was logged:\n%s", host.Logs())
	}

	// Beside the running daemon: the report, then a prune of one group.
	out, code := runCLI(t, dir, "media", "--config", "botd.yaml")
	if code != 0 {
		t.Fatalf("botd media: exit %d\n%s", code, out)
	}
	for _, want := range []string{"GROUP", "family", "work", "(cache)", "of 391KB (media.max_disk_bytes)"} {
		if !strings.Contains(out, want) {
			t.Errorf("botd media lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^\s*family\s+5\s+3\s+586KB\s+352KB\s`).MatchString(out) {
		t.Errorf("family's row should show 5 refs, 3 fetched, 586KB posted, 352KB downloaded:\n%s", out)
	}
	out, code = runCLI(t, dir, "media", "prune", "--group", "family", "--config", "botd.yaml")
	if code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("botd media prune --group family: exit %d\n%s", code, out)
	}
	if n := bytesUnder(t, dir, famDir); n != 0 {
		t.Errorf("family's folder still holds %d bytes after its prune", n)
	}
	if n := bytesUnder(t, dir, workDir); n != size {
		t.Errorf("work's folder holds %d bytes after family's prune, want its %d untouched", n, size)
	}
	if _, code := runCLI(t, dir, "media", "prune", "--older-than", "soon", "--config", "botd.yaml"); code != 2 {
		t.Errorf("a bad --older-than exits %d, want 2", code)
	}
	host.stop(t)

	// Move two refs back in time: doc3 was shared yesterday; doc4 40 days
	// ago, and its lifetime (30 days on Telegram) ended 10 days ago.
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	day := int64(24 * time.Hour / time.Millisecond)
	now := time.Now().UnixMilli()
	for _, q := range []struct {
		ref              string
		created, expires int64
	}{
		{refNamed(t, refs, "doc3.bin"), now - day, now + 29*day},
		{refNamed(t, refs, "doc4.bin"), now - 40*day, now - 10*day},
	} {
		if _, err := st.DB.Exec(`UPDATE media_refs SET created = ?, expires = ? WHERE id = ?`, q.created, q.expires, q.ref); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	host = startBotd(t, dir, "run", "--config", "botd.yaml")
	host.waitLog(t, "botd running")
	fam = mcpStdio(t, dir, "botd.yaml", "family")
	if res := callTool(t, fam, "fetch_media", map[string]any{"mediaRef": refNamed(t, refs, "doc3.bin")}); res.IsError {
		t.Errorf("yesterday's document is not fetchable: %s", resultText(res))
	}
	res := callTool(t, fam, "fetch_media", map[string]any{"mediaRef": refNamed(t, refs, "doc4.bin")})
	if !res.IsError {
		t.Fatalf("a ref 10 days past its lifetime was fetched: %s", resultText(res))
	}
	for _, want := range []string{"shared 40d ago", "expired 10d ago", "telegram", "media.ref_ttl"} {
		if !strings.Contains(resultText(res), want) {
			t.Errorf("the expired ref's error lacks %q: %s", want, resultText(res))
		}
	}
	host.stop(t)
}

// The scenario: the main group's own upload in its web room is
// fetched; a room-link guest's uploads push the disk budget over, and
// the sweeper evicts what it may (the group's copy and the cached bytes,
// never the upload, the only copy). A fetch of the ref afterwards places
// it again from that upload and returns the same bytes; no error names a
// path.
func TestEvictedCopyIsPlacedAgainEndToEnd(t *testing.T) {
	dir := t.TempDir()
	// The sweeper runs all the time, not only when woken: whenever a
	// fetch lets go of the group's copy before its caller has opened it,
	// a sweep is there to evict it.
	writeFile(t, filepath.Join(dir, "botd.yaml"), strings.Replace(guestConfig, "sweep_interval: 1h", "sweep_interval: 20ms", 1))
	p := startBotdEnv(t, dir, minimalEnv(t.TempDir()), "run", "--config", "botd.yaml")
	base, token := p.urlLine(t)
	p.waitLog(t, "botd running")

	owner := webLogin(t, base, token)
	// Text, so that fetch_media hands the model the bytes themselves.
	var own strings.Builder
	for i := 0; own.Len() < 90_000; i++ {
		fmt.Fprintf(&own, "line %05d of the owner's notes\n", i)
	}
	if st, body := owner.upload("main", "notes.txt", []byte(own.String())); st != http.StatusOK {
		t.Fatalf("owner upload: %d %s", st, body)
	}
	if st, body := owner.upload("main", "other.txt", []byte("another file of the owner's\n")); st != http.StatusOK {
		t.Fatalf("owner upload: %d %s", st, body)
	}
	mainMCP := mcpStdio(t, dir, "botd.yaml", "main")
	refs := refsByName(t, mainMCP, 2)
	ref := refNamed(t, refs, "notes.txt")
	if first := callTool(t, mainMCP, "fetch_media", map[string]any{"mediaRef": ref}); first.IsError || embeddedText(first) != own.String() {
		t.Fatalf("first fetch: %s", resultText(first))
	}
	// The group's last fetch is another file: the sweeps leave only the
	// copy a fetch just handed over (diskbudget.HandOff), so the notes'
	// copy may now be evicted.
	if res := callTool(t, mainMCP, "fetch_media", map[string]any{"mediaRef": refNamed(t, refs, "other.txt")}); res.IsError {
		t.Fatalf("fetch of the other file: %s", resultText(res))
	}

	guest := joinAsGuest(t, owner, base, "guests")
	for i := range 10 {
		data := make([]byte, 100_000)
		rand.Read(data)
		st, body := guest.upload("guests", fmt.Sprintf("g%d.bin", i), data)
		if st == http.StatusInsufficientStorage {
			break
		}
		if st != http.StatusOK {
			t.Fatalf("guest upload %d: %d %s", i, st, body)
		}
	}
	// The sweeper evicts the main group's copy of the notes and the
	// cached bytes; the upload, the only copy, stays.
	notesCopy := filepath.Join(dir, "groups", "main", "media", ref+"_notes.txt")
	testwait.Within(t, 30*time.Second, "the main group's copy of the notes evicted", func() bool {
		_, err := os.Stat(notesCopy)
		return errors.Is(err, fs.ErrNotExist) && bytesUnder(t, dir, filepath.Join("data", "media")) < int64(own.Len())
	})

	for i := range 5 {
		res := callTool(t, mainMCP, "fetch_media", map[string]any{"mediaRef": ref})
		if res.IsError {
			if strings.Contains(resultText(res), dir) || strings.Contains(resultText(res), "media/") {
				t.Errorf("the error names a path: %s", resultText(res))
			}
			t.Fatalf("fetch %d after the eviction: %s", i, resultText(res))
		}
		if got := embeddedText(res); got != own.String() {
			t.Fatalf("fetch %d after the eviction returned %d other bytes, want the upload's %d", i, len(got), own.Len())
		}
	}
	p.stop(t)
}

// embeddedText is the text of a tool result's embedded resources.
func embeddedText(r *mcpgo.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if e, ok := c.(mcpgo.EmbeddedResource); ok {
			if tr, ok := e.Resource.(mcpgo.TextResourceContents); ok {
				b.WriteString(tr.Text)
			}
		}
	}
	return b.String()
}
