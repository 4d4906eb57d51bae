package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/modelview"
	"github.com/botd-dev/botd/store"
)

type outcome int

const (
	outcomeDone           outcome = iota // answered, or nothing to do
	outcomeStopped                       // shutting down; Start picks it up next time
	outcomeModelFailed                   // the provider failed: retry with backoff
	outcomeDeliveryFailed                // the channel failed: retry the outbox with backoff
)

type runResult struct {
	outcome outcome
	err     error
	// where to tell the chat about a failure
	chat, thread string
}

// Texts the chat sees when a run cannot produce a real answer. They are
// short on purpose: the chat is not the place for diagnostics.
const (
	msgTimeout     = "Sorry, that took me too long and I stopped. Please try again, perhaps with a simpler question."
	msgIterations  = "Sorry, I went round in circles on that one and stopped. Please try again, perhaps with a simpler question."
	msgModelFailed = "Sorry, I can't reach my language model right now. I'll try again in a little while."
)

// errAbort marks a run deliberately ended by the BeforeOutbox test hook.
var errAbort = errors.New("run aborted before the outbox write")

// runOnce does one unit of work for a group: deliver what the outbox owes,
// then, if a trigger is past the cursor, run the model and deliver its
// answer.
func (a *Agent) runOnce(ctx context.Context, folder string) runResult {
	g, ok := a.group(folder)
	if !ok {
		return runResult{outcome: outcomeDone}
	}
	if res, ok := a.drainOutbox(ctx, folder); !ok {
		return res
	}
	st := a.opts.Store
	if b, ok, err := st.EndedBatch(ctx, folder); err != nil {
		return a.storeFailure(ctx, err)
	} else if ok {
		a.again(folder) // then whatever else is due
		return a.resumeBatch(ctx, &g, b)
	}
	cursor, err := st.AgentCursor(ctx, folder)
	if err != nil {
		return a.storeFailure(ctx, err)
	}
	trig, ok, err := st.LastTrigger(ctx, folder)
	if err != nil {
		return a.storeFailure(ctx, err)
	}
	if !ok || trig.Seq <= cursor {
		return runResult{outcome: outcomeDone}
	}
	return a.think(ctx, &g, cursor, trig)
}

func (a *Agent) storeFailure(ctx context.Context, err error) runResult {
	// Fenced: this instance lost the lease; its successor answers, and
	// the daemon is stopping this one.
	if ctx.Err() != nil || errors.Is(err, store.ErrFenced) {
		return runResult{outcome: outcomeStopped, err: err}
	}
	// The database is local; treat a failure like a delivery failure:
	// retried with backoff, no message to a chat we may not reach anyway.
	return runResult{outcome: outcomeDeliveryFailed, err: err}
}

