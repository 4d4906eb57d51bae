package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// A task marked batch is answered through the provider's batch API, at
// half the price, within hours:
//
//  1. its run builds the request as any run does, then hands it off: the
//     request is stored and the group's cursor moves past the task in one
//     transaction, so the group goes on with its messages meanwhile;
//  2. the batch loop submits it, polls with backoff and stores the result
//     (or why there is none), all in the database, so a restart carries on
//     where the last process stopped;
//  3. the group's worker resumes the run with the result as the model's
//     first answer: tools it asks for run as usual (later turns are
//     interactive), and the answer is queued in the same transaction that
//     marks the batch answered, so it is sent once.
//
// A batch that fails, expires or outlives BatchDeadline loses nothing:
// the run is resumed without a result and answered at once.

// handOff stores a batch run and moves the cursor past its task.
func (a *Agent) handOff(ctx context.Context, g *groups.Group, runID string, req *llm.Request, trig store.Trigger, upTo int64, log *slog.Logger) runResult {
	r := *req
	r.Model = a.opts.BatchModel
	body, err := json.Marshal(&r)
	if err != nil {
		log.Error("agent: batch request cannot be stored; answering now", "err", err)
		return runResult{outcome: outcomeDeliveryFailed, err: err}
	}
	b := store.Batch{ID: runID, Folder: g.Folder, ChatID: trig.ChatID, ThreadID: trig.ThreadID, UpToSeq: upTo,
		Provider: a.opts.Batch.Name(), Model: a.opts.BatchModel, Request: string(body)}
	if g.NeedsTrigger() {
		b.ReplyTo = trig.MessageID
	}
	if err := a.opts.Store.HandOffBatch(ctx, b); err != nil {
		return a.storeFailure(ctx, err)
	}
	log.Info("agent: task handed to the batch API", "provider", b.Provider, "model", b.Model)
	select {
	case a.batchKick <- struct{}{}:
	default:
	}
	return runResult{outcome: outcomeDone}
}

// batchesAtStart returns the groups with a batch result waiting. Batches
// left over while no batch API is configured any more are ended without
// a result, so their tasks are answered now rather than never.
func (a *Agent) batchesAtStart(ctx context.Context) ([]string, error) {
	if a.opts.Batch == nil {
		for _, state := range []string{store.BatchPending, store.BatchSubmitted} {
			bs, err := a.opts.Store.Batches(ctx, state)
			if err != nil {
				return nil, err
			}
			for _, b := range bs {
				a.log.Warn("agent: batch left over but no batch API is configured; answering the task now", "group", b.Folder, "batch", b.BatchID)
				if err := a.opts.Store.BatchEnded(ctx, b.ID, "", "no batch API is configured any more"); err != nil {
					return nil, err
				}
			}
		}
	}
	bs, err := a.opts.Store.Batches(ctx, store.BatchEnded)
	if err != nil {
		return nil, err
	}
	var folders []string
	for _, b := range bs {
		folders = append(folders, b.Folder)
	}
	return folders, nil
}

// runBatches submits and polls batches until ctx ends.
func (a *Agent) runBatches(ctx context.Context) {
	for {
		if !clock.Wait(ctx, clock.Real{}, a.batchTick(ctx), a.batchKick) {
			return
		}
	}
}

// batchTick does what is due and returns how long until the next poll.
func (a *Agent) batchTick(ctx context.Context) time.Duration {
	st := a.opts.Store
	wait := a.opts.BatchPollMax
	pending, err := st.Batches(ctx, store.BatchPending)
	if err != nil {
		a.log.Warn("agent: batches unreadable", "err", err)
		return a.opts.BatchPoll
	}
	for _, b := range pending {
		if ctx.Err() != nil {
			return wait
		}
		if !a.submitBatch(ctx, b) {
			wait = min(wait, a.opts.BatchPoll)
		}
	}
	submitted, err := st.Batches(ctx, store.BatchSubmitted)
	if err != nil {
		a.log.Warn("agent: batches unreadable", "err", err)
		return a.opts.BatchPoll
	}
	now := a.now()
	for _, b := range submitted {
		if ctx.Err() != nil {
			return wait
		}
		if b.NextPoll.After(now) {
			wait = min(wait, b.NextPoll.Sub(now))
			continue
		}
		if next, polling := a.pollBatch(ctx, b); polling {
			wait = min(wait, next)
		}
	}
	return max(wait, time.Millisecond)
}

