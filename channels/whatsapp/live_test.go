package whatsapp

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.mau.fi/whatsmeow/types"

	"github.com/botd-dev/botd/channels"
)

// TestLiveAnswerSendsOnceAtFinish: a WhatsApp live answer shows
// "typing…" while the model writes and goes out as one message when done,
// however many updates came before.
func TestLiveAnswerSendsOnceAtFinish(t *testing.T) {
	cases := []struct {
		name    string
		updates []string
		final   string
		want    []string
	}{
		{"grows then finishes", []string{"The rota", "The rota changes", "The rota changes on Monday"},
			"The rota changes on Monday.", []string{"The rota changes on Monday."}},
		{"replaced by a retry", []string{"Half an ans"}, "A different, whole answer.", []string{"A different, whole answer."}},
		{"long answer split at the limit", []string{"word"}, strings.Repeat("word ", 1500), []string{"word", "word"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestChannel(t, Config{})
			ctx := context.Background()
			lm, err := env.w.BeginStream(ctx, channels.OutMessage{Chat: groupID, Text: "The"})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range tc.updates {
				lm.Update(u)
			}
			env.cli.mu.Lock()
			sentBefore, presence := len(env.cli.sent), slices.Clone(env.cli.presence)
			env.cli.mu.Unlock()
			if sentBefore != 0 || len(lm.IDs()) != 0 {
				t.Fatalf("before Finish: %d messages sent, ids %v; want nothing shown", sentBefore, lm.IDs())
			}
			if !slices.Equal(presence, []types.ChatPresence{types.ChatPresenceComposing}) {
				t.Fatalf("presence before Finish = %v, want [composing]", presence)
			}
			d, err := lm.Finish(ctx, tc.final)
			if err != nil {
				t.Fatal(err)
			}
			if len(env.cli.sent) != len(tc.want) {
				t.Fatalf("sent %d messages, want %d", len(env.cli.sent), len(tc.want))
			}
			for i, m := range env.cli.sent {
				if got := m.GetConversation(); !strings.HasPrefix(got, tc.want[i]) || len([]rune(got)) > textLimit {
					t.Errorf("message %d = %.40q (%d runes), want %q…", i, got, len([]rune(got)), tc.want[i])
				}
			}
			if !slices.Equal(d.MessageIDs, lm.IDs()) || len(d.MessageIDs) != len(tc.want) {
				t.Errorf("delivery %v, IDs %v", d.MessageIDs, lm.IDs())
			}
			// A repeated Finish (a retried outbox step) sends no second copy.
			if _, err := lm.Finish(ctx, tc.final); err != nil || len(env.cli.sent) != len(tc.want) {
				t.Errorf("second Finish: err %v, %d messages sent", err, len(env.cli.sent))
			}
		})
	}
}

func TestLiveAnswerCancelClearsTyping(t *testing.T) {
	env := newTestChannel(t, Config{})
	ctx := context.Background()
	lm, err := env.w.BeginStream(ctx, channels.OutMessage{Chat: groupID, Text: "Let me"})
	if err != nil {
		t.Fatal(err)
	}
	lm.Update("Let me check")
	if err := lm.Cancel(ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	if len(env.cli.sent) != 0 {
		t.Errorf("Cancel sent %d messages", len(env.cli.sent))
	}
	want := []types.ChatPresence{types.ChatPresenceComposing, types.ChatPresencePaused}
	if !slices.Equal(env.cli.presence, want) {
		t.Errorf("presence = %v, want %v", env.cli.presence, want)
	}
	if d, err := lm.Finish(ctx, "Let me check."); err != nil || len(d.MessageIDs) != 0 || len(env.cli.sent) != 0 {
		t.Errorf("Finish after Cancel: %v, %v, %d sent", d, err, len(env.cli.sent))
	}
	// Nothing was shown, so a crash leaves nothing to mark.
	if err := env.w.InterruptStream(ctx, groupID, []string{"3EB0X"}, "Let me"); err != nil || len(env.cli.sent) != 0 {
		t.Errorf("InterruptStream: %v, %d sent", err, len(env.cli.sent))
	}
}

func TestLiveAnswerRefusesForeignChat(t *testing.T) {
	env := newTestChannel(t, Config{})
	if _, err := env.w.BeginStream(context.Background(), channels.OutMessage{Chat: "slack:C1", Text: "x"}); err == nil {
		t.Fatal("BeginStream accepted a slack chat")
	}
	if len(env.cli.presence) != 0 {
		t.Errorf("presence sent: %v", env.cli.presence)
	}
}

// TestSendsGoThroughRender: text and captions are formatted for WhatsApp
// by the one render hook (format.Render once merged).
func TestSendsGoThroughRender(t *testing.T) {
	old := render
	t.Cleanup(func() { render = old })
	var limits []int
	render = func(md string, limit int) []string {
		limits = append(limits, limit)
		return []string{strings.ReplaceAll(md, "**", "*")}
	}
	env := newTestChannel(t, Config{SharedNumber: true})
	if _, err := env.w.Send(context.Background(), channels.OutMessage{Chat: groupID, Text: "a **bold** claim"}); err != nil {
		t.Fatal(err)
	}
	if got := env.cli.sent[0].GetConversation(); got != "Andy: a *bold* claim" {
		t.Errorf("sent %q", got)
	}
	if want := textLimit - len("Andy: "); !slices.Equal(limits, []int{want}) {
		t.Errorf("render limits = %v, want [%d]", limits, want)
	}
}
