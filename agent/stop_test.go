package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/llm"
)

// botd is stopped right after the network accepted an answer and before
// botd wrote that down: the answer must not go out again after restart.
func TestStopRightAfterSendDoesNotRepeatIt(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		return textResult("hello there"), nil
	})
	h := newHarness(t, f, nil)
	var once sync.Once
	h.tg.AfterSend = func(channels.OutMessage) { once.Do(h.cancel) }
	h.start()
	h.say(famChat, "Alice", "@Andy hi")
	h.a.Wait() // the hook stopped it
	h.tg.AfterSend = nil
	h.restart(nil)
	h.idle()
	n := 0
	for _, m := range h.tg.Sent() {
		if m.Text == "hello there" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the answer was sent %d times, want once", n)
	}
}