// think runs the model over the messages since cursor.
func (a *Agent) think(ctx context.Context, g *groups.Group, cursor int64, trig store.Trigger) runResult {
	started := time.Now()
	runID := newRunID()
	log := a.log.With("group", g.Folder, "run", runID)
	fail := runResult{chat: trig.ChatID, thread: trig.ThreadID}

	ws, err := groups.EnsureWorkspace(a.opts.GroupsDir, g)
	if err != nil {
		fail.outcome, fail.err = outcomeDeliveryFailed, err
		return fail
	}
	if res, over := a.overBudget(ctx, g, trig, log); over {
		return res
	}
	// Every model call of the run is billed to it, the summary of older
	// messages and failed attempts included.
	var bill attempts
	ctx = llm.WithAttemptObserver(ctx, bill.add)
	conv, upTo, err := a.loadConversation(ctx, g, cursor)
	if err != nil {
		return a.storeFailure(ctx, err)
	}
	if len(conv.Msgs) == 0 {
		return runResult{outcome: outcomeDone}
	}
	if upTo < trig.Seq {
		// A task message runs alone (taskAlone): the rest waits for the
		// next run, and this run answers where its own last message was.
		a.again(g.Folder)
		last := conv.Msgs[len(conv.Msgs)-1]
		trig = store.Trigger{Folder: g.Folder, Seq: upTo, ChatID: last.ChatID, MessageID: last.ID, ThreadID: last.ThreadID}
		fail.chat, fail.thread = trig.ChatID, trig.ThreadID
	}
	memory, err := ws.Memory()
	if err != nil {
		log.Warn("agent: memory file unreadable; running without it", "err", err)
	}
	global, err := groups.GlobalWorkspace(a.opts.GroupsDir).Memory()
	if err != nil {
		log.Warn("agent: global memory unreadable; running without it", "err", err)
	}
	if isolatedRun(conv.Msgs) {
		memory, global = "", ""
	}
	var user strings.Builder
	renderConversation(&user, conv, a.opts.Location)
	log.Debug("agent: context", "new_messages", len(conv.Msgs), "earlier_messages", len(conv.Earlier),
		"summary", conv.Summary != "", "media_notes", len(conv.Notes), "estimated_tokens", estimateTokens(user.String())+estimateTokens(conv.Summary))

	runCtx, tools, done := a.setUp(ctx, g, trig.ChatID, log)
	defer done()
	// What a person confirmed is done before the model is asked, by
	// botd, past the guard (confirm.go).
	user.WriteString(a.runConfirmed(runCtx, g, tools, a.takeConfirmed(g.Folder, conv.Msgs)))
	tools, gd := a.guardRun(g, tools)
	if gd != nil {
		gd.fromConversation(conv)
	}
	to := target{chat: trig.ChatID, thread: trig.ThreadID, upTo: upTo}
	if g.NeedsTrigger() {
		to.replyTo = trig.MessageID // in a busy group, quote the question
	}
	req := &llm.Request{
		Model:     a.opts.Model,
		System:    buildSystem(a.opts.AssistantName, g, a.opts.Internet, memory, global, conv.Summary),
		Messages:  []llm.Message{llm.UserText(user.String())},
		MaxTokens: a.opts.MaxTokens,
	}
	caps := a.opts.LLM.Capabilities()
	if tools != nil && caps.Tools {
		req.Tools = tools.Tools()
	}

	rec := store.AgentRun{ID: runID, Folder: g.Folder, Started: started, UpToSeq: upTo}
	defer a.saveRun(ctx, &rec, &bill, req, log)

	if a.opts.Batch != nil && batchRun(conv.Msgs) {
		rec.Outcome = "batched"
		return a.handOff(ctx, g, runID, req, trig, upTo, log)
	}

	lv := a.newLive(g.Folder, to, log)
	final, stop := a.turns(ctx, runCtx, g, req, nil, ws, tools, caps, &rec, fail, lv, log)
	if stop != nil {
		return *stop
	}
	final = a.askToConfirm(g, gd, upTo, final, log)
	log.Info("agent: run finished", "outcome", rec.Outcome, "iterations", rec.Iterations,
		"input_tokens", rec.InputTokens, "output_tokens", rec.OutputTokens, "took", time.Since(started).Round(time.Millisecond))

	return a.answer(ctx, g, ws, final, to, &rec, lv, log, func(it *store.OutboxItem) (int64, error) {
		if it == nil {
			// Deciding to stay silent is an answer too: those messages are done.
			return 0, a.opts.Store.AdvanceAgentCursor(ctx, g.Folder, upTo)
		}
		return a.opts.Store.AddOutbox(ctx, *it)
	})
}

// guardRun puts the run's guard (guard.go) before its tools; without
// tools there is nothing to guard (nil).
func (a *Agent) guardRun(g *groups.Group, ts ToolSession) (ToolSession, *guard) {
	if ts == nil {
		return nil, nil
	}
	gd := newGuard(ts, g.Folder)
	if a.opts.Media != nil {
		if c := a.opts.Media(g.Folder); c != nil {
			gd.ownTask = ownTaskLookup(c)
		}
	}
	return gd, gd
}

// askToConfirm adds to a run's answer botd's line asking a person to
// confirm the calls the guard refused, if any.
func (a *Agent) askToConfirm(g *groups.Group, gd *guard, upTo int64, final string, log *slog.Logger) string {
	if gd == nil {
		return final
	}
	refused := gd.Refused()
	if len(refused) == 0 {
		return final
	}
	log.Info("agent: calls refused after reading strangers' words", "calls", len(refused), "tainted_by", gd.Tainted())
	return strings.TrimSpace(final + "\n\n" + a.offerConfirm(g.Folder, upTo, gd.Tainted(), refused))
}

// target is where a run's answer goes and which messages it answers.
type target struct {
	chat, thread, replyTo string
	upTo                  int64
}