// submitBatch sends one handed-off run; false means try again later.
func (a *Agent) submitBatch(ctx context.Context, b store.Batch) bool {
	log := a.log.With("group", b.Folder, "run", b.ID)
	var req llm.Request
	if err := json.Unmarshal([]byte(b.Request), &req); err != nil {
		a.endBatch(ctx, b, nil, fmt.Errorf("stored request unreadable: %w", err), log)
		return true
	}
	id, err := a.opts.Batch.SubmitBatch(ctx, []llm.BatchItem{{ID: b.ID, Req: &req}})
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if e := llm.AsError(a.opts.Batch.Name(), err); e.Retryable {
			log.Warn("agent: batch submission failed; will retry", "err", err)
			return false
		}
		a.endBatch(ctx, b, nil, fmt.Errorf("batch refused: %w", err), log)
		return true
	}
	if err := a.opts.Store.BatchSubmitted(ctx, b.ID, id, a.now().Add(a.opts.BatchPoll)); err != nil {
		// The provider has it but we could not note it: it will be
		// submitted again and only the second one's answer is used.
		log.Warn("agent: batch submitted but not recorded", "batch", id, "err", err)
		return false
	}
	log.Info("agent: batch submitted", "provider", a.opts.Batch.Name(), "batch", id)
	return true
}

