package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
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

// BatchOptions are the batch API that answers tasks marked batch.
type BatchOptions struct {
	// API, when set, answers the runs of tasks marked batch through this
	// provider's batch API, with Model. Interactive runs never use it.
	API   llm.Batcher
	Model string
	// Poll is the first wait between polls of a batch, doubling up to
	// PollMax; zero means one minute and ten minutes.
	Poll    time.Duration
	PollMax time.Duration
	// Deadline is how long a submitted batch may run before it is
	// cancelled and the task answered at once; zero means 25h (the
	// providers promise 24h).
	Deadline time.Duration
}

func (o BatchOptions) withDefaults() BatchOptions {
	if o.Poll <= 0 {
		o.Poll = time.Minute
	}
	if o.PollMax <= 0 {
		o.PollMax = 10 * time.Minute
	}
	if o.Deadline <= 0 {
		o.Deadline = 25 * time.Hour
	}
	return o
}

// batcher is the batch loop: it submits handed-off runs, polls them and
// stores their results, then wakes the group's worker.
type batcher struct {
	o    BatchOptions
	st   *store.Store
	now  func() time.Time
	log  *slog.Logger
	kick chan struct{}       // wakes the loop: a run was handed off
	wake func(folder string) // queues the group whose batch ended
}

// handOff stores the run's request as a batch and moves the cursor past
// its task.
func (r *Run) handOff() runResult {
	bt := r.a.batches
	req := *r.req
	req.Model = bt.o.Model
	body, err := json.Marshal(&req)
	if err != nil {
		r.log.Error("agent: batch request cannot be stored; answering now", "err", err)
		return runResult{outcome: outcomeDeliveryFailed, err: err}
	}
	b := store.Batch{ID: r.id, Folder: r.g.Folder, ChatID: r.to.chat, ThreadID: r.to.thread, UpToSeq: r.to.upTo,
		Provider: bt.o.API.Name(), Model: bt.o.Model, Request: string(body), ReplyTo: r.to.replyTo}
	if err := bt.st.HandOffBatch(r.ctx, b); err != nil {
		return storeFailure(r.ctx, err)
	}
	r.log.Info("agent: task handed to the batch API", "provider", b.Provider, "model", b.Model)
	select {
	case bt.kick <- struct{}{}:
	default:
	}
	return runResult{outcome: outcomeDone}
}

// batchesAtStart returns the groups with a batch result waiting. Batches
// left over while no batch API is configured any more (bt nil) are ended
// without a result, so their tasks are answered now rather than never.
func batchesAtStart(ctx context.Context, bt *batcher, st *store.Store, log *slog.Logger) ([]string, error) {
	if bt == nil {
		for _, state := range []string{store.BatchPending, store.BatchSubmitted} {
			bs, err := st.Batches(ctx, state)
			if err != nil {
				return nil, err
			}
			for _, b := range bs {
				log.Warn("agent: batch left over but no batch API is configured; answering the task now", "group", b.Folder, "batch", b.BatchID)
				if err := st.BatchEnded(ctx, b.ID, "", "no batch API is configured any more"); err != nil {
					return nil, err
				}
			}
		}
	}
	bs, err := st.Batches(ctx, store.BatchEnded)
	if err != nil {
		return nil, err
	}
	var folders []string
	for _, b := range bs {
		folders = append(folders, b.Folder)
	}
	return folders, nil
}

// loop submits and polls batches until ctx ends.
func (bt *batcher) loop(ctx context.Context) {
	for {
		if !clock.Wait(ctx, clock.Real{}, bt.tick(ctx), bt.kick) {
			return
		}
	}
}

