package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/scheduler"
	"github.com/botd-dev/botd/store"
)

// batchBackend is a provider's batch service in memory: batches stay
// running until released; answer decides each item's outcome. Several
// fakeBatcher clients may share one, as a restarted daemon shares the
// provider with the process before it.
type batchBackend struct {
	mu       sync.Mutex
	batches  map[string]*fakeBatch
	n        int
	answer   func(req *llm.Request) llm.BatchOutcome
	refuse   error // SubmitBatch fails with this
	released bool  // every batch ends at its next poll
}

type fakeBatch struct {
	items     []llm.BatchItem
	polls     int
	cancelled bool
}

type fakeBatcher struct{ b *batchBackend }

var _ llm.Batcher = fakeBatcher{}

func (f fakeBatcher) Name() string { return "fakebatch" }

func (f fakeBatcher) SubmitBatch(ctx context.Context, items []llm.BatchItem) (string, error) {
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	if f.b.refuse != nil {
		return "", f.b.refuse
	}
	f.b.n++
	id := fmt.Sprintf("batch_%d", f.b.n)
	f.b.batches[id] = &fakeBatch{items: items}
	return id, nil
}

func (f fakeBatcher) PollBatch(ctx context.Context, id string) (llm.BatchState, error) {
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	b, ok := f.b.batches[id]
	if !ok {
		return "", llm.NewError("fakebatch", llm.KindBadRequest, "no such batch")
	}
	b.polls++
	switch {
	case b.cancelled:
		return llm.BatchFailed, nil
	case f.b.released:
		return llm.BatchEnded, nil
	}
	return llm.BatchRunning, nil
}

func (f fakeBatcher) BatchResults(ctx context.Context, id string) (map[string]llm.BatchOutcome, error) {
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	out := map[string]llm.BatchOutcome{}
	for _, it := range f.b.batches[id].items {
		out[it.ID] = f.b.answer(it.Req)
	}
	return out, nil
}

func (f fakeBatcher) CancelBatch(ctx context.Context, id string) error {
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	f.b.batches[id].cancelled = true
	return nil
}

func (b *batchBackend) release() {
	b.mu.Lock()
	b.released = true
	b.mu.Unlock()
}

func (b *batchBackend) submitted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *batchBackend) polls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, fb := range b.batches {
		n += fb.polls
	}
	return n
}

func newBatchBackend(answer func(req *llm.Request) llm.BatchOutcome) *batchBackend {
	return &batchBackend{batches: map[string]*fakeBatch{}, answer: answer}
}

// batchSummary answers a batch item with the week's summary, billed.
func batchSummary(req *llm.Request) llm.BatchOutcome {
	res := textResult("Summary of the week (batch).")
	res.Usage = llm.Usage{InputTokens: 1000, OutputTokens: 50, CostMicrocents: 150_000, CostKnown: true}
	return llm.BatchOutcome{Result: res}
}

func withBatch(b *batchBackend) func(*Options) {
	return func(o *Options) {
		o.Batch.API, o.Batch.Model = fakeBatcher{b}, "fake-batch-1"
		o.Batch.Poll, o.Batch.PollMax = time.Millisecond, 5*time.Millisecond
	}
}

func batchTask(id int64, prompt string) scheduler.Run {
	t := famTask(id, prompt, false)
	t.Batch = true
	return t
}

func batchState(t *testing.T, h *harness) store.Batch {
	t.Helper()
	var all []store.Batch
	for _, s := range []string{store.BatchPending, store.BatchSubmitted, store.BatchEnded, store.BatchAnswered} {
		bs, err := h.st.Batches(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bs...)
	}
	if len(all) != 1 {
		t.Fatalf("%d batches, want 1", len(all))
	}
	return all[0]
}

