package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestLiveMessagesSurviveAReopenUntilClosed(t *testing.T) {
	drivers(t, testLiveMessagesSurviveAReopenUntilClosed)
}

func testLiveMessagesSurviveAReopenUntilClosed(t *testing.T, c Config) {
	ctx := context.Background()
	s := open(t, c)
	at := time.UnixMilli(1_700_000_000_000)
	a, err := s.OpenLive(ctx, LiveMessage{Folder: "family", ChatID: "telegram:-1", Text: "The rota", Opened: at})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.OpenLive(ctx, LiveMessage{Folder: "work", ChatID: "slack:C1", IDs: []string{"9"}, Text: "Hi", Opened: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.GrowLive(ctx, a, []string{"11", "12"}, "The rota changes on Monday", at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseLive(ctx, b); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, c)
	got, err := s.OpenLives(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("open live messages = %+v, want only the one not closed", got)
	}
	m := got[0]
	if m.ID != a || m.Folder != "family" || m.ChatID != "telegram:-1" || !slices.Equal(m.IDs, []string{"11", "12"}) ||
		m.Text != "The rota changes on Monday" || !m.Updated.Equal(at.Add(time.Second)) || !m.Opened.Equal(at) {
		t.Errorf("live message = %+v", m)
	}
}
