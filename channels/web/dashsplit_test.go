package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/store"
)

// The dashboard says where the input tokens went: per group today (UTC)
// with each part's share, and per run in the runs list and on the run's
// page. A run recorded before botd split the bill shows "—", not 0;
// yesterday's runs are not today's.
func TestDashboardTokenSplit(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC))
	h := newHarness(t, withClock(fake.Now))
	ctx := context.Background()
	now := fake.Now()
	split := &store.TokenSplit{Prompt: 1200, Tools: 2600, Conversation: 310, Media: 1590}
	for _, r := range []store.AgentRun{
		{ID: "split", Folder: "main", Started: now.Add(-time.Hour), Outcome: "answered", Model: "m1", InputTokens: split.Total(), Split: split},
		{ID: "split2", Folder: "main", Started: now.Add(-2 * time.Hour), Outcome: "answered", Model: "m1", InputTokens: 100,
			Split: &store.TokenSplit{Prompt: 50, Tools: 50}},
		{ID: "old", Folder: "team", Started: now.Add(-3 * time.Hour), Outcome: "answered", Model: "m1", InputTokens: 900},
		{ID: "yesterday", Folder: "team", Started: now.Add(-20 * time.Hour), Outcome: "answered", Model: "m1", InputTokens: 70,
			Split: &store.TokenSplit{Conversation: 70}},
	} {
		if err := h.st.SaveRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	admin := h.admin()
	for _, path := range []string{"/admin", "/admin/live"} {
		resp, page := h.get(admin, path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		for _, want := range []*regexp.Regexp{
			// main: 5800 + 100 tokens, prompt 1250 (22%), tools 2650 (46%), conversation 310 (5%), media 1590 (27%).
			rowRE("split", "main", "2", "5800", "1250 (22%)", "2650 (46%)", "310 (5%)", "1590 (27%)"),
			// team today: only the old run, without a split.
			rowRE("split", "team", "1 (1 not split)", "—", "—", "—", "—", "—"),
			regexp.MustCompile(`data-run="split".*\n.*<div class="muted split">prompt 1200 · tools 2600 · conversation 310 · media 1590</div>`),
			regexp.MustCompile(`data-run="old".*\n.*<div class="muted split">—</div>`),
		} {
			if !want.MatchString(page) {
				t.Errorf("%s does not match %s", path, want)
			}
		}
		if strings.Contains(page, `<tr class="split" data-group="team"><td data-label="group">team</td><td class="num" data-label="runs">2`) {
			t.Errorf("%s counts yesterday's run as today's", path)
		}
	}
	for id, want := range map[string]string{"split": "prompt 1200 · tools 2600 · conversation 310 · media 1590", "old": "—"} {
		resp, page := h.get(admin, "/admin/runs/"+id)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<dd id="run-split">`+want+`</dd>`) {
			t.Errorf("run page of %s (%d) lacks its split %q", id, resp.StatusCode, want)
		}
	}
}

// rowRE matches a table row of class class for group folder whose cells
// are, in order, cells.
func rowRE(class, folder string, cells ...string) *regexp.Regexp {
	re := `<tr class="` + class + `" data-group="` + regexp.QuoteMeta(folder) + `">`
	re += `<td[^>]*>` + regexp.QuoteMeta(folder) + `</td>`
	for _, c := range cells {
		re += `\s*<td[^>]*>` + regexp.QuoteMeta(c) + `</td>`
	}
	return regexp.MustCompile(re)
}
