package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// attempts collects a run's model calls as the chain reports them.
type attempts struct {
	mu    sync.Mutex
	calls []store.Attempt
	model string
}

func (b *attempts) add(a llm.Attempt) {
	if a.Outcome == llm.OutcomeSkipped {
		return
	}
	st := store.Attempt{At: time.Now().Add(-a.Duration), Provider: a.Provider, Model: a.Model, Outcome: string(a.Outcome),
		Input: a.Usage.InputTokens, Output: a.Usage.OutputTokens, CacheRead: a.Usage.CacheReadTokens,
		CacheWrite: a.Usage.CacheWriteTokens, Reasoning: a.Usage.ReasoningTokens, CostMicrocents: a.Usage.CostMicrocents,
		CostKnown: a.Usage.CostKnown, Duration: a.Duration}
	if a.Err != nil {
		st.Error = a.Err.Error()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, st)
	if a.Outcome == llm.OutcomeSucceeded {
		b.model = a.Model
	}
}

func (b *attempts) list() ([]store.Attempt, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]store.Attempt(nil), b.calls...), b.model
}

// msgBudget is what the chat hears once a day when its budget is spent.
const msgBudget = "I've reached today's spending limit for this group, so I'll be quiet until tomorrow."

// budget is agent.max_cost_per_day: a group whose model calls today
// already cost that much is not run; the messages count as handled, and
// the chat is told once a day.
type budget struct {
	st    *store.Store
	now   func() time.Time
	loc   *time.Location
	chans *channelSet
	log   *slog.Logger

	mu   sync.Mutex
	told map[string]string // folder → the day the chat was told its budget is spent
}

// over reports, and handles, a run the budget stops before it starts;
// limit is the run's settings' (micro-cents; 0 is no limit).
func (b *budget) over(ctx context.Context, folder string, trig store.Trigger, limit int64) (runResult, bool) {
	if limit <= 0 {
		return runResult{}, false
	}
	log := b.log.With("group", folder)
	day := b.dayStart()
	spent, err := b.st.SpentSince(ctx, folder, day)
	if err != nil {
		return storeFailure(ctx, err), true
	}
	if spent < limit {
		return runResult{}, false
	}
	log.Warn("agent: daily budget spent; not running the model", "spent_microcents", spent, "budget_microcents", limit)
	if err := b.st.AdvanceAgentCursor(ctx, folder, trig.Seq); err != nil {
		return storeFailure(ctx, err), true
	}
	b.mu.Lock()
	told := b.told[folder] == day.Format(time.DateOnly)
	b.told[folder] = day.Format(time.DateOnly)
	b.mu.Unlock()
	if !told {
		if err := b.chans.say(ctx, trig.ChatID, trig.ThreadID, msgBudget); err != nil {
			log.Warn("agent: could not tell the chat the budget is spent", "err", err)
		}
	}
	return runResult{outcome: outcomeDone}, true
}

// dayStart is the start of today in the agent's time zone.
func (b *budget) dayStart() time.Time {
	now := b.now().In(b.loc)
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
}

// USD is a cost in dollars as micro-cents (1e-8 USD), the unit of every
// cost botd records.
func USD(d float64) int64 { return int64(d*1e8 + 0.5) }

// RunRetention deletes the agent's records (runs, transcripts, model
// attempts, notes, summaries) older than keep, every interval until ctx
// ends: the bookkeeping of a busy group must not grow without bound.
func (a *Agent) RunRetention(ctx context.Context, keep, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := a.opts.Store.PruneAgentHistory(ctx, a.opts.Time.Now().Add(-keep))
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("agent: pruning old runs failed", "err", err)
		case n > 0:
			a.log.Info("agent: pruned old runs, attempts and notes", "rows", n, "older_than", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
