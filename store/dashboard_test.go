package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestRecentRunsAndDailyRuns(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "botd.db"))
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
