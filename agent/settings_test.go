package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
)

// Apply during a run: the run finishes with the chain, model and limits it
// started with (two turns, where the new limit allows one), and the next
// run is made with the new ones.
func TestApplyDuringARunKeepsThatRunsSettings(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	old := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		if n == 1 {
			close(entered)
			<-release
			return toolCall("c1", "list_media", `{}`), nil
		}
		return textResult("old answer"), nil
	})
	h := newHarness(t, old, nil)
	h.start()
	h.say(famChat, "Alice", "@Andy first question")
	<-entered

	next := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("new answer"), nil
	})
	h.a.Apply(Settings{LLM: next, Run: RunLimits{Model: "fake-2", MaxIterations: 1}})
	if got := h.a.Settings(); got.Run.Model != "fake-2" || got.Run.Timeout <= 0 || got.Context.MaxMessages <= 0 {
		t.Fatalf("settings after Apply = %+v; want the new model and the defaults filled in", got.Run)
	}
	close(release)
	testwait.Within(t, chantest.HangGuard, "the first run's answer", func() bool {
		return slices.Contains(sentTexts(h.tg.Sent()), "old answer")
	})
	reqs := old.requests()
	if len(reqs) != 2 || reqs[0].Model != "fake-1" || reqs[1].Model != "fake-1" {
		t.Fatalf("the running run's requests: %d, models %v; want both turns on fake-1", len(reqs), modelsOf(reqs))
	}

	h.say(famChat, "Alice", "@Andy second question")
	testwait.Within(t, chantest.HangGuard, "the second run's answer", func() bool {
		return slices.Contains(sentTexts(h.tg.Sent()), "new answer")
	})
	if reqs := next.requests(); len(reqs) != 1 || reqs[0].Model != "fake-2" || !strings.Contains(userText(reqs[0]), "second question") {
		t.Fatalf("the next run's requests: %v", modelsOf(reqs))
	}
	if n := old.calls(); n != 2 {
		t.Errorf("the old chain was called %d times, want only the first run's 2", n)
	}
}

func modelsOf(reqs []llm.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Model)
	}
	return out
}
