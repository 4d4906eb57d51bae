package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"
)

// RunSummary is a run as an operator looks at it: the bookkeeping, the
// newest message it answered, and the tools it called.
type RunSummary struct {
	AgentRun
	// TriggerSender and TriggerText are the newest message the run read
	// (up_to_seq); empty when it is gone.
	TriggerSender string
	TriggerText   string
	// Tools are the names of the tools called, in order.
	Tools []string
}

// RecentRuns lists the newest runs of every group, newest first.
func (s *Store) RecentRuns(ctx context.Context, limit int) ([]RunSummary, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT r.id, r.folder, r.started, r.finished, r.outcome, r.up_to_seq, r.iterations,
		r.input_tokens, r.output_tokens, r.cost_microcents, r.cost_known, r.error, r.model, COALESCE(m.sender_name, ''), COALESCE(m.text, '')
		FROM agent_runs r LEFT JOIN messages m ON m.seq = r.up_to_seq
		ORDER BY r.started DESC, r.rowid DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	defer rows.Close()
	var out []RunSummary
	at := map[string]int{}
	for rows.Next() {
		var r RunSummary
		var st, fin int64
		if err := rows.Scan(&r.ID, &r.Folder, &st, &fin, &r.Outcome, &r.UpToSeq, &r.Iterations, &r.InputTokens,
			&r.OutputTokens, &r.CostMicrocents, &r.CostKnown, &r.Error, &r.Model, &r.TriggerSender, &r.TriggerText); err != nil {
			return nil, fmt.Errorf("recent runs: %w", err)
		}
		r.Started, r.Finished = time.UnixMilli(st), time.UnixMilli(fin)
		at[r.ID] = len(out)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	// The tool calls, from the transcripts, in one query for all runs.
	args := make([]any, 0, len(out))
	for _, r := range out {
		args = append(args, r.ID)
	}
	tools, err := s.DB.QueryContext(ctx, `SELECT t.run_id, COALESCE(json_extract(j.value, '$.tool_call.name'), '')
		FROM agent_transcripts t, json_each(t.parts) j
		WHERE t.run_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")+`) AND t.role = 'assistant'
			AND json_extract(j.value, '$.kind') = 'tool_call'
		ORDER BY t.run_id, t.idx, CAST(j.key AS INTEGER)`, args...)
	if err != nil {
		return nil, fmt.Errorf("recent runs' tools: %w", err)
	}
	defer tools.Close()
	for tools.Next() {
		var id, name string
		if err := tools.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("recent runs' tools: %w", err)
		}
		if i, ok := at[id]; ok && name != "" {
			out[i].Tools = append(out[i].Tools, name)
		}
	}
	return out, tools.Err()
}

// DayRuns is what the runs of one UTC day cost.
type DayRuns struct {
	Day            time.Time // midnight UTC
	Runs           int
	InputTokens    int64
	OutputTokens   int64
	CostMicrocents int64
	// CostUnknown counts runs of a model without a known price.
	CostUnknown int
}

// DailyRuns sums the runs started since since, per UTC day, oldest first;
// days without runs are left out. CostMicrocents includes what media
// generation cost that day, so the dashboard's cost chart is the whole
// bill (a day with generation only has a row with no runs).
func (s *Store) DailyRuns(ctx context.Context, since time.Time) ([]DayRuns, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT started / 86400000 AS day, COUNT(*), SUM(input_tokens), SUM(output_tokens),
		SUM(CASE WHEN cost_known THEN cost_microcents ELSE 0 END), SUM(CASE WHEN cost_known THEN 0 ELSE 1 END)
		FROM agent_runs WHERE started >= ? GROUP BY day ORDER BY day`, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("daily runs: %w", err)
	}
	defer rows.Close()
	var out []DayRuns
	for rows.Next() {
		var d DayRuns
		var day int64
		var in, outTok, cost sql.NullInt64
		if err := rows.Scan(&day, &d.Runs, &in, &outTok, &cost, &d.CostUnknown); err != nil {
			return nil, fmt.Errorf("daily runs: %w", err)
		}
		d.Day = time.Unix(day*86400, 0).UTC()
		d.InputTokens, d.OutputTokens, d.CostMicrocents = in.Int64, outTok.Int64, cost.Int64
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("daily runs: %w", err)
	}
	return s.addGenerationCost(ctx, since, out)
}

// addGenerationCost folds each day's media generation cost into days.
func (s *Store) addGenerationCost(ctx context.Context, since time.Time, days []DayRuns) ([]DayRuns, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT at / 86400000 AS day, SUM(cost_microcents) FROM media_generations
		WHERE at >= ? GROUP BY day ORDER BY day`, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("daily generation cost: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var day, cost int64
		if err := rows.Scan(&day, &cost); err != nil {
			return nil, fmt.Errorf("daily generation cost: %w", err)
		}
		at := time.Unix(day*86400, 0).UTC()
		i := sort.Search(len(days), func(i int) bool { return !days[i].Day.Before(at) })
		if i < len(days) && days[i].Day.Equal(at) {
			days[i].CostMicrocents += cost
			continue
		}
		days = append(days, DayRuns{})
		copy(days[i+1:], days[i:])
		days[i] = DayRuns{Day: at, CostMicrocents: cost}
	}
	return days, rows.Err()
}
