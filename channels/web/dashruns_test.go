package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
)

// The dashboard pages through runs, filters them by group and outcome,
// serves the part that refreshes itself, and opens a run.
func TestDashboardRuns(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	now := time.Now()
	// 25 answered runs in main (newest r24), 3 failed in team, one run
	// without a model.
	for i := range 25 {
		h.st.SaveRun(ctx, store.AgentRun{ID: fmt.Sprintf("r%02d", i), Folder: "main", Started: now.Add(time.Duration(i-100) * time.Minute),
			Outcome: "answered", Model: "m1"}, nil)
	}
	for i := range 3 {
		h.st.SaveRun(ctx, store.AgentRun{ID: fmt.Sprintf("f%d", i), Folder: "team", Started: now.Add(time.Duration(i-200) * time.Minute),
			Outcome: "model_failed", Error: "boom"}, nil)
	}
	call := `[{"kind":"text","text":"let me check"},{"kind":"tool_call","tool_call":{"id":"c1","name":"fetch_url","args":{"url":"https://example.org/<x>"}}}]`
	result := `[{"kind":"tool_result","tool_result":{"call_id":"c1","content":[{"kind":"text","text":"the page says <b>hi</b>"}]}}]`
	if err := h.st.SaveRun(ctx, store.AgentRun{ID: "nomodel", Folder: "team", Started: now, Finished: now.Add(1500 * time.Millisecond), Outcome: "answered",
		Iterations: 2, InputTokens: 10, OutputTokens: 5, CostKnown: true,
		Attempts: []store.Attempt{{At: now, Provider: "fake", Model: "gpt-x", Outcome: "ok", Input: 10, Output: 5, Duration: 700 * time.Millisecond, CostKnown: true, CostMicrocents: 1000}}},
		[]store.TranscriptEntry{{Role: "user", Parts: json.RawMessage(`[{"kind":"text","text":"hi"}]`)},
			{Role: "assistant", Parts: json.RawMessage(call)}, {Role: "tool", Parts: json.RawMessage(result)},
			{Role: "assistant", Parts: json.RawMessage(`[{"kind":"text","text":"done"}]`)}}); err != nil {
		t.Fatal(err)
	}
	admin := h.admin()
	runsOf := func(page string) []string {
		var ids []string
		for _, m := range runRowRE.FindAllStringSubmatch(page, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	for _, tc := range []struct {
		path        string
		first, last string
		n           int
		next, prev  bool
	}{
		{"/admin", "nomodel", "r06", 20, true, false},
		{"/admin?page=2", "r05", "f0", 9, false, true},
		{"/admin?group=team", "nomodel", "f0", 4, false, false},
		{"/admin?outcome=model_failed", "f2", "f0", 3, false, false},
		{"/admin/live?group=main&page=2", "r04", "r00", 5, false, true},
		{"/admin?group=team&outcome=answered", "nomodel", "nomodel", 1, false, false},
	} {
		resp, page := h.get(admin, tc.path)
		ids := runsOf(page)
		if resp.StatusCode != http.StatusOK || len(ids) != tc.n || ids[0] != tc.first || ids[len(ids)-1] != tc.last ||
			strings.Contains(page, `id="runs-next"`) != tc.next || strings.Contains(page, `id="runs-prev"`) != tc.prev {
			t.Errorf("%s: %d, runs %v, next %v prev %v", tc.path, resp.StatusCode, ids,
				strings.Contains(page, `id="runs-next"`), strings.Contains(page, `id="runs-prev"`))
		}
		if strings.HasPrefix(tc.path, "/admin/live") && (strings.Contains(page, "<html") || strings.Contains(page, `id="new-link"`)) {
			t.Errorf("%s is not a fragment", tc.path)
		}
	}
	_, page := h.get(admin, "/admin?group=team&outcome=answered")
	if !strings.Contains(page, "no model configured") {
		t.Error("a run without a model reads other than \"no model configured\"")
	}

	resp, run := h.get(admin, "/admin/runs/nomodel")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run page: %d", resp.StatusCode)
	}
	for _, want := range []string{"no model configured", "fake/gpt-x", "700ms", "1.5s", "fetch_url",
		`&#34;url&#34;: &#34;https://example.org/&lt;x&gt;&#34;`, "the page says &lt;b&gt;hi&lt;/b&gt;", "model turn 2", "10 in / 5 out"} {
		if !strings.Contains(run, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if resp, _ := h.get(admin, "/admin/runs/none"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a missing run: %d", resp.StatusCode)
	}
	for _, p := range []string{"/admin/live", "/admin/runs/nomodel"} {
		if resp, _ := h.get(h.client(), p); resp.StatusCode == http.StatusOK {
			t.Errorf("%s without a session: %d", p, resp.StatusCode)
		}
	}
}

var runRowRE = regexp.MustCompile(`<tr class="run" data-run="([^"]+)"`)