// tick does what is due and returns how long until the next poll.
func (bt *batcher) tick(ctx context.Context) time.Duration {
	st := bt.st
	wait := bt.o.PollMax
	pending, err := st.Batches(ctx, store.BatchPending)
	if err != nil {
		bt.log.Warn("agent: batches unreadable", "err", err)
		return bt.o.Poll
	}
	for _, b := range pending {
		if ctx.Err() != nil {
			return wait
		}
		if !bt.submit(ctx, b) {
			wait = min(wait, bt.o.Poll)
		}
	}
	submitted, err := st.Batches(ctx, store.BatchSubmitted)
	if err != nil {
		bt.log.Warn("agent: batches unreadable", "err", err)
		return bt.o.Poll
	}
	now := bt.now()
	for _, b := range submitted {
		if ctx.Err() != nil {
			return wait
		}
		if b.NextPoll.After(now) {
			wait = min(wait, b.NextPoll.Sub(now))
			continue
		}
		if next, polling := bt.poll(ctx, b); polling {
			wait = min(wait, next)
		}
	}
	return max(wait, time.Millisecond)
}

// submit sends one handed-off run; false means try again later.
func (bt *batcher) submit(ctx context.Context, b store.Batch) bool {
	log := bt.log.With("group", b.Folder, "run", b.ID)
	var req llm.Request
	if err := json.Unmarshal([]byte(b.Request), &req); err != nil {
		bt.end(ctx, b, batchOutcome{why: fmt.Errorf("stored request unreadable: %w", err)})
		return true
	}
	api := bt.o.API
	id, err := api.SubmitBatch(ctx, []llm.BatchItem{{ID: b.ID, Req: &req}})
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if e := llm.AsError(api.Name(), err); e.Retryable {
			log.Warn("agent: batch submission failed; will retry", "err", err)
			return false
		}
		bt.end(ctx, b, batchOutcome{why: fmt.Errorf("batch refused: %w", err)})
		return true
	}
	if err := bt.st.BatchSubmitted(ctx, b.ID, id, bt.now().Add(bt.o.Poll)); err != nil {
		// The provider has it but we could not note it: it will be
		// submitted again and only the second one's answer is used.
		log.Warn("agent: batch submitted but not recorded", "batch", id, "err", err)
		return false
	}
	log.Info("agent: batch submitted", "provider", api.Name(), "batch", id)
	return true
}

