package agent

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
)

func TestAckReaction(t *testing.T) {
	for _, tc := range []struct {
		name  string
		emoji string
		fail  int // the model fails its first fail calls
		want  []string
	}{
		{"answered", "👀", 0, []string{"👀", ""}},
		{"failed, then answered on the retry", "👀", 1, []string{"👀", failReaction, "👀", ""}},
		{"off", "", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
				if n <= tc.fail {
					return nil, llm.NewError("fake", llm.KindOverloaded, "busy")
				}
				return textResult("pong"), nil
			})
			h := newHarness(t, f, func(o *Options) { o.Intake.AckReaction = tc.emoji })
			h.start()
			id := h.say(famChat, "Alice", "@Andy ping")
			other := h.say(famChat, "Bob", "not for the assistant")
			h.idle()
			if got := h.tg.Reactions(famChat, id); !slices.Equal(got, tc.want) {
				t.Errorf("reactions on the question = %q, want %q", got, tc.want)
			}
			if got := h.tg.Reactions(famChat, other); len(got) != 0 {
				t.Errorf("a message that asked nothing got %q", got)
			}
			if got := sentTexts(h.tg.Sent()); !slices.Contains(got, "pong") {
				t.Errorf("sent %q, want the answer", got)
			}
		})
	}
}

// gateFunc is a Gate from a function.
type gateFunc func(ctx context.Context, in channels.Inbound, g *groups.Group) bool

func (f gateFunc) Intercept(ctx context.Context, in channels.Inbound, g *groups.Group) bool {
	return f(ctx, in, g)
}

// What the gate handles is neither stored nor answered; the rest goes on,
// and the gate is told the chat's group (nil for a stranger's chat).
func TestGateSeesEveryMessageFirst(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("pong"), nil
	})
	seen := map[string]string{}
	h := newHarness(t, f, func(o *Options) {
		o.Intake.Gate = gateFunc(func(ctx context.Context, in channels.Inbound, g *groups.Group) bool {
			folder := "<none>"
			if g != nil {
				folder = g.Folder
			}
			seen[in.Text] = folder
			return in.Text == "/approve ABCD-EF23"
		})
	})
	h.start()
	h.say(mainChat, "Me", "/approve ABCD-EF23")
	h.say("telegram:-999", "Stranger", "@Andy hi")
	h.say(mainChat, "Me", "hello")
	h.idle()
	if want := map[string]string{"/approve ABCD-EF23": "main", "@Andy hi": "<none>", "hello": "main"}; !maps.Equal(seen, want) {
		t.Errorf("gate saw %v, want %v", seen, want)
	}
	if got := sentTexts(h.tg.Sent()); !slices.Equal(got, []string{"pong"}) {
		t.Errorf("sent %q; want one answer, to hello", got)
	}
	if len(f.requests()) != 1 || !strings.Contains(userText(f.requests()[0]), "hello") || strings.Contains(userText(f.requests()[0]), "/approve") {
		t.Errorf("the model was sent %q", userText(f.requests()[0]))
	}
}
