package store

import (
	"context"
	"testing"
	"time"
)

func TestSummariesKeepOnlyTheNewest(t *testing.T) { drivers(t, testSummariesKeepOnlyTheNewest) }

func testSummariesKeepOnlyTheNewest(t *testing.T, c Config) {
	ctx := context.Background()
	s, err := Connect(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	for i, text := range []string{"first", "second", "third"} {
		if err := s.SaveSummary(ctx, Summary{Folder: "family", UpToSeq: int64(10 * (i + 1)), Text: text, Created: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveSummary(ctx, Summary{Folder: "work", UpToSeq: 5, Text: "work's", Created: now}); err != nil {
		t.Fatal(err)
	}
	sm, ok, err := s.LatestSummary(ctx, "family")
	if err != nil || !ok || sm.Text != "third" || sm.UpToSeq != 30 {
		t.Fatalf("latest = %+v, %v, %v; want the third", sm, ok, err)
	}
	var n int
	s.DB.QueryRow(`SELECT COUNT(*) FROM agent_summaries`).Scan(&n)
	if n != 2 {
		t.Errorf("%d summaries kept, want 2 (the newest per group)", n)
	}
	if _, ok, _ := s.LatestSummary(ctx, "none"); ok {
		t.Errorf("a group without a summary has one")
	}
}
