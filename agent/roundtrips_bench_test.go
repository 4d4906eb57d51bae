package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store/storetest"
)

// BenchmarkRunRoundTrips measures how often one answered message goes to
// the database, over the real SQLite store through a driver that counts
// round trips (storetest.OpenCounting): the statements and transactions
// of the intake (storing a message that asks for nothing), and of a whole
// answered message (intake, the run, the outbox's delivery), plain and
// with one tool call. A figure to watch, not a number to assert.
func BenchmarkRunRoundTrips(b *testing.B) {
	for _, tc := range []struct {
		name  string
		tool  bool
		quiet bool // the message asks for nothing: the intake alone
	}{
		{name: "intake", quiet: true},
		{name: "answer"},
		{name: "answer_with_tool", tool: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st, counts := storetest.OpenCounting(b)
			f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
				last := req.Messages[len(req.Messages)-1]
				if tc.tool && last.Role == llm.RoleUser {
					return toolCall("c1", "list_media", `{}`), nil
				}
				return textResult("sure"), nil
			})
			h := newHarnessWith(b, st, b.TempDir(), f, nil)
			h.start()
			chat, opts := mainChat, []msgOpt(nil)
			if tc.quiet {
				chat = famChat // needs a mention; none is given
			}
			h.say(chat, "ann", "warm up", opts...)
			h.idle()
			s0, t0 := counts.Statements(), counts.Transactions()
			b.ResetTimer()
			for i := range b.N {
				h.say(chat, "ann", fmt.Sprintf("message %d", i), opts...)
				h.idle()
			}
			b.StopTimer()
			b.ReportMetric(float64(counts.Statements()-s0)/float64(b.N), "statements/op")
			b.ReportMetric(float64(counts.Transactions()-t0)/float64(b.N), "txs/op")
		})
	}
}