// answer turns the final text into an outbox item, has queue store it (a
// nil item: the run stays silent) and delivers it.
//
// A live answer (lv, nil for none) is finished by the item's delivery;
// one that gets no text (a silent or spoken answer, files only) is
// removed.
func (a *Agent) answer(ctx context.Context, g *groups.Group, ws groups.Workspace, final string, to target, rec *store.AgentRun,
	lv *liveRun, log *slog.Logger, queue func(*store.OutboxItem) (int64, error)) runResult {
	ans, refused := parseAnswer(final, ws)
	for _, err := range refused {
		log.Warn("agent: file in the answer not sent", "err", err)
	}
	if a.opts.BeforeOutbox != nil {
		if err := a.opts.BeforeOutbox(g.Folder); err != nil {
			rec.Outcome, rec.Error = "aborted", err.Error()
			return runResult{outcome: outcomeStopped, err: errors.Join(errAbort, err)}
		}
	}
	if ans.Text == "" || ans.Voice {
		lv.cancel(ctx, "")
	}
	if ans.empty() {
		if _, err := queue(nil); err != nil {
			return a.storeFailure(ctx, err)
		}
		return runResult{outcome: outcomeDone}
	}
	item := store.OutboxItem{Folder: g.Folder, ChatID: to.chat, UpToSeq: to.upTo, Text: ans.Text, Media: ans.Media, ThreadID: to.thread, ReplyTo: to.replyTo, Voice: ans.Voice}
	lm, row := lv.take()
	if lm != nil {
		item.LiveIDs = lm.IDs()
	}
	id, err := queue(&item)
	if err != nil {
		if lm != nil {
			if cerr := lm.Cancel(context.WithoutCancel(ctx), msgLiveFailed); cerr != nil {
				log.Warn("agent: live answer not cancelled", "err", cerr)
			}
			a.closeLive(ctx, row)
		}
		return a.storeFailure(ctx, err)
	}
	item.ID = id
	if lm != nil {
		a.holdLive(id, lm, row)
	}
	if err := a.deliver(ctx, &item); err != nil {
		return runResult{outcome: outcomeDeliveryFailed, err: err}
	}
	return runResult{outcome: outcomeDone}
}

// setUp shows "typing…" in chat (renewed every typingEvery until done),
// bounds the run by RunTimeout and opens its tools (nil when
// unavailable: the run answers without them); done undoes all three.
func (a *Agent) setUp(ctx context.Context, g *groups.Group, chat string, log *slog.Logger) (runCtx context.Context, tools ToolSession, done func()) {
	stopTyping := a.keepTyping(ctx, chat)
	stopCtx, stop := context.WithCancelCause(ctx)
	forget := a.stoppable(g.Folder, stop)
	runCtx, cancelTimeout := context.WithTimeout(stopCtx, a.opts.RunTimeout)
	cancel := func() {
		forget()
		cancelTimeout()
		stop(nil)
	}
	tools, err := a.opts.Tools(runCtx, g)
	if err != nil {
		log.Warn("agent: tools unavailable; answering without them", "err", err)
	}
	return runCtx, tools, func() {
		if tools != nil {
			tools.Close()
		}
		cancel()
		stopTyping()
		a.typing(context.WithoutCancel(ctx), chat, false)
	}
}

// saveRun records a finished run with its bill and transcript.
func (a *Agent) saveRun(ctx context.Context, rec *store.AgentRun, bill *attempts, req *llm.Request, log *slog.Logger) {
	rec.Finished = time.Now()
	rec.Attempts, rec.Model = bill.list()
	if err := a.opts.Store.SaveRun(context.WithoutCancel(ctx), *rec, toTranscript(req.Messages)); err != nil {
		log.Warn("agent: transcript not saved", "err", err)
	}
	if a.opts.RunDone != nil {
		a.opts.RunDone(*rec)
	}
}