// poll asks after one submitted batch. polling reports it is still
// running, to be asked again after next.
func (bt *batcher) poll(ctx context.Context, b store.Batch) (next time.Duration, polling bool) {
	log := bt.log.With("group", b.Folder, "run", b.ID, "batch", b.BatchID)
	api := bt.o.API
	next = backoff.Schedule{Initial: bt.o.Poll, Max: bt.o.PollMax}.Wait(b.Polls + 1)
	if bt.now().Sub(b.Created) > bt.o.Deadline {
		if err := api.CancelBatch(ctx, b.BatchID); err != nil {
			log.Warn("agent: cancelling an overdue batch failed", "err", err)
		}
		bt.end(ctx, b, batchOutcome{why: fmt.Errorf("the batch ran longer than %s", bt.o.Deadline)})
		return 0, false
	}
	state, err := api.PollBatch(ctx, b.BatchID)
	if err == nil && state == llm.BatchEnded {
		var outcomes map[string]llm.BatchOutcome
		if outcomes, err = api.BatchResults(ctx, b.BatchID); err == nil {
			o, ok := outcomes[b.ID]
			switch {
			case !ok:
				bt.end(ctx, b, batchOutcome{why: errors.New("the batch's results do not include this run")})
			case o.Err != nil:
				bt.end(ctx, b, batchOutcome{why: o.Err})
			default:
				bt.end(ctx, b, batchOutcome{res: o.Result})
			}
			return 0, false
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return 0, false
	case err != nil && !llm.AsError(api.Name(), err).Retryable && !errors.Is(err, context.DeadlineExceeded):
		bt.end(ctx, b, batchOutcome{why: fmt.Errorf("polling the batch: %w", err)})
		return 0, false
	case err != nil:
		log.Warn("agent: polling a batch failed; will retry", "err", err)
	case state == llm.BatchFailed:
		bt.end(ctx, b, batchOutcome{why: errors.New("the provider gave up on the batch")})
		return 0, false
	}
	if err := bt.st.BatchPolled(ctx, b.ID, bt.now().Add(next)); err != nil {
		log.Warn("agent: batch poll not recorded", "err", err)
	}
	return next, true
}

// batchOutcome is what a batch came to: its result, or why there is none.
type batchOutcome struct {
	res *llm.Result
	why error
}

// end stores the result, or why there is none, and wakes the group.
func (bt *batcher) end(ctx context.Context, b store.Batch, out batchOutcome) {
	log := bt.log.With("group", b.Folder, "run", b.ID, "batch", b.BatchID)
	res, why := out.res, out.why
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
	if err := bt.st.BatchEnded(ctx, b.ID, string(body), msg); err != nil {
		log.Warn("agent: batch result not stored", "err", err)
		return
	}
	// Stored: the provider's copy of the results may go now.
	if f, ok := bt.o.API.(llm.BatchForgetter); ok && b.BatchID != "" {
		if err := f.ForgetBatch(ctx, b.BatchID); err != nil {
			log.Warn("agent: batch files not deleted at the provider", "err", err)
		}
	}
	bt.wake(b.Folder)
}

// resume finishes a batch run in its group's worker: the batch's result
// is the model's first answer (none: the run is answered now).
func (r *Run) resume(ctx context.Context, b store.Batch) runResult {
	a := r.a
	r.log = r.log.With("batch_run", b.ID)
	var req llm.Request
	if err := json.Unmarshal([]byte(b.Request), &req); err != nil {
		// Only a database edited by hand gets here; the task is lost
		// loudly rather than retried forever.
		r.log.Error("agent: batch run's request unreadable; dropping it", "err", err)
		if err := a.opts.Store.AnswerBatch(ctx, b.ID, nil); err != nil {
			return storeFailure(ctx, err)
		}
		return runResult{outcome: outcomeDone}
	}
	req.Model = r.grp.Model // later turns are interactive, on the group's model
	r.req = &req
	if err := r.begin(ctx); err != nil {
		return r.failed(outcomeDeliveryFailed, err)
	}
	var first *llm.Result
	if b.Result != "" {
		first = &llm.Result{}
		if err := json.Unmarshal([]byte(b.Result), first); err != nil {
			r.log.Warn("agent: batch result unreadable; answering now", "err", err)
			first = nil
		} else {
			r.bill.add(llm.Attempt{Provider: b.Provider, Model: b.Model, Outcome: llm.OutcomeSucceeded, Usage: first.Usage})
		}
	}

	defer r.open()()
	r.guardTools()
	if r.guard != nil && len(req.Messages) > 0 {
		// The conversation is gone; the request holds what it showed.
		// Its notes of strangers' words taint the run as they would have.
		r.guard.allowRendered(req.Messages[0])
	}
	if r.tools == nil || !r.caps.Tools {
		req.Tools = nil
	} else if slices.ContainsFunc(req.Tools, func(t llm.Tool) bool { return t.Name == llm.LoadTools }) {
		// Asked lazily: the batch's answer may load tools or call
		// load_tools' index, as a live run's would.
		r.lazyTools()
	}
	r.rec = store.AgentRun{ID: r.id, Folder: r.g.Folder, Started: r.started, UpToSeq: b.UpToSeq}
	defer r.save()
	// Not streamed: a batch answer comes whole.
	final, stop := r.turns(first)
	if stop != nil {
		return *stop
	}
	r.log.Info("agent: batch run finished", "outcome", r.rec.Outcome, "iterations", r.rec.Iterations, "from_batch", first != nil,
		"input_tokens", r.rec.InputTokens, "output_tokens", r.rec.OutputTokens, "took", time.Since(r.started).Round(time.Millisecond))
	final = r.askToConfirm(final)
	return r.answer(final, func(it *outboxdb.Item) (id int64, err error) {
		// The answer is queued in the transaction that marks the batch
		// answered: it is sent once.
		err = a.opts.Store.AnswerBatch(r.ctx, b.ID, func(tx *sql.Tx) error {
			if it == nil {
				return nil
			}
			id, err = outboxdb.AddTx(r.ctx, tx, *it)
			return err
		})
		return id, err
	})
}
