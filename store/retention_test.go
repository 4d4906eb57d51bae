package store

import (
	"context"
	"testing"
	"time"
)

func TestPruneAgentHistory(t *testing.T) { drivers(t, testPruneAgentHistory) }

func testPruneAgentHistory(t *testing.T, c Config) {
	ctx := context.Background()
	s, err := Connect(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	old, recent := now.Add(-100*24*time.Hour), now.Add(-time.Hour)
	for i, at := range []time.Time{old, recent} {
		run := AgentRun{ID: []string{"old", "new"}[i], Folder: "family", Started: at, Finished: at,
			Attempts: []Attempt{{At: at, Provider: "p", Model: "m", Outcome: "succeeded", Input: 10}}}
		if err := s.SaveRun(ctx, run, []TranscriptEntry{{Role: "user", Parts: []byte(`[]`)}}); err != nil {
			t.Fatal(err)
		}
		// A note as agent/historydb keeps it (its queries live there).
		if _, err := s.DB.ExecContext(ctx, `INSERT INTO agent_media_notes(folder, ref_id, note, run_id, created) VALUES ('family', ?, 'x', '', ?)`,
			[]string{"tg_OldOldOld1", "tg_NewNewNew1"}[i], at.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneAgentHistory(ctx, now.Add(-90*24*time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("pruned %d rows, %v; want the old run, its attempt and its note", n, err)
	}
	for table, want := range map[string]int{"agent_runs": 1, "agent_transcripts": 1, "llm_attempts": 1, "agent_media_notes": 1} {
		var got int
		s.DB.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&got)
		if got != want {
			t.Errorf("%s has %d rows, want %d", table, got, want)
		}
	}
}
