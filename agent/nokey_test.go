package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/nokey"
)

// The canned no-key answer reaches the chat and stays in the store, but
// once a key is set and botd restarted, the model's prompt does not carry
// it as something the assistant said; the rest of the conversation, the
// question it answered included, is there.
func TestNoKeyAnswerStaysOutOfLaterPrompts(t *testing.T) {
	notice := nokey.Lead + " Set ANTHROPIC_API_KEY, then restart botd."
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("Dinner is at seven."), nil
	})
	h := newHarness(t, f, func(o *Options) { at(afternoon)(o); o.LLM = nokey.Provider{Message: notice} })
	h.start()
	h.say(famChat, "Carol", "@Andy when is dinner?")
	h.idle()
	if got := sentTexts(h.tg.Sent()); len(got) != 1 || got[0] != notice {
		t.Fatalf("sent %q, want the notice", got)
	}
	var stored int
	if err := h.st.DB.QueryRow(`SELECT COUNT(*) FROM messages WHERE from_me = 1 AND text = ?`, notice).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("notice stored %d times (%v), want once", stored, err)
	}

	h.restart(at(afternoon)) // the key is set: the fake model answers
	h.say(famChat, "Carol", "@Andy so, when is dinner?")
	h.idle()
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("model called %d times, want 1", len(reqs))
	}
	prompt := userText(reqs[0])
	if strings.Contains(prompt, nokey.Lead) {
		t.Errorf("the prompt carries the no-key notice:\n%s", prompt)
	}
	for _, want := range []string{"@Andy when is dinner?", "@Andy so, when is dinner?"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
}