// A batch task is handed off: the group answers a question at once while
// the batch runs; when the batch ends its answer reaches the chat once,
// billed to the group with the batch model; the interactive model is not
// called for the task.
func TestBatchTaskAnswered(t *testing.T) {
	f := echoLLM()
	be := newBatchBackend(batchSummary)
	h := newHarness(t, f, withBatch(be))
	h.start()
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the batch is polled", func() bool { return be.polls() >= 2 })
	h.say(famChat, "Carol", "@Andy what time is it")
	testwait.Until(t, "the question answered", func() bool { return len(h.tg.Sent()) == 1 })
	if got := sentTexts(h.tg.Sent()); got[0] != "Tea time." {
		t.Fatalf("while the batch runs the chat got %q, want the question answered", got)
	}
	if b := batchState(t, h); b.State != store.BatchSubmitted || b.Provider != "fakebatch" || b.Model != "fake-batch-1" {
		t.Fatalf("batch %+v", b)
	}

	be.release()
	testwait.Until(t, "the batch's answer", func() bool { return len(h.tg.Sent()) == 2 })
	h.idle()
	if got := sentTexts(h.tg.Sent()); got[1] != "Summary of the week (batch)." {
		t.Fatalf("sent %q", got)
	}
	if f.calls() != 1 {
		t.Errorf("%d interactive model calls, want 1 (the question only)", f.calls())
	}
	if be.submitted() != 1 {
		t.Errorf("%d submissions", be.submitted())
	}
	b := batchState(t, h)
	if b.State != store.BatchAnswered {
		t.Errorf("batch state %s", b.State)
	}
	req := b.Request
	if !strings.Contains(req, "sum up the week") || !strings.Contains(req, "fetch_media") {
		t.Errorf("the stored request lacks the task or the tools: %.300s", req)
	}
	rows, err := h.st.Usage(context.Background(), "family", time.Time{}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	var billed bool
	for _, r := range rows {
		billed = billed || (r.Model == "fake-batch-1" && r.Input == 1000 && r.CostMicrocents == 150_000)
	}
	if !billed {
		t.Errorf("the batch is not billed to the group: %+v", rows)
	}
	// The batch run's input is split as an interactive run's is, by the
	// request the batch sent.
	var sent llm.Request
	if err := json.Unmarshal([]byte(req), &sent); err != nil {
		t.Fatal(err)
	}
	runs, err := h.st.Runs(context.Background(), "family", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := apportion(estimateSplit(&sent), 1000)
	var split bool
	for _, r := range runs {
		split = split || (r.InputTokens == 1000 && r.Split != nil && *r.Split == want)
	}
	if !split || want.Prompt == 0 || want.Tools == 0 || want.Conversation == 0 {
		t.Errorf("the batch run's split is not %+v: %+v", want, runs)
	}
	// The run that handed the task off made no model call: its split is
	// of nothing, known (only runs from before the split read as "—").
	for _, r := range runs {
		if r.Split == nil {
			t.Errorf("run %s (%s) has no split", r.ID, r.Outcome)
		}
	}
}

// Submitted, then the daemon stops; the next one polls the same batch,
// delivers its answer once and submits nothing again.
func TestBatchSurvivesRestart(t *testing.T) {
	be := newBatchBackend(batchSummary)
	h := newHarness(t, echoLLM(), withBatch(be))
	h.start()
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the batch submitted", func() bool {
		bs, err := h.st.Batches(context.Background(), store.BatchSubmitted)
		return err == nil && len(bs) == 1
	})
	h.stop()
	be.release()
	h.restart(withBatch(be))
	testwait.Until(t, "the batch's answer", func() bool { return len(h.tg.Sent()) == 1 })
	// Delivered again (a crash before the scheduler recorded it): still once.
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if got := sentTexts(h.tg.Sent()); strings.Join(got, "|") != "Summary of the week (batch)." || be.submitted() != 1 || h.llm.calls() != 0 {
		t.Fatalf("sent %q, %d submissions, %d interactive calls; want the batch answer once", got, be.submitted(), h.llm.calls())
	}
}

// The batch answer asks for a tool: the tool runs and the run goes on
// interactively, the tool's result in the next request.
func TestBatchResultWithToolCall(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != llm.RoleTool {
			return nil, errors.New("the continuation should start from the tool's result")
		}
		return textResult("Three photos this week."), nil
	})
	be := newBatchBackend(func(req *llm.Request) llm.BatchOutcome {
		return llm.BatchOutcome{Result: toolCall("c1", "list_media", `{}`)}
	})
	h := newHarness(t, f, withBatch(be))
	h.start()
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	be.release()
	testwait.Until(t, "the answer", func() bool { return len(h.tg.Sent()) == 1 })
	h.idle()
	if got := sentTexts(h.tg.Sent()); got[0] != "Three photos this week." || f.calls() != 1 {
		t.Fatalf("sent %q after %d interactive calls", got, f.calls())
	}
	if req := f.requests()[0]; req.Model != "fake-1" || len(req.Messages) != 3 {
		t.Errorf("continuation model %q with %d messages, want the interactive model after user, batch answer, tool result", req.Model, len(req.Messages))
	}
}

