package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Media generation counts in the daily bill beside model calls, and shows
// in usage with its units.
func TestGenerationCountsInUsageAndBudget(t *testing.T) {
	drivers(t, testGenerationCountsInUsageAndBudget)
}

func testGenerationCountsInUsageAndBudget(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	now := time.Now()
	day := now.Add(-time.Hour)
	if err := s.SaveRun(ctx, AgentRun{ID: "r1", Folder: "family", Started: now, Finished: now, Outcome: "answered",
		Attempts: []Attempt{{At: now, Provider: "fake", Model: "gpt-4.1", Outcome: "succeeded", Input: 100, CostMicrocents: 500, CostKnown: true}}}, nil); err != nil {
		t.Fatal(err)
	}
	gens := []Generation{
		{Folder: "family", At: now, Kind: "image", Provider: "fake", Model: "gpt-image-1", Outcome: "succeeded", Units: 1, CostMicrocents: 4_000_000, CostKnown: true},
		{Folder: "family", At: now, Kind: "image", Provider: "fake", Model: "gpt-image-1", Outcome: "refused", Error: "content policy"},
		{Folder: "family", At: now, Kind: "speech", Provider: "fake", Model: "gpt-4o-mini-tts", Outcome: "succeeded", Units: 3.5, CostMicrocents: 87_500, CostKnown: true},
		{Folder: "family", At: now, Kind: "video", Provider: "fake", Model: "sora-2", Outcome: "succeeded", Units: 4},
		{Folder: "work", At: now, Kind: "image", Provider: "fake", Model: "gpt-image-1", Outcome: "succeeded", Units: 1, CostMicrocents: 9, CostKnown: true},
	}
	for _, g := range gens {
		if err := s.RecordGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	spent, err := s.SpentSince(ctx, "family", day)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(500 + 4_000_000 + 87_500); spent != want {
		t.Errorf("spent %d, want %d", spent, want)
	}
	rows, err := s.Usage(ctx, "family", day, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]UsageRow{}
	for _, r := range rows {
		by[r.Model] = r
	}
	cases := []struct {
		model            string
		attempts, failed int
		images           int64
		audio, video     float64
		unpriced         int
		cost             int64
	}{
		{"gpt-4.1", 1, 0, 0, 0, 0, 0, 500},
		{"gpt-image-1", 2, 1, 1, 0, 0, 0, 4_000_000},
		{"gpt-4o-mini-tts", 1, 0, 0, 3.5, 0, 0, 87_500},
		{"sora-2", 1, 0, 0, 0, 4, 1, 0},
	}
	if len(rows) != len(cases) {
		t.Fatalf("rows %+v", rows)
	}
	for _, tc := range cases {
		r := by[tc.model]
		if r.Attempts != tc.attempts || r.Failed != tc.failed || r.Images != tc.images || r.AudioSeconds != tc.audio ||
			r.VideoSeconds != tc.video || r.Unpriced != tc.unpriced || r.CostMicrocents != tc.cost {
			t.Errorf("%s: %+v", tc.model, r)
		}
	}
}

// A job's state moves only from the state its writer saw: a cancel and a
// finishing poll cannot both win.
func TestMediaJobStateGuard(t *testing.T) { drivers(t, testMediaJobStateGuard) }

func testMediaJobStateGuard(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	now := time.Now()
	id, err := s.AddMediaJob(ctx, MediaJob{Folder: "family", ChatID: "telegram:-100", Provider: "p", Model: "sora-2",
		RemoteID: "video_1", Prompt: "a cat", Seconds: 4, NextPoll: now, Deadline: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.MediaJob(ctx, "family", id)
	if err != nil || j.State != JobSubmitted || j.RemoteID != "video_1" {
		t.Fatalf("%+v %v", j, err)
	}
	if _, err := s.MediaJob(ctx, "work", id); err == nil {
		t.Error("another group's job was found")
	}
	j.State = JobCancelled
	if ok, err := s.UpdateMediaJob(ctx, JobSubmitted, j); !ok || err != nil {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	j.State = JobSending
	if ok, _ := s.UpdateMediaJob(ctx, JobSubmitted, j); ok {
		t.Error("a poll moved a cancelled job on")
	}
	live, err := s.MediaJobs(ctx, "", JobSubmitted, JobSending)
	if err != nil || len(live) != 0 {
		t.Errorf("live jobs %+v %v", live, err)
	}
}

// RecentMediaJobs lists one group's jobs since a time, newest first,
// capped; Created is the caller's.
func TestRecentMediaJobs(t *testing.T) { drivers(t, testRecentMediaJobs) }

func testRecentMediaJobs(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(folder, prompt string, created time.Time) {
		t.Helper()
		if _, err := s.AddMediaJob(ctx, MediaJob{Folder: folder, ChatID: "telegram:-100", Provider: "p", Model: "sora-2",
			RemoteID: "v", Prompt: prompt, NextPoll: created, Deadline: created.Add(time.Hour), Created: created}); err != nil {
			t.Fatal(err)
		}
	}
	add("family", "old", base.Add(-8*24*time.Hour))
	add("family", "first", base.Add(-time.Hour))
	add("work", "theirs", base)
	add("family", "second", base.Add(-time.Minute))
	add("family", "third", base)
	cases := []struct {
		name  string
		limit int
		want  []string
	}{
		{"all recent, newest first", 20, []string{"third", "second", "first"}},
		{"capped", 2, []string{"third", "second"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := s.RecentMediaJobs(ctx, "family", base.Add(-7*24*time.Hour), tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range jobs {
				got = append(got, j.Prompt)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if len(jobs) > 0 && !jobs[0].Created.Equal(base) {
				t.Errorf("created %v, want %v", jobs[0].Created, base)
			}
		})
	}
}
