package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
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
	return s.FindRuns(ctx, RunFilter{Limit: limit})
}

// RunFilter picks runs for the dashboard: of one group and with one
// outcome (empty: any), a page of Limit after Offset.
type RunFilter struct {
	Folder, Outcome string
	Limit, Offset   int
}

const runColumns = `r.id, r.folder, r.started, r.finished, r.outcome, r.up_to_seq, r.iterations,
	r.input_tokens, r.output_tokens, r.cost_microcents, r.cost_known, r.error, r.model, COALESCE(m.sender_name, ''), COALESCE(m.text, ''),
	r.prompt_tokens, r.tool_tokens, r.conversation_tokens, r.media_tokens`

func scanRun(row sqlrows.Scanner) (RunSummary, error) {
	var r RunSummary
	var st, fin int64
	var sp splitScan
	err := row.Scan(append([]any{&r.ID, &r.Folder, &st, &fin, &r.Outcome, &r.UpToSeq, &r.Iterations, &r.InputTokens,
		&r.OutputTokens, &r.CostMicrocents, &r.CostKnown, &r.Error, &r.Model, &r.TriggerSender, &r.TriggerText}, sp.dest()...)...)
	r.Started, r.Finished, r.Split = time.UnixMilli(st), time.UnixMilli(fin), sp.split()
	return r, err
}

