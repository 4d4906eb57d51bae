package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestRecentRunsAndDailyRuns(t *testing.T) { drivers(t, testRecentRunsAndDailyRuns) }

func testRecentRunsAndDailyRuns(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if err := s.UpsertChat(ctx, Chat{ID: "web:main", Name: "Main"}); err != nil {
		t.Fatal(err)
	}
	seq, err := s.PutMessage(ctx, Message{ChatID: "web:main", ID: "m1", SenderName: "Ann", Text: "look at this", Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	parts := func(js string) json.RawMessage { return json.RawMessage(js) }
	runs := []struct {
		r       AgentRun
		entries []TranscriptEntry
	}{
		{AgentRun{ID: "r1", Folder: "main", Started: day, Finished: day.Add(2 * time.Second), Outcome: "answered", UpToSeq: seq, Model: "claude-sonnet-4-5",
			InputTokens: 300, OutputTokens: 20, CostMicrocents: 150_000, CostKnown: true}, []TranscriptEntry{
			{Role: "user", Parts: parts(`[{"kind":"text","text":"hi"}]`)},
			{Role: "assistant", Parts: parts(`[{"kind":"text","text":"let me look"},{"kind":"tool_call","tool_call":{"id":"1","name":"fetch_media","args":{}}},{"kind":"tool_call","tool_call":{"id":"2","name":"list_media","args":{}}}]`)},
			{Role: "tool", Parts: parts(`[{"kind":"tool_result","tool_result":{"call_id":"1","content":[]}}]`)},
			{Role: "assistant", Parts: parts(`[{"kind":"tool_call","tool_call":{"id":"3","name":"fetch_media","args":{}}}]`)},
		}},
		{AgentRun{ID: "r2", Folder: "family", Started: day.Add(time.Hour), Finished: day.Add(time.Hour + time.Second), Outcome: "answered",
			InputTokens: 100, OutputTokens: 10, CostKnown: false}, nil},
		{AgentRun{ID: "r3", Folder: "main", Started: day.Add(24 * time.Hour), Outcome: "model_failed", Error: "boom",
			CostMicrocents: 50_000, CostKnown: true}, nil},
	}
	for _, r := range runs {
		if err := s.SaveRun(ctx, r.r, r.entries); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RecentRuns(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "r3" || got[1].ID != "r2" {
		t.Fatalf("recent runs %+v", got)
	}
	all, _ := s.RecentRuns(ctx, 10)
	r1 := all[2]
	if r1.ID != "r1" || r1.TriggerSender != "Ann" || r1.TriggerText != "look at this" || r1.Model != "claude-sonnet-4-5" ||
		!reflect.DeepEqual(r1.Tools, []string{"fetch_media", "list_media", "fetch_media"}) || r1.InputTokens != 300 {
		t.Fatalf("r1 %+v", r1)
	}
	// Media generation is on the same bill: added to a day with runs, and
	// a day of its own.
	for _, g := range []Generation{
		{Folder: "family", At: time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC), Kind: "image", Model: "gpt-image-1", Outcome: "succeeded", Units: 1, CostMicrocents: 4_000_000, CostKnown: true},
		{Folder: "family", At: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), Kind: "video", Model: "sora-2", Outcome: "succeeded", Units: 4, CostMicrocents: 40_000_000, CostKnown: true},
	} {
		if err := s.RecordGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	days, err := s.DailyRuns(ctx, day.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []DayRuns{
		{Day: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Runs: 2, InputTokens: 400, OutputTokens: 30, CostMicrocents: 4_150_000, CostUnknown: 1},
		{Day: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Runs: 1, CostMicrocents: 50_000},
		{Day: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), CostMicrocents: 40_000_000},
	}
	if !reflect.DeepEqual(days, want) {
		t.Fatalf("days %+v\nwant %+v", days, want)
	}
}

func TestFindRunsAndRunDetail(t *testing.T) { drivers(t, testFindRunsAndRunDetail) }

func testFindRunsAndRunDetail(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i, r := range []AgentRun{
		{ID: "a1", Folder: "main", Started: day, Outcome: "answered", Model: "m"},
		{ID: "a2", Folder: "team", Started: day.Add(time.Minute), Outcome: "model_failed"},
		{ID: "a3", Folder: "main", Started: day.Add(2 * time.Minute), Outcome: "model_failed"},
		{ID: "a4", Folder: "main", Started: day.Add(3 * time.Minute), Outcome: "answered", Model: "m",
			Attempts: []Attempt{
				{At: day.Add(3 * time.Minute), Provider: "p", Model: "big", Outcome: "failed", Error: "overloaded", Duration: 2 * time.Second},
				{At: day.Add(3*time.Minute + 3*time.Second), Provider: "p", Model: "m", Outcome: "ok", Input: 120, Output: 7,
					CostMicrocents: 9000, CostKnown: true, Duration: 1500 * time.Millisecond},
			}},
	} {
		var entries []TranscriptEntry
		if i == 3 {
			entries = []TranscriptEntry{
				{Role: "user", Parts: json.RawMessage(`[{"kind":"text","text":"what is 2+2"}]`)},
				{Role: "assistant", Parts: json.RawMessage(`[{"kind":"tool_call","tool_call":{"id":"1","name":"calc","args":{"x":"2+2"}}}]`)},
				{Role: "tool", Parts: json.RawMessage(`[{"kind":"tool_result","tool_result":{"call_id":"1","content":[{"kind":"text","text":"4"}]}}]`)},
				{Role: "assistant", Parts: json.RawMessage(`[{"kind":"text","text":"4"}]`)},
			}
		}
		if err := s.SaveRun(ctx, r, entries); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(rs []RunSummary) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    RunFilter
		want []string
	}{
		{"all", RunFilter{Limit: 10}, []string{"a4", "a3", "a2", "a1"}},
		{"a page", RunFilter{Limit: 2, Offset: 2}, []string{"a2", "a1"}},
		{"past the end", RunFilter{Limit: 2, Offset: 4}, nil},
		{"a group", RunFilter{Folder: "main", Limit: 10}, []string{"a4", "a3", "a1"}},
		{"an outcome", RunFilter{Outcome: "model_failed", Limit: 10}, []string{"a3", "a2"}},
		{"both", RunFilter{Folder: "team", Outcome: "answered", Limit: 10}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.FindRuns(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Fatalf("runs %v, want %v", ids(got), tc.want)
			}
		})
	}
	outs, err := s.RunOutcomes(ctx)
	if err != nil || !reflect.DeepEqual(outs, []string{"answered", "model_failed"}) {
		t.Fatalf("outcomes %v, %v", outs, err)
	}

	d, err := s.RunDetail(ctx, "a4")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Attempts) != 2 || d.Attempts[0].Error != "overloaded" || d.Attempts[1].Input != 120 ||
		d.Attempts[1].Duration != 1500*time.Millisecond || !d.Attempts[1].CostKnown {
		t.Fatalf("attempts %+v", d.Attempts)
	}
	if len(d.Transcript) != 4 || !reflect.DeepEqual(d.Tools, []string{"calc"}) {
		t.Fatalf("transcript %d entries, tools %v", len(d.Transcript), d.Tools)
	}
	if _, err := s.RunDetail(ctx, "nope"); !errors.Is(err, ErrNoRun) {
		t.Fatalf("missing run: %v, want ErrNoRun", err)
	}
}
