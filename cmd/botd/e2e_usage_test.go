package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/telegram/telegramtest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/store"
)

// splitLine is a group's day in botd usage's split: runs, input tokens,
// then fixed prompt, tools, conversation and media, each with its share.
var splitLine = regexp.MustCompile(`(?m)^\s*family\s+\d{4}-\d\d-\d\d\s+(\d+)(?: \((\d+) not split\))?\s+(\d+)` +
	strings.Repeat(`\s+(\d+) \(\d+%\)`, 4) + `\s*$`)

// A question about a photo answered by the (Anthropic-wire) fake model,
// two turns reporting 100 and 200 input tokens: botd usage says where
// the 300 went, and every part has its share (the photo is media). A run
// stored before botd split the bill shows "—", not zeros.
func TestUsageShowsWhereTheInputTokensWent(t *testing.T) {
	const answer = "Split hello."
	r := newAgentRig(t, "anthropic", answer)
	photo := noisyJPEG(t, 800, 600)
	r.tg.AddFile(telegramtest.File{ID: "asked", Data: photo})
	r.tg.Enqueue(photoUpdate(-100, 100, "asked", len(photo), "look at this"),
		telegramtest.Text(telegramtest.Group(-100, "Family"), telegramtest.Person(42, "Ann"), 200, "@Andy what is in the photo?"))
	host := startBotd(t, r.dir, "run", "--config", "botd.yaml")
	testwait.Within(t, 60*time.Second, "the answer in the chat", func() bool { return len(r.answers(answer)) > 0 })
	host.stop(t) // the run is saved before botd exits

	out, code := runCLI(t, r.dir, "usage", "--runs", "5", "--config", "botd.yaml")
	if code != 0 || !strings.Contains(out, "Where the input tokens went") {
		t.Fatalf("botd usage (exit %d) has no split:\n%s", code, out)
	}
	m := splitLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no split line for family:\n%s", out)
	}
	n := make([]int64, len(m))
	for i, s := range m[1:] {
		n[i+1], _ = strconv.ParseInt(s, 10, 64)
	}
	runs, input, parts := n[1], n[3], n[4:]
	if runs != 1 || m[2] != "" || input != 300 {
		t.Errorf("split: %d run(s), %q not split, %d input tokens; want 1 run, all split, 300 tokens:\n%s", runs, m[2], input, out)
	}
	var sum int64
	for i, p := range parts {
		sum += p
		if p <= 0 {
			t.Errorf("%s: %d tokens, want some:\n%s", []string{"fixed prompt", "tools", "conversation", "media"}[i], p, out)
		}
	}
	if sum != input {
		t.Errorf("the parts sum to %d, not the input's %d:\n%s", sum, input, out)
	}
	// --runs lists the run itself with the same split.
	runLine := `(?m)^\s*\d{4}-\d\d-\d\d \d\d:\d\d\s+family\s+claude-sonnet-4-5\s+answered\s+300`
	for _, p := range parts {
		runLine += `\s+` + strconv.FormatInt(p, 10) + ` \(\d+%\)`
	}
	if !regexp.MustCompile(runLine + `\s*$`).MatchString(out) {
		t.Errorf("--runs does not list the run with its split (%v):\n%s", parts, out)
	}

	// A run as an older botd stored it, two days back: no split.
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(r.dir, "data", "botd.db"))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	_, err = st.DB.ExecContext(ctx, `INSERT INTO agent_runs(id, folder, started, finished, outcome, input_tokens, model)
		VALUES ('old-run', 'family', ?, ?, 'answered', 900, 'claude-sonnet-4-5')`, old.UnixMilli(), old.UnixMilli()+1000)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, code = runCLI(t, r.dir, "usage", "--runs", "5", "--config", "botd.yaml")
	if code != 0 || !regexp.MustCompile(`(?m)^\s*family\s+\S+\s+1 \(1 not split\)\s+—\s+—\s+—\s+—\s+—\s*$`).MatchString(out) {
		t.Errorf("the old run's day is not shown as not split (exit %d):\n%s", code, out)
	}
	if !regexp.MustCompile(`(?m)^\s*\S+ \S+\s+family\s+claude-sonnet-4-5\s+answered\s+900\s+—\s+—\s+—\s+—\s*$`).MatchString(out) {
		t.Errorf("--runs does not show the old run's split as —:\n%s", out)
	}
	t.Logf("botd usage:\n%s", out)
	if m := splitLine.FindStringSubmatch(out); m == nil || m[3] != "300" {
		t.Errorf("today's split changed with the old run:\n%s", out)
	}
}