// pollBatch asks after one submitted batch. polling reports it is still
// running, to be asked again after next.
func (a *Agent) pollBatch(ctx context.Context, b store.Batch) (next time.Duration, polling bool) {
	log := a.log.With("group", b.Folder, "run", b.ID, "batch", b.BatchID)
	next = backoff.Schedule{Initial: a.opts.BatchPoll, Max: a.opts.BatchPollMax}.Wait(b.Polls + 1)
	if a.now().Sub(b.Created) > a.opts.BatchDeadline {
		if err := a.opts.Batch.CancelBatch(ctx, b.BatchID); err != nil {
			log.Warn("agent: cancelling an overdue batch failed", "err", err)
		}
		a.endBatch(ctx, b, nil, fmt.Errorf("the batch ran longer than %s", a.opts.BatchDeadline), log)
		return 0, false
	}
	state, err := a.opts.Batch.PollBatch(ctx, b.BatchID)
	if err == nil && state == llm.BatchEnded {
		var outcomes map[string]llm.BatchOutcome
		if outcomes, err = a.opts.Batch.BatchResults(ctx, b.BatchID); err == nil {
			o, ok := outcomes[b.ID]
			switch {
			case !ok:
				a.endBatch(ctx, b, nil, errors.New("the batch's results do not include this run"), log)
			case o.Err != nil:
				a.endBatch(ctx, b, nil, o.Err, log)
			default:
				a.endBatch(ctx, b, o.Result, nil, log)
			}
			return 0, false
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, false
	case err != nil && !llm.AsError(a.opts.Batch.Name(), err).Retryable && !errors.Is(err, context.DeadlineExceeded):
		a.endBatch(ctx, b, nil, fmt.Errorf("polling the batch: %w", err), log)
		return 0, false
	case err != nil:
		log.Warn("agent: polling a batch failed; will retry", "err", err)
	case state == llm.BatchFailed:
		a.endBatch(ctx, b, nil, errors.New("the provider gave up on the batch"), log)
		return 0, false
	}
	if err := a.opts.Store.BatchPolled(ctx, b.ID, a.now().Add(next)); err != nil {
		log.Warn("agent: batch poll not recorded", "err", err)
	}
	return next, true
}

// endBatch stores the result, or why there is none, and wakes the group.
func (a *Agent) endBatch(ctx context.Context, b store.Batch, res *llm.Result, why error, log *slog.Logger) {
	var body []byte
	msg := ""
	if res != nil {
		var err error
		if body, err = json.Marshal(res); err != nil {
			body, why = nil, fmt.Errorf("result unstorable: %w", err)
		}
	}
	if why != nil {
		msg = why.Error()
		log.Warn("agent: batch gave no answer; the task will be answered now", "err", why)
	} else {
		log.Info("agent: batch answered", "input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens)
	}
	if err := a.opts.Store.BatchEnded(ctx, b.ID, string(body), msg); err != nil {
		log.Warn("agent: batch result not stored", "err", err)
		return
	}
	// Stored: the provider's copy of the results may go now.
	if f, ok := a.opts.Batch.(llm.BatchForgetter); ok && b.BatchID != "" {
		if err := f.ForgetBatch(ctx, b.BatchID); err != nil {
			log.Warn("agent: batch files not deleted at the provider", "err", err)
		}
	}
	a.kick(b.Folder, false)
}

// resumeBatch finishes a batch run in its group's worker.
func (a *Agent) resumeBatch(ctx context.Context, g *groups.Group, b store.Batch) runResult {
	started := time.Now()
	runID := newRunID()
	log := a.log.With("group", g.Folder, "run", runID, "batch_run", b.ID)
	fail := runResult{chat: b.ChatID, thread: b.ThreadID}
	var req llm.Request
	if err := json.Unmarshal([]byte(b.Request), &req); err != nil {
		// Only a database edited by hand gets here; the task is lost
		// loudly rather than retried forever.
		log.Error("agent: batch run's request unreadable; dropping it", "err", err)
		if _, err := a.opts.Store.AnswerBatch(ctx, b.ID, nil); err != nil {
			return a.storeFailure(ctx, err)
		}
		return runResult{outcome: outcomeDone}
	}
	req.Model = a.opts.Model // later turns are interactive
	ws, err := groups.EnsureWorkspace(a.opts.GroupsDir, g)
	if err != nil {
		fail.outcome, fail.err = outcomeDeliveryFailed, err
		return fail
	}
	var bill attempts
	ctx = llm.WithAttemptObserver(ctx, bill.add)
	var first *llm.Result
	if b.Result != "" {
		first = &llm.Result{}
		if err := json.Unmarshal([]byte(b.Result), first); err != nil {
			log.Warn("agent: batch result unreadable; answering now", "err", err)
			first = nil
		} else {
			bill.add(llm.Attempt{Provider: b.Provider, Model: b.Model, Outcome: llm.OutcomeSucceeded, Usage: first.Usage})
		}
	}

	runCtx, tools, done := a.setUp(ctx, g, b.ChatID, log)
	defer done()
	tools, gd := a.guardRun(g, tools)
	if gd != nil && len(req.Messages) > 0 {
		// The conversation is gone; the request holds what it showed.
		// Its notes of strangers' words taint the run as they would have.
		gd.allowRendered(req.Messages[0])
	}
	caps := a.opts.LLM.Capabilities()
	if tools == nil || !caps.Tools {
		req.Tools = nil
	}
	rec := store.AgentRun{ID: runID, Folder: g.Folder, Started: started, UpToSeq: b.UpToSeq}
	defer a.saveRun(ctx, &rec, &bill, &req, log)
	// Not streamed: a batch answer comes whole.
	final, stop := a.turns(ctx, runCtx, g, &req, first, ws, tools, caps, &rec, fail, nil, log)
	if stop != nil {
		return *stop
	}
	log.Info("agent: batch run finished", "outcome", rec.Outcome, "iterations", rec.Iterations, "from_batch", first != nil,
		"input_tokens", rec.InputTokens, "output_tokens", rec.OutputTokens, "took", time.Since(started).Round(time.Millisecond))
	final = a.askToConfirm(g, gd, b.UpToSeq, final, log)
	to := target{chat: b.ChatID, thread: b.ThreadID, replyTo: b.ReplyTo, upTo: b.UpToSeq}
	return a.answer(ctx, g, ws, final, to, &rec, nil, log, func(it *store.OutboxItem) (int64, error) {
		return a.opts.Store.AnswerBatch(ctx, b.ID, it)
	})
}
