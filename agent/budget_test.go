package agent

import (
	"context"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// Every model attempt of a run is recorded with its usage and cost, the
// failed one too; past agent.max_cost_per_day the group's runs stop, and
// the chat is told once that day.
func TestAttemptsAreBilledAndTheDailyBudgetHolds(t *testing.T) {
	down := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return nil, llm.NewError("primary", llm.KindOverloaded, "overloaded")
	})
	up := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		r := textResult("answer")
		r.Usage = llm.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadTokens: 800, CostMicrocents: USD(0.02), CostKnown: true}
		return r, nil
	})
	chain, err := llm.NewChain([]llm.Entry{{Provider: down, Model: "big-1"}, {Provider: up, Model: "small-1"}},
		llm.WithSleep(func(context.Context, time.Duration) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, up, func(o *Options) {
		o.LLM = chain
		o.Intake.MaxCostPerDay = USD(0.03)
	})
	h.start()
	h.say(famChat, "Ann", "@Andy first")
	h.idle()
	runs, err := h.st.Runs(context.Background(), "family", 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	var outcomes []string
	var cost, cacheRead int64
	rows, err := h.st.DB.Query(`SELECT model, outcome, cost_microcents, cache_read_tokens FROM llm_attempts WHERE run_id = ? ORDER BY id`, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var model, outcome string
		var c, cr int64
		rows.Scan(&model, &outcome, &c, &cr)
		outcomes = append(outcomes, model+":"+outcome)
		cost, cacheRead = cost+c, cacheRead+cr
	}
	rows.Close()
	if len(outcomes) != 2 || outcomes[0] != "big-1:failed" || outcomes[1] != "small-1:succeeded" || cost != USD(0.02) || cacheRead != 800 {
		t.Errorf("attempts %v, cost %d, cache read %d", outcomes, cost, cacheRead)
	}
	var model string
	h.st.DB.QueryRow(`SELECT model FROM agent_runs WHERE id = ?`, runs[0].ID).Scan(&model)
	if model != "small-1" {
		t.Errorf("run model = %q, want the one that answered", model)
	}

	h.say(famChat, "Ann", "@Andy second") // 0.02 spent of 0.03: runs, now 0.04
	h.idle()
	h.say(famChat, "Ann", "@Andy third") // over: told
	h.idle()
	h.say(famChat, "Ann", "@Andy fourth") // over: silent
	h.idle()
	got := sentTexts(h.tg.Sent())
	want := []string{"answer", "answer", msgBudget}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("sent %q, want %q", got, want)
	}
	if up.calls() != 2 {
		t.Errorf("the model answered %d times, want 2 (the budget stops the rest)", up.calls())
	}
	if got, want := h.cursor("family"), h.lastSeq(famChat); got != want {
		t.Errorf("cursor %d, want %d: over-budget messages count as handled", got, want)
	}
	rowsU, err := h.st.Usage(context.Background(), "", time.Now().Add(-time.Hour), time.UTC)
	if err != nil || len(rowsU) != 2 {
		t.Fatalf("usage rows = %+v, %v", rowsU, err)
	}
}

// Runs older than the retention go at the sweeper's first pass.
func TestRetentionPrunesOldRuns(t *testing.T) {
	h := newHarness(t, newFakeLLM(nil), nil)
	old := time.Now().Add(-48 * time.Hour)
	ctx := context.Background()
	for _, r := range []store.AgentRun{{ID: "old", Folder: "family", Started: old}, {ID: "new", Folder: "family", Started: time.Now()}} {
		if err := h.st.SaveRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); h.a.RunRetention(rctx, 24*time.Hour, time.Hour) }()
	testwait.Until(t, "the old run pruned", func() bool {
		runs, err := h.st.Runs(ctx, "family", 10)
		return err == nil && len(runs) == 1 && runs[0].ID == "new"
	})
	cancel()
	<-done
}
