package store

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// A run's token split is saved with it and read back by every reader of
// runs, on both databases; a run stored before the split's migration
// (its columns dropped, the row written as the older botd wrote it, the
// migration's DDL run again) reads back without one, not as zeros.
func TestRunSplitRoundTrip(t *testing.T) { drivers(t, testRunSplitRoundTrip) }

func testRunSplitRoundTrip(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	i := slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, "ADD COLUMN prompt_tokens") })
	if i < 0 {
		t.Fatal("no migration adds the runs' split")
	}
	// Back to the schema before the split, with a run stored by that botd.
	if _, err := s.DB.ExecContext(ctx, `ALTER TABLE agent_runs DROP COLUMN prompt_tokens;
		ALTER TABLE agent_runs DROP COLUMN tool_tokens; ALTER TABLE agent_runs DROP COLUMN conversation_tokens;
		ALTER TABLE agent_runs DROP COLUMN media_tokens;`); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO agent_runs(id, folder, started, finished, outcome, up_to_seq, iterations,
		input_tokens, output_tokens, cost_microcents, cost_known, error, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		"old", "fam", day.UnixMilli(), day.UnixMilli()+10, "answered", 0, 1, 900, 10, 0, false, "", "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.ExecContext(ctx, s.Dialect.Schema(migrations[i])); err != nil {
		t.Fatalf("migration %d on a database with runs: %v", i+1, err)
	}

	split := &TokenSplit{Prompt: 1200, Tools: 2600, Conversation: 310, Media: 1590}
	runs := []AgentRun{
		{ID: "new", Folder: "fam", Started: day.Add(time.Hour), Finished: day.Add(time.Hour + time.Second), Outcome: "answered",
			Iterations: 2, InputTokens: split.Total(), Split: split},
		// A run with a split of nothing (its model call reported no
		// input) is a zero split, not an unknown one.
		{ID: "zero", Folder: "work", Started: day.Add(2 * time.Hour), Outcome: "answered", Split: &TokenSplit{}},
		{ID: "next-day", Folder: "fam", Started: day.Add(25 * time.Hour), Outcome: "answered", InputTokens: 10,
			Split: &TokenSplit{Prompt: 4, Tools: 3, Conversation: 2, Media: 1}},
	}
	for _, r := range runs {
		if err := s.SaveRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]*TokenSplit{"old": nil, "new": split, "zero": {}, "next-day": runs[2].Split}

	got, err := s.Runs(ctx, "fam", 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("runs = %+v, %v", got, err)
	}
	found, err := s.FindRuns(ctx, RunFilter{Limit: 10})
	if err != nil || len(found) != 4 {
		t.Fatalf("find runs = %+v, %v", found, err)
	}
	for _, r := range found {
		got = append(got, r.AgentRun)
	}
	for id := range want {
		d, err := s.RunDetail(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.AgentRun)
	}
	for _, r := range got {
		if !reflect.DeepEqual(r.Split, want[r.ID]) {
			t.Errorf("run %s: split %+v, want %+v", r.ID, r.Split, want[r.ID])
		}
	}

	sums, err := s.UsageSplit(ctx, "", day.Add(-time.Hour), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	wantSums := []SplitRow{
		{Folder: "fam", Day: "2026-11-20", Runs: 2, Unsplit: 1, Input: split.Total(), Split: *split},
		{Folder: "work", Day: "2026-11-20", Runs: 1},
		{Folder: "fam", Day: "2026-11-21", Runs: 1, Input: 10, Split: *runs[2].Split},
	}
	if !reflect.DeepEqual(sums, wantSums) {
		t.Errorf("usage split:\n got %+v\nwant %+v", sums, wantSums)
	}
	if one, err := s.UsageSplit(ctx, "work", day.Add(-time.Hour), time.UTC); err != nil || len(one) != 1 || one[0].Folder != "work" {
		t.Errorf("usage split of one group = %+v, %v", one, err)
	}
}