// turns is a run's model loop: call the model, run the tools it asks for,
// until it answers, hits the iteration limit or the deadline. first, when
// set, is the answer to the first call, already in (a batch result). stop
// is set when the run must end without an answer: shutting down, or the
// model failed (to be retried; told to fail's chat and thread). A real
// answer's media notes are kept before it returns.
func (a *Agent) turns(ctx, runCtx context.Context, g *groups.Group, req *llm.Request, first *llm.Result, ws groups.Workspace, tools ToolSession,
	caps llm.Capabilities, rec *store.AgentRun, fail runResult, lv *liveRun, log *slog.Logger) (final string, stop *runResult) {
	var usage llm.Usage
	answered := false
	for rec.Iterations < a.opts.MaxIterations {
		rec.Iterations++
		res, err := first, error(nil)
		switch {
		case first != nil:
		case lv != nil && caps.Streaming:
			res, err = a.streamTurn(runCtx, req, lv, log)
		default:
			res, err = a.opts.LLM.Generate(runCtx, req)
		}
		first = nil
		if err != nil {
			switch {
			case ctx.Err() != nil:
				rec.Outcome, rec.Error = "stopped", err.Error()
				return "", &runResult{outcome: outcomeStopped, err: err}
			case stoppedByUser(runCtx):
				final, answered = "", true
				rec.Outcome = "stopped_by_user"
				lv.cancel(ctx, msgLiveStopped)
			case runCtx.Err() != nil:
				final = msgTimeout
				rec.Outcome, rec.Error = "timeout", err.Error()
			default:
				rec.Outcome, rec.Error = "model_failed", err.Error()
				log.Warn("agent: model failed", "kind", llm.KindOf(err), "err", err)
				lv.cancel(ctx, msgLiveFailed)
				return "", &runResult{outcome: outcomeModelFailed, err: err, chat: fail.chat, thread: fail.thread}
			}
			break
		}
		if rec.Iterations == 1 {
			usage = res.Usage
		} else {
			usage.Add(res.Usage)
		}
		rec.InputTokens = usage.InputTokens + usage.CacheReadTokens + usage.CacheWriteTokens
		rec.OutputTokens, rec.CostMicrocents, rec.CostKnown = usage.OutputTokens, usage.CostMicrocents, usage.CostKnown
		req.Messages = append(req.Messages, res.Message())
		calls := res.ToolCalls()
		if len(calls) == 0 {
			final, answered = res.Text(), true
			rec.Outcome = "answered"
			break
		}
		req.Messages = append(req.Messages, a.callTools(runCtx, ws, tools, calls, caps, lv, log))
		if stoppedByUser(runCtx) && ctx.Err() == nil {
			final, answered = "", true
			rec.Outcome = "stopped_by_user"
			lv.cancel(ctx, msgLiveStopped)
			break
		}
		if runCtx.Err() != nil && ctx.Err() == nil {
			final = msgTimeout
			rec.Outcome = "timeout"
			break
		}
	}
	if final == "" && !answered && rec.Outcome == "" {
		final = msgIterations
		rec.Outcome = "iteration_limit"
	}
	if ctx.Err() != nil {
		rec.Outcome = "stopped"
		return "", &runResult{outcome: outcomeStopped, err: ctx.Err()}
	}
	if answered && final != "" {
		a.recordNotes(context.WithoutCancel(ctx), g, rec.ID, req.Messages, final)
	}
	return final, nil
}

// stoppedByUser reports a run someone stopped from the chat (StopRun).
func stoppedByUser(runCtx context.Context) bool {
	return runCtx.Err() != nil && errors.Is(context.Cause(runCtx), errStoppedByUser)
}

// callTools runs the calls of one model turn in parallel and returns the
// tool message with their results in call order.
//
// A call still running after slowToolAfter has lv tell the chat, once.
func (a *Agent) callTools(ctx context.Context, ws groups.Workspace, tools ToolSession, calls []llm.ToolCall, caps llm.Capabilities, lv *liveRun, log *slog.Logger) llm.Message {
	parts := make([]llm.Part, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer lv.watchTool(ctx, c.Name)()
			if tools == nil {
				parts[i] = llm.ToolResultPart(c.ID, true, llm.Text("no tools are available right now"))
				return
			}
			res, err := tools.Call(ctx, c.Name, c.Args)
			if err != nil {
				log.Warn("agent: tool call failed", "tool", c.Name, "err", err)
				parts[i] = llm.ToolResultPart(c.ID, true, llm.Text(fmt.Sprintf("the tool %s failed: %s", c.Name, modelview.ModelError(err, ws.Root))))
				return
			}
			parts[i] = llm.ToolResultPart(c.ID, res.IsError, resultParts(ctx, ws, res, caps, a.opts.Describe)...)
		}()
	}
	wg.Wait()
	return llm.ToolResults(parts...)
}

func (a *Agent) typing(ctx context.Context, chat string, on bool) {
	ch, ok := a.channelFor(chat)
	if !ok {
		return
	}
	if t, ok := ch.(interface {
		SetTyping(context.Context, string, bool) error
	}); ok {
		if err := t.SetTyping(ctx, chat, on); err != nil {
			a.log.Debug("agent: typing indicator failed", "chat", chat, "err", err)
		}
	}
}

// notifyFailure tells the chat once per failure streak that the model is
// unreachable. It bypasses the outbox and the cursor: it answers nothing.
func (a *Agent) notifyFailure(ctx context.Context, folder string, res runResult) {
	if res.chat == "" {
		return
	}
	ch, ok := a.channelFor(res.chat)
	if !ok {
		return
	}
	if _, err := ch.Send(ctx, outMessage(res.chat, msgModelFailed, res.thread, "")); err != nil {
		a.log.Warn("agent: could not tell the chat about the failure", "group", folder, "err", err)
	}
}

func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
