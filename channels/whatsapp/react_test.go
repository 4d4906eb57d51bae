package whatsapp

import (
	"context"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// A reaction is a reaction message naming the question by chat, id and (in
// a group) its sender; "" takes it off.
func TestReact(t *testing.T) {
	env := newTestChannel(t, Config{})
	ctx := context.Background()
	for _, emoji := range []string{"👀", ""} {
		if err := env.w.React(ctx, channels.Reaction{Chat: groupID, MessageID: "3EB0QUESTION", Sender: aliceJID.String(), Old: "x", Emoji: emoji}); err != nil {
			t.Fatal(err)
		}
	}
	if len(env.cli.sent) != 2 {
		t.Fatalf("sent %d messages, want 2 reactions", len(env.cli.sent))
	}
	for i, want := range []string{"👀", ""} {
		r := env.cli.sent[i].GetReactionMessage()
		k := r.GetKey()
		if r == nil || r.GetText() != want || k.GetID() != "3EB0QUESTION" || k.GetRemoteJID() != groupJID.String() ||
			k.GetParticipant() != aliceJID.String() || k.GetFromMe() || env.cli.sentTo[i] != groupJID {
			t.Errorf("reaction %d = %v to %s, want %q on 3EB0QUESTION by alice in the group", i, r, env.cli.sentTo[i], want)
		}
	}
	if err := env.w.React(ctx, channels.Reaction{Chat: groupID, MessageID: "3EB0", Sender: "", Emoji: "👀"}); err == nil {
		t.Error("a group reaction without the sender was sent")
	}
}