// A batch that fails, an item the provider did not answer, a refused
// submission and a batch past its deadline: the task is answered at once
// by the interactive model, once.
func TestBatchFailuresAnswerNow(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*batchBackend, *Options)
	}{
		{"item errored", func(b *batchBackend, o *Options) {
			b.answer = func(*llm.Request) llm.BatchOutcome {
				return llm.BatchOutcome{Err: llm.NewError("fakebatch", llm.KindOverloaded, "expired")}
			}
			b.released = true
		}},
		{"submission refused", func(b *batchBackend, o *Options) {
			b.refuse = llm.NewError("fakebatch", llm.KindBadRequest, "batches are not enabled for this key")
		}},
		{"deadline", func(b *batchBackend, o *Options) { o.Batch.Deadline = time.Nanosecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := echoLLM()
			be := newBatchBackend(batchSummary)
			h := newHarness(t, f, func(o *Options) { withBatch(be)(o); tc.mod(be, o) })
			h.start()
			if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "the answer", func() bool { return len(h.tg.Sent()) == 1 })
			h.idle()
			if got := sentTexts(h.tg.Sent()); got[0] != "Summary of the week." || f.calls() != 1 {
				t.Fatalf("sent %q after %d interactive calls; want the interactive answer once", got, f.calls())
			}
			if b := batchState(t, h); b.State != store.BatchAnswered || b.Error == "" {
				t.Errorf("batch %s with error %q", b.State, b.Error)
			}
		})
	}
}

// A batch left over when no batch API is configured any more is answered
// at start, not forgotten.
func TestBatchLeftOverWithoutBatchAPI(t *testing.T) {
	be := newBatchBackend(batchSummary)
	h := newHarness(t, echoLLM(), withBatch(be))
	h.start()
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the batch submitted", func() bool {
		bs, err := h.st.Batches(context.Background(), store.BatchSubmitted)
		return err == nil && len(bs) == 1
	})
	h.restart(nil)
	testwait.Until(t, "the answer", func() bool { return len(h.tg.Sent()) == 1 })
	if got := sentTexts(h.tg.Sent()); got[0] != "Summary of the week." {
		t.Fatalf("sent %q", got)
	}
}

// Without a batch API a batch task is an ordinary task.
func TestBatchTaskWithoutBatchAPI(t *testing.T) {
	f := echoLLM()
	h := newHarness(t, f, nil)
	h.start()
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if got := sentTexts(h.tg.Sent()); strings.Join(got, "|") != "Summary of the week." || f.calls() != 1 {
		t.Fatalf("sent %q", got)
	}
}

// A batch run asked lazily resumes lazily: the batch's answer calls
// load_tools, and the continuation is offered the tool it loaded after
// the first turn's tools, as a live run would be.
func TestBatchResultLoadsATool(t *testing.T) {
	f := newFakeLLM(func(ctx context.Context, n int, req *llm.Request) (*llm.Result, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != llm.RoleTool || !strings.Contains(toolResultText(last), "Loaded list_media") {
			return textResult("the continuation did not start from load_tools' answer"), nil
		}
		return textResult("Loaded it."), nil
	})
	var submitted []string
	be := newBatchBackend(func(req *llm.Request) llm.BatchOutcome {
		submitted = toolNames(req.Tools)
		return llm.BatchOutcome{Result: toolCall("c1", llm.LoadTools, `{"names":["list_media"]}`)}
	})
	h := newHarness(t, f, func(o *Options) {
		withBatch(be)(o)
		o.Run.EagerTools = false
	})
	h.start()
	if err := h.a.DeliverTask(context.Background(), batchTask(1, "sum up the week")); err != nil {
		t.Fatal(err)
	}
	be.release()
	testwait.Until(t, "the answer", func() bool { return len(h.tg.Sent()) == 1 })
	h.idle()
	if got := sentTexts(h.tg.Sent()); got[0] != "Loaded it." {
		t.Fatalf("sent %q", got)
	}
	if !slices.Contains(submitted, llm.LoadTools) || slices.Contains(submitted, "list_media") {
		t.Fatalf("the batch was asked with tools %v: want load_tools, not list_media", submitted)
	}
	got := toolNames(f.requests()[0].Tools)
	if got[len(got)-1] != "list_media" || !slices.Equal(got[:len(got)-1], submitted) {
		t.Fatalf("the continuation is offered %v: want %v then list_media", got, submitted)
	}
}

// toolResultText is the text of a tool message's results.
func toolResultText(m llm.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.ToolResult != nil {
			for _, c := range p.ToolResult.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}
