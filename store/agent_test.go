package store

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestAgentCursorOnlyMovesForward(t *testing.T) { drivers(t, testAgentCursorOnlyMovesForward) }

func testAgentCursorOnlyMovesForward(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if c, err := s.AgentCursor(ctx, "fam"); err != nil || c != 0 {
		t.Fatalf("fresh cursor = %d, %v", c, err)
	}
	for _, step := range []struct{ set, want int64 }{{5, 5}, {3, 5}, {12, 12}, {9, 12}} {
		if err := s.AdvanceAgentCursor(ctx, "fam", step.set); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.AgentCursor(ctx, "fam"); c != step.want {
			t.Errorf("after advancing to %d cursor = %d, want %d", step.set, c, step.want)
		}
	}
}

func TestTriggerKeepsNewest(t *testing.T) { drivers(t, testTriggerKeepsNewest) }

func testTriggerKeepsNewest(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if _, ok, err := s.LastTrigger(ctx, "fam"); ok || err != nil {
		t.Fatalf("fresh trigger ok=%v err=%v", ok, err)
	}
	s.RecordTrigger(ctx, Trigger{Folder: "fam", Seq: 7, ChatID: "telegram:1", MessageID: "a", ThreadID: "t1"})
	s.RecordTrigger(ctx, Trigger{Folder: "fam", Seq: 4, ChatID: "telegram:1", MessageID: "old"})
	got, ok, err := s.LastTrigger(ctx, "fam")
	want := Trigger{Folder: "fam", Seq: 7, ChatID: "telegram:1", MessageID: "a", ThreadID: "t1"}
	if !ok || err != nil || got != want {
		t.Fatalf("trigger = %+v %v %v, want %+v", got, ok, err, want)
	}
}

// DueTrigger reads the trigger and the cursor together: nothing for a
// group never triggered, cursor 0 before the first answer, then both as
// they move.
func TestDueTrigger(t *testing.T) { drivers(t, testDueTrigger) }

func testDueTrigger(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	if _, _, ok, err := s.DueTrigger(ctx, "fam"); ok || err != nil {
		t.Fatalf("never triggered: ok=%v err=%v", ok, err)
	}
	// A cursor without a trigger is still no trigger.
	if err := s.AdvanceAgentCursor(ctx, "work", 3); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.DueTrigger(ctx, "work"); ok || err != nil {
		t.Fatalf("a cursor without a trigger: ok=%v err=%v", ok, err)
	}
	want := Trigger{Folder: "fam", Seq: 7, ChatID: "telegram:1", MessageID: "a", ThreadID: "t1"}
	if err := s.RecordTrigger(ctx, want); err != nil {
		t.Fatal(err)
	}
	// The work group's cursor (3) is not the family's: it reads 0 first.
	for _, step := range []struct{ advance, cursor int64 }{{0, 0}, {5, 5}, {7, 7}} {
		if step.advance > 0 {
			if err := s.AdvanceAgentCursor(ctx, "fam", step.advance); err != nil {
				t.Fatal(err)
			}
		}
		got, cur, ok, err := s.DueTrigger(ctx, "fam")
		if !ok || err != nil || got != want || cur != step.cursor {
			t.Errorf("after advancing to %d: %+v, cursor %d, ok=%v, %v; want %+v, cursor %d", step.advance, got, cur, ok, err, want, step.cursor)
		}
	}
}

func TestSaveRunAndTranscript(t *testing.T) { drivers(t, testSaveRunAndTranscript) }

func testSaveRunAndTranscript(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	r := AgentRun{ID: "r1", Folder: "fam", Started: time.UnixMilli(1000), Finished: time.UnixMilli(2000), Outcome: "answered",
		UpToSeq: 4, Iterations: 2, InputTokens: 10, OutputTokens: 5, CostMicrocents: 7, CostKnown: true}
	es := []TranscriptEntry{{Role: "user", Parts: json.RawMessage(`[{"kind":"text","text":"a"}]`)}, {Role: "assistant", Parts: json.RawMessage(`[]`)}}
	if err := s.SaveRun(ctx, r, es); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx, "fam", 10)
	if err != nil || len(runs) != 1 || !reflect.DeepEqual(runs[0], r) {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	got, err := s.Transcript(ctx, "r1")
	if err != nil || len(got) != 2 || got[0].Role != "user" || string(got[1].Parts) != "[]" {
		t.Fatalf("transcript = %+v, %v", got, err)
	}
}
