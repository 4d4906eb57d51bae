package chantest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/botd-dev/botd/channels"
)

func TestStreamingRecordsALiveAnswerInOrder(t *testing.T) {
	ctx := context.Background()
	s := NewStreaming("telegram")
	lm, err := s.BeginStream(ctx, channels.OutMessage{Chat: "telegram:1", Text: "The", ThreadID: "7"})
	if err != nil {
		t.Fatal(err)
	}
	lm.Update("The rota")
	d, err := lm.Finish(ctx, "The rota changes.")
	if err != nil {
		t.Fatal(err)
	}
	lm.Update("late")
	if err := s.InterruptStream(ctx, "telegram:1", []string{"x"}, "half"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Events() {
		got = append(got, e.Kind+":"+e.Text)
	}
	want := []string{"begin:The", "update:The rota", "finish:The rota changes.", "update after end:late", "interrupt:half"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if !slices.Equal(d.MessageIDs, lm.IDs()) || len(d.MessageIDs) != 1 {
		t.Errorf("finish ids %q, live ids %q", d.MessageIDs, lm.IDs())
	}
	if b := s.EventsOf(LiveBegin); len(b) != 1 || b[0].Msg.ThreadID != "7" {
		t.Errorf("begin events = %+v", b)
	}
}

func TestStreamingFailures(t *testing.T) {
	ctx := context.Background()
	s := NewStreaming("slack")
	s.FailBegin(ErrBoom)
	if _, err := s.BeginStream(ctx, channels.OutMessage{Chat: "slack:C", Text: "a"}); !errors.Is(err, ErrBoom) {
		t.Fatalf("begin err = %v", err)
	}
	s.FailBegin(nil)
	lm, err := s.BeginStream(ctx, channels.OutMessage{Chat: "slack:C", Text: "a"})
	if err != nil {
		t.Fatal(err)
	}
	s.FailFinish(ErrBoom)
	if _, err := lm.Finish(ctx, "ab"); !errors.Is(err, ErrBoom) {
		t.Fatalf("finish err = %v", err)
	}
	if len(s.EventsOf(LiveFinish)) != 0 {
		t.Error("a failed finish was recorded as shown")
	}
}
