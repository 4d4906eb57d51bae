package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// UsageRow is what one group spent with one model on one day.
type UsageRow struct {
	Folder, Day, Model                   string
	Attempts, Failed                     int
	Input, Output, CacheRead, CacheWrite int64
	Reasoning                            int64
	CostMicrocents                       int64
	Unpriced                             int // attempts whose cost is unknown
	// Media made by a generation model: images, and seconds of speech and
	// video.
	Images                     int64
	AudioSeconds, VideoSeconds float64
	// HeardSeconds is audio transcribed.
	HeardSeconds float64
	// Searches are web_search queries a search provider answered.
	Searches int64
}

// Usage sums model attempts since a time by group, day (in loc) and
// model; folder "" means every group.
func (s *Store) Usage(ctx context.Context, folder string, since time.Time, loc *time.Location) ([]UsageRow, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT folder, at, model, outcome, input_tokens, output_tokens, cache_read_tokens,
		cache_write_tokens, reasoning_tokens, cost_microcents, cost_known FROM llm_attempts
		WHERE at >= ? AND (? = '' OR folder = ?) ORDER BY at`, since.UnixMilli(), folder, folder)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	type key struct{ folder, day, model string }
	sums := map[key]*UsageRow{}
	var order []key
	// attempt counts one attempt (or generation) in its row, made on
	// first sight so rows keep the order their first attempt came in.
	attempt := func(folder string, at int64, model string) *UsageRow {
		k := key{folder, time.UnixMilli(at).In(loc).Format("2006-01-02"), model}
		r, ok := sums[k]
		if !ok {
			r = &UsageRow{Folder: k.folder, Day: k.day, Model: k.model}
			sums[k] = r
			order = append(order, k)
		}
		r.Attempts++
		return r
	}
	for rows.Next() {
		var f, model, outcome string
		var at, in, out, cr, cw, rs, cost int64
		var known bool
		if err := rows.Scan(&f, &at, &model, &outcome, &in, &out, &cr, &cw, &rs, &cost, &known); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		r := attempt(f, at, model)
		if outcome == "failed" {
			r.Failed++
		}
		r.Input, r.Output, r.CacheRead, r.CacheWrite, r.Reasoning = r.Input+in, r.Output+out, r.CacheRead+cr, r.CacheWrite+cw, r.Reasoning+rs
		r.CostMicrocents += cost
		if !known && outcome == "succeeded" {
			r.Unpriced++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	// Media generation, folded in by the same key: its model is a row of
	// its own, and its cost is part of the day's bill.
	grows, err := s.DB.QueryContext(ctx, `SELECT folder, at, model, kind, outcome, units, input_tokens, output_tokens,
		cost_microcents, cost_known FROM media_generations WHERE at >= ? AND (? = '' OR folder = ?) ORDER BY at`,
		since.UnixMilli(), folder, folder)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer grows.Close()
	for grows.Next() {
		var f, model, kind, outcome string
		var at, in, out, cost int64
		var units float64
		var known bool
		if err := grows.Scan(&f, &at, &model, &kind, &outcome, &units, &in, &out, &cost, &known); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		r := attempt(f, at, model)
		if outcome != "succeeded" {
			r.Failed++
		}
		r.Input, r.Output, r.CostMicrocents = r.Input+in, r.Output+out, r.CostMicrocents+cost
		if outcome == "succeeded" {
			switch kind {
			case "image":
				r.Images += int64(units)
			case "speech":
				r.AudioSeconds += units
			case "video":
				r.VideoSeconds += units
			case "transcription":
				r.HeardSeconds += units
			case "search":
				r.Searches += int64(units)
			}
			if !known {
				r.Unpriced++
			}
		}
	}
	if err := grows.Err(); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].day < order[j].day })
	out := make([]UsageRow, 0, len(order))
	for _, k := range order {
		out = append(out, *sums[k])
	}
	return out, nil
}

// SpentSince is what a group's model attempts and media generation cost
// since a time, in micro-cents (priced calls only).
func (s *Store) SpentSince(ctx context.Context, folder string, since time.Time) (int64, error) {
	var n int64
	err := s.DB.QueryRowContext(ctx, `SELECT
		(SELECT COALESCE(SUM(cost_microcents), 0) FROM llm_attempts WHERE folder = ? AND at >= ?) +
		(SELECT COALESCE(SUM(cost_microcents), 0) FROM media_generations WHERE folder = ? AND at >= ?)`,
		folder, since.UnixMilli(), folder, since.UnixMilli()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("spent by %s: %w", folder, err)
	}
	return n, nil
}

// SplitRow is where one group's input tokens went on one day (in loc, by
// the runs' start): the sum of the splits of its runs that have one.
type SplitRow struct {
	Folder, Day string
	// Runs are the day's runs; Unsplit of them were recorded before botd
	// split the bill and are not in Split (nor in Input).
	Runs, Unsplit int
	// Input is the split runs' input tokens, Split's total.
	Input int64
	Split TokenSplit
}

// UsageSplit sums the runs' token splits since a time by group and day
// (in loc), oldest day first; folder "" means every group.
func (s *Store) UsageSplit(ctx context.Context, folder string, since time.Time, loc *time.Location) ([]SplitRow, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT folder, started, prompt_tokens, tool_tokens, conversation_tokens, media_tokens
		FROM agent_runs WHERE started >= ? AND (? = '' OR folder = ?) ORDER BY started, folder`, since.UnixMilli(), folder, folder)
	if err != nil {
		return nil, fmt.Errorf("usage split: %w", err)
	}
	defer rows.Close()
	type key struct{ folder, day string }
	sums := map[key]*SplitRow{}
	var order []key
	for rows.Next() {
		var f string
		var at int64
		var sp splitScan
		if err := rows.Scan(append([]any{&f, &at}, sp.dest()...)...); err != nil {
			return nil, fmt.Errorf("usage split: %w", err)
		}
		k := key{f, time.UnixMilli(at).In(loc).Format("2006-01-02")}
		r, ok := sums[k]
		if !ok {
			r = &SplitRow{Folder: f, Day: k.day}
			sums[k] = r
			order = append(order, k)
		}
		r.Runs++
		if split := sp.split(); split != nil {
			r.Split.Add(*split)
			r.Input += split.Total()
		} else {
			r.Unsplit++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage split: %w", err)
	}
	out := make([]SplitRow, 0, len(order))
	for _, k := range order {
		out = append(out, *sums[k])
	}
	return out, nil
}
