package telegram

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// setMessageReaction carries one emoji reaction, or none to take the
// bot's off; a message id that is not a number never leaves botd.
func TestReact(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	ctx := context.Background()
	for _, step := range []struct{ old, emoji string }{{"", "👀"}, {"👀", "😢"}, {"😢", ""}} {
		if err := h.tg.React(ctx, channels.Reaction{Chat: "telegram:-100", MessageID: "42", Old: step.old, Emoji: step.emoji}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.fake.Reactions(-100, 42); !slices.Equal(got, []string{"👀", "😢", ""}) {
		t.Errorf("reactions = %q, want 👀, 😢, then none", got)
	}
	calls := h.fake.Calls("setmessagereaction")
	if err := h.tg.React(ctx, channels.Reaction{Chat: "telegram:-100", MessageID: "not-a-number", Emoji: "👀"}); err == nil {
		t.Error("a message id that is not a number was accepted")
	}
	if h.fake.Calls("setmessagereaction") != calls {
		t.Error("a malformed message id reached the Bot API")
	}
}

// With privacy mode on (getMe's can_read_all_group_messages false, every
// new bot's default) the channel says what that means; off, nothing.
func TestSightNote(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	if note := h.tg.SightNote(); !strings.Contains(note, "privacy mode is on") || !strings.Contains(note, "/setprivacy") {
		t.Errorf("note with privacy mode on = %q", note)
	}
	h2 := newHarness(t)
	h2.fake.Bot.CanReadAllGroupMessages = true
	h2.start(t)
	if note := h2.tg.SightNote(); note != "" {
		t.Errorf("note with privacy mode off = %q, want none", note)
	}
}