// FindRuns lists the runs f picks, newest first, with the tools each
// called.
func (s *Store) FindRuns(ctx context.Context, f RunFilter) ([]RunSummary, error) {
	out, err := sqlrows.Query(ctx, s.DB, "runs", scanRun, `SELECT `+runColumns+`
		FROM agent_runs r LEFT JOIN messages m ON m.seq = r.up_to_seq
		WHERE (? = '' OR r.folder = ?) AND (? = '' OR r.outcome = ?)
		ORDER BY r.started DESC, r.rowid DESC LIMIT ? OFFSET ?`,
		f.Folder, f.Folder, f.Outcome, f.Outcome, f.Limit, max(0, f.Offset))
	if err != nil || len(out) == 0 {
		return out, err
	}
	// The tool calls, from the transcripts, in one query for all runs.
	at := make(map[string]int, len(out))
	args := make([]any, 0, len(out))
	for i, r := range out {
		at[r.ID] = i
		args = append(args, r.ID)
	}
	// The parts are decoded here rather than with the database's JSON
	// functions, which SQLite and Postgres spell differently.
	calls, err := sqlrows.Query(ctx, s.DB, "recent runs' tools", func(r sqlrows.Scanner) (toolCall, error) {
		var c toolCall
		err := r.Scan(&c.run, &c.parts)
		return c, err
	}, `SELECT t.run_id, t.parts FROM agent_transcripts t
		WHERE t.run_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")+`) AND t.role = 'assistant'
		ORDER BY t.run_id, t.idx`, args...)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		i, ok := at[c.run]
		if !ok {
			continue
		}
		var parts []struct {
			Kind     string `json:"kind"`
			ToolCall struct {
				Name string `json:"name"`
			} `json:"tool_call"`
		}
		if json.Unmarshal([]byte(c.parts), &parts) != nil {
			continue // a transcript this build cannot read lists no tools
		}
		for _, p := range parts {
			if p.Kind == "tool_call" && p.ToolCall.Name != "" {
				out[i].Tools = append(out[i].Tools, p.ToolCall.Name)
			}
		}
	}
	return out, nil
}

// toolCall is one assistant turn of a run: its parts, as JSON.
type toolCall struct{ run, parts string }

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
	out, err := sqlrows.Query(ctx, s.DB, "daily runs", func(r sqlrows.Scanner) (DayRuns, error) {
		var d DayRuns
		var day int64
		var in, outTok, cost sql.NullInt64
		err := r.Scan(&day, &d.Runs, &in, &outTok, &cost, &d.CostUnknown)
		d.Day = time.Unix(day*86400, 0).UTC()
		d.InputTokens, d.OutputTokens, d.CostMicrocents = in.Int64, outTok.Int64, cost.Int64
		return d, err
	}, `SELECT started / 86400000 AS day, COUNT(*), SUM(input_tokens), SUM(output_tokens),
		SUM(CASE WHEN cost_known != 0 THEN cost_microcents ELSE 0 END), SUM(CASE WHEN cost_known != 0 THEN 0 ELSE 1 END)
		FROM agent_runs WHERE started >= ? GROUP BY day ORDER BY day`, since.UnixMilli())
	if err != nil {
		return nil, err
	}
	return s.addGenerationCost(ctx, since, out)
}

// addGenerationCost folds each day's media generation cost into days.
func (s *Store) addGenerationCost(ctx context.Context, since time.Time, days []DayRuns) ([]DayRuns, error) {
	costs, err := sqlrows.Query(ctx, s.DB, "daily generation cost", func(r sqlrows.Scanner) (DayRuns, error) {
		var d DayRuns
		var day int64
		err := r.Scan(&day, &d.CostMicrocents)
		d.Day = time.Unix(day*86400, 0).UTC()
		return d, err
	}, `SELECT at / 86400000 AS day, SUM(cost_microcents) FROM media_generations
		WHERE at >= ? GROUP BY day ORDER BY day`, since.UnixMilli())
	if err != nil {
		return nil, err
	}
	for _, c := range costs {
		i := sort.Search(len(days), func(i int) bool { return !days[i].Day.Before(c.Day) })
		if i < len(days) && days[i].Day.Equal(c.Day) {
			days[i].CostMicrocents += c.CostMicrocents
			continue
		}
		days = slices.Insert(days, i, c)
	}
	return days, nil
}

// RunOutcomes are the outcomes runs have ended with, for the dashboard's
// filter.
func (s *Store) RunOutcomes(ctx context.Context) ([]string, error) {
	return sqlrows.Query(ctx, s.DB, "run outcomes", func(r sqlrows.Scanner) (string, error) {
		var o string
		err := r.Scan(&o)
		return o, err
	}, `SELECT DISTINCT outcome FROM agent_runs WHERE outcome != '' ORDER BY outcome`)
}

// ErrNoRun is a run id the store does not have (never, or pruned).
var ErrNoRun = errors.New("no such run")

// RunDetail is one run as its page shows it: the summary, every model
// call and the transcript.
type RunDetail struct {
	RunSummary
	Transcript []TranscriptEntry
}

// RunDetail returns the run with id, its model calls and its transcript;
// ErrNoRun when there is none.
func (s *Store) RunDetail(ctx context.Context, id string) (RunDetail, error) {
	var d RunDetail
	r, err := scanRun(s.DB.QueryRowContext(ctx, `SELECT `+runColumns+`
		FROM agent_runs r LEFT JOIN messages m ON m.seq = r.up_to_seq WHERE r.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("run %s: %w", id, ErrNoRun)
	}
	if err != nil {
		return d, fmt.Errorf("run %s: %w", id, err)
	}
	d.RunSummary = r
	d.Attempts, err = sqlrows.Query(ctx, s.DB, "run attempts", func(row sqlrows.Scanner) (Attempt, error) {
		var a Attempt
		var at, ms int64
		err := row.Scan(&at, &a.Provider, &a.Model, &a.Outcome, &a.Input, &a.Output, &a.CacheRead, &a.CacheWrite,
			&a.Reasoning, &a.CostMicrocents, &a.CostKnown, &ms, &a.Error)
		a.At, a.Duration = time.UnixMilli(at), time.Duration(ms)*time.Millisecond
		return a, err
	}, `SELECT at, provider, model, outcome, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
		reasoning_tokens, cost_microcents, cost_known, duration_ms, error FROM llm_attempts WHERE run_id = ? ORDER BY at, id`, id)
	if err != nil {
		return d, err
	}
	d.Transcript, err = s.Transcript(ctx, id)
	if err != nil {
		return d, err
	}
	for _, e := range d.Transcript {
		var parts []struct {
			Kind     string `json:"kind"`
			ToolCall *struct {
				Name string `json:"name"`
			} `json:"tool_call"`
		}
		if e.Role != "assistant" || json.Unmarshal(e.Parts, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Kind == "tool_call" && p.ToolCall != nil && p.ToolCall.Name != "" {
				d.Tools = append(d.Tools, p.ToolCall.Name)
			}
		}
	}
	return d, nil
}
