package matrix

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// A reaction is an m.reaction annotating the question; replacing it
// redacts the earlier one, and taking it off redacts the last.
func TestReact(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.mx)
	ctx := context.Background()
	q := channels.Reaction{Chat: ChatID(family), MessageID: "$question"}
	for _, step := range []struct{ old, emoji string }{{"", "👀"}, {"👀", "😢"}, {"😢", ""}} {
		q.Old, q.Emoji = step.old, step.emoji
		if err := h.mx.React(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var reactions []string
	var ids []string
	for _, s := range h.fake.Sends() {
		if s.Type != "m.reaction" {
			continue
		}
		var c struct {
			RelatesTo struct {
				RelType string `json:"rel_type"`
				EventID string `json:"event_id"`
				Key     string `json:"key"`
			} `json:"m.relates_to"`
		}
		if err := json.Unmarshal(s.Content, &c); err != nil {
			t.Fatal(err)
		}
		if c.RelatesTo.RelType != "m.annotation" || c.RelatesTo.EventID != "$question" {
			t.Errorf("reaction relates to %+v, want an annotation of $question", c.RelatesTo)
		}
		reactions = append(reactions, c.RelatesTo.Key)
		ids = append(ids, s.EventID)
	}
	if !slices.Equal(reactions, []string{"👀", "😢"}) {
		t.Fatalf("reactions sent %q, want 👀 then 😢", reactions)
	}
	if got := h.fake.Redacted(); !slices.Equal(got, ids) {
		t.Errorf("redacted %q, want both reactions %q in order", got, ids)
	}
	// Taking off a reaction it does not know (put before a restart) is no
	// error and redacts nothing.
	if err := h.mx.React(ctx, channels.Reaction{Chat: ChatID(family), MessageID: "$old", Old: "👀"}); err != nil || len(h.fake.Redacted()) != 2 {
		t.Errorf("unknown reaction: %v, redacted %q", err, h.fake.Redacted())
	}
}
