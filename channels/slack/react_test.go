package slack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// A reaction is reactions.remove of the old name and reactions.add of
// the new one; one already there or already gone is what was asked for.
// An emoji Slack has no name for here is refused before any call.
func TestReact(t *testing.T) {
	h := newHarness(t, nil)
	h.start(t)
	ctx := context.Background()
	const chat, ts = "slack:C0TEAM01", "1700000000.000100"
	for _, step := range []struct {
		old, emoji string
		want       []string
	}{
		{"", "👀", []string{"eyes"}},
		{"", "👀", []string{"eyes"}}, // already_reacted: fine
		{"👀", "😢", []string{"cry"}},
		{"😢", "", nil},
		{"😢", "", nil}, // no_reaction: fine
	} {
		if err := h.sl.React(ctx, channels.Reaction{Chat: chat, MessageID: ts, Old: step.old, Emoji: step.emoji}); err != nil {
			t.Fatalf("%q → %q: %v", step.old, step.emoji, err)
		}
		if got := h.fake.Reactions("C0TEAM01", ts); !slices.Equal(got, step.want) {
			t.Errorf("%q → %q: reactions %q, want %q", step.old, step.emoji, got, step.want)
		}
	}
	calls := len(h.fake.ReactionCalls())
	err := h.sl.React(ctx, channels.Reaction{Chat: chat, MessageID: ts, Emoji: "🦄"})
	if err == nil || !strings.Contains(err.Error(), "no Slack name") {
		t.Errorf("an unknown emoji: %v", err)
	}
	if len(h.fake.ReactionCalls()) != calls {
		t.Error("an unknown emoji reached Slack")
	}
}
