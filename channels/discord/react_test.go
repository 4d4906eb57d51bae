package discord

import (
	"slices"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/channels/discord/discordfake"
)

// The bot's reaction is put, replaced and taken off through the REST
// endpoints of the message's reactions.
func TestReact(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	q, _ := h.post(t, discordfake.Message{Content: "<@" + discordfake.BotUserID + "> who is on duty?"})
	for _, step := range []struct {
		old, emoji string
		want       []string
	}{
		{"", "👀", []string{"👀"}},
		{"👀", "😢", []string{"😢"}},
		{"😢", "", nil},
	} {
		if err := h.dc.React(h.ctx, channels.Reaction{Chat: chatChannel, MessageID: q.ID, Old: step.old, Emoji: step.emoji}); err != nil {
			t.Fatalf("%v; requests %+v", err, h.fake.Requests())
		}
		if got := h.fake.Reactions(discordfake.Channel, q.ID); !slices.Equal(got, step.want) {
			t.Errorf("after %q → %q: reactions %q, want %q", step.old, step.emoji, got, step.want)
		}
	}
	if err := h.dc.React(h.ctx, channels.Reaction{Chat: "discord:not-a-number", MessageID: q.ID, Emoji: "👀"}); err == nil {
		t.Error("a malformed chat id was accepted")
	}
}
