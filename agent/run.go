package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/modelview"
	"github.com/botd-dev/botd/store"
)

// RunLimits bound one run (agent.*): the model it asks, how much it may
// write, how many turns and how long it may take.
type RunLimits struct {
	Model string
	// MaxTokens caps each reply; zero uses the seam's default.
	MaxTokens     int
	MaxIterations int
	Timeout       time.Duration
	// EagerTools offers every tool's schema from the first turn
	// (agent.lazy_tools: false) instead of the core ones and load_tools.
	EagerTools bool
}

func (l RunLimits) withDefaults(def Config) RunLimits {
	if l.MaxIterations <= 0 {
		l.MaxIterations = def.MaxIterations
	}
	if l.Timeout <= 0 {
		l.Timeout = def.RunTimeout.D()
	}
	return l
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
// then finish a batch run whose result came, or, if a trigger is past the
// cursor, run the model and deliver its answer.
func (a *Agent) runOnce(ctx context.Context, folder string) runResult {
	g, ok := a.book.byFolder(folder)
	if !ok {
		return runResult{outcome: outcomeDone}
	}
	if res, ok := a.outbox.drain(ctx, folder); !ok {
		return res
	}
	st := a.opts.Store
	if b, ok, err := st.EndedBatch(ctx, folder); err != nil {
		return storeFailure(ctx, err)
	} else if ok {
		a.queue.again(folder) // then whatever else is due
		to := target{chat: b.ChatID, thread: b.ThreadID, replyTo: b.ReplyTo, upTo: b.UpToSeq}
		set := a.settings()
		return newRun(a, set, g, a.groupRun(ctx, &g, set), to).resume(ctx, b)
	}
	trig, cursor, ok, err := st.DueTrigger(ctx, folder)
	if err != nil {
		return storeFailure(ctx, err)
	}
	if !ok || trig.Seq <= cursor {
		return runResult{outcome: outcomeDone}
	}
	// The settings in force now are the run's to its end (settings.go),
	// with the group's own model, prompt, tools and budget (policy.go).
	set := a.settings()
	grp := a.groupRun(ctx, &g, set)
	// A group whose day's budget is spent is not run (budget.go).
	if res, over := a.budget.over(ctx, folder, trig, grp.MaxCostPerDay); over {
		return res
	}
	seen := a.ackRun(ctx, trig, set.AckReaction) // the question's reaction while it runs (ack.go)
	res := newRun(a, set, g, grp, target{chat: trig.ChatID, thread: trig.ThreadID}).think(ctx, cursor, trig)
	seen(res)
	return res
}

// target is where a run's answer goes and which messages it answers.
type target struct {
	chat, thread, replyTo string
	upTo                  int64
}

// Run is one run of the model for a group: what it answers and where
// (to), the request it builds and grows turn by turn (its transcript), its
// tools behind its guard, its live answer, its bill and its record. It is
// made by the group's worker and lives until its answer is queued.
type Run struct {
	a *Agent
	// set are the settings the run was made with (a reload changes the
	// next run's, never this one's).
	set     *Settings
	g       groups.Group
	ws      groups.Workspace
	id      string
	log     *slog.Logger
	started time.Time
	to      target
	// grp is the group's own choices (model, prompt, tools; policy.go);
	// role is the asker's.
	grp  GroupRun
	role groups.Role
	// ctx is the worker's (shutdown ends it), observed for the bill;
	// runCtx bounds the model and the tools (the run's timeout, Stop).
	ctx, runCtx context.Context

	bill attempts
	req  *llm.Request
	rec  store.AgentRun
	caps llm.Capabilities
	// settled ends the run's being stoppable (/stop, the Stop button)
	// once its answer is decided, before it is sent.
	settled func()
	tools   ToolSession // nil: the run answers without tools
	guard   *guard      // nil when there are no tools
	lazy    *lazyTools  // nil: every tool offered from the start
	live    *liveRun    // nil: not shown while written (a batch run)
}

func newRun(a *Agent, set *Settings, g groups.Group, grp GroupRun, to target) *Run {
	id := newRunID()
	// The asker is known once the conversation is read (think); a
	// resumed batch run is a scheduled task's (role's nil message).
	return &Run{a: a, set: set, grp: grp, role: a.role(&g, nil), g: g, id: id, to: to, started: time.Now(),
		log: a.log.With("group", g.Folder, "run", id), caps: grp.LLM.Capabilities()}
}

// failed is the result of a run that must be retried, told to the chat
// it answers.
func (r *Run) failed(o outcome, err error) runResult {
	return runResult{outcome: o, err: err, chat: r.to.chat, thread: r.to.thread}
}

// begin makes the group's folder and bills every model call of ctx to
// the run (the summary of older messages and failed attempts included).
func (r *Run) begin(ctx context.Context) error {
	ws, err := groups.EnsureWorkspace(r.a.opts.GroupsDir, &r.g)
	r.ws = ws
	r.ctx = llm.WithAttemptObserver(ctx, r.bill.add)
	return err
}

// think runs the model over the messages since cursor, up to trig.
func (r *Run) think(ctx context.Context, cursor int64, trig store.Trigger) runResult {
	a, g := r.a, &r.g
	if err := r.begin(ctx); err != nil {
		return r.failed(outcomeDeliveryFailed, err)
	}
	conv, upTo, err := a.history.with(r.set).load(r.ctx, g, cursor)
	if err != nil {
		return storeFailure(r.ctx, err)
	}
	if len(conv.Msgs) == 0 {
		return runResult{outcome: outcomeDone}
	}
	if upTo < trig.Seq {
		// A task message runs alone (taskAlone): the rest waits for the
		// next run, and this run answers where its own last message was.
		a.queue.again(g.Folder)
		last := conv.Msgs[len(conv.Msgs)-1]
		trig = store.Trigger{Folder: g.Folder, Seq: upTo, ChatID: last.ChatID, MessageID: last.ID, ThreadID: last.ThreadID}
	}
	r.to = target{chat: trig.ChatID, thread: trig.ThreadID, upTo: upTo}
	if g.NeedsTrigger() {
		r.to.replyTo = trig.MessageID // in a busy group, quote the question
	}
	user := r.render(conv)
	r.role = a.role(g, asker(conv.Msgs, trig))

	defer r.open()()
	r.permitTools()
	// What a person confirmed is done before the model is asked, by
	// botd, past the guard (confirm.go).
	user += runConfirmed(r.runCtx, r.tools, a.confirms.take(g.Folder, conv.Msgs), r.log)
	user += askerLine(r.grp, r.role)
	r.guardTools()
	if r.guard != nil {
		r.guard.fromConversation(conv)
	}
	memory, global := r.memory(isolatedRun(conv.Msgs))
	r.req = &llm.Request{
		Model: r.grp.Model,
		System: buildSystem(a.opts.AssistantName, g, a.opts.Internet, recalled{memory, global, conv.Summary}) +
			standing(r.grp),
		Messages:  []llm.Message{llm.UserText(user)},
		MaxTokens: r.set.Run.MaxTokens,
	}
	if r.tools != nil && r.caps.Tools {
		r.lazyTools()
		r.req.Tools = r.tools.Tools()
	}
	r.rec = store.AgentRun{ID: r.id, Folder: g.Folder, Started: r.started, UpToSeq: upTo}
	defer r.save()

	if a.batches != nil && batchRun(conv.Msgs) {
		r.rec.Outcome = "batched"
		return r.handOff()
	}
	r.live = a.lives.begin(g.Folder, r.to, r.log)
	final, stop := r.turns(nil)
	if stop != nil {
		return *stop
	}
	// Decided: from here /stop finds nothing to stop, and /status says
	// so by the time the answer shows.
	r.settled()
	final = r.askToConfirm(final)
	r.log.Info("agent: run finished", "outcome", r.rec.Outcome, "iterations", r.rec.Iterations,
		"input_tokens", r.rec.InputTokens, "output_tokens", r.rec.OutputTokens, "took", time.Since(r.started).Round(time.Millisecond))
	return r.answer(final, func(it *outboxdb.Item) (int64, error) {
		if it == nil {
			// Deciding to stay silent is an answer too: those messages are done.
			return 0, a.opts.Store.AdvanceAgentCursor(r.ctx, g.Folder, upTo)
		}
		return a.outbox.db.Add(r.ctx, *it)
	})
}

// render is the conversation as the model reads it.
func (r *Run) render(conv conversation) string {
	var user strings.Builder
	renderConversation(&user, conv, r.a.opts.Time.Location)
	r.log.Debug("agent: context", "new_messages", len(conv.Msgs), "earlier_messages", len(conv.Earlier),
		"summary", conv.Summary != "", "media_notes", len(conv.Notes), "estimated_tokens", estimateTokens(user.String())+estimateTokens(conv.Summary))
	return user.String()
}

// memory is the group's and the global memory file; an isolated run
// sees neither.
func (r *Run) memory(isolated bool) (memory, global string) {
	if isolated {
		return "", ""
	}
	memory, err := r.ws.Memory()
	if err != nil {
		r.log.Warn("agent: memory file unreadable; running without it", "err", err)
	}
	global, err = groups.GlobalWorkspace(r.a.opts.GroupsDir).Memory()
	if err != nil {
		r.log.Warn("agent: global memory unreadable; running without it", "err", err)
	}
	return memory, global
}

// open shows "typing…" in chat (renewed until done), bounds the run by
// its timeout, makes it stoppable from the chat and opens its tools (nil
// when unavailable: the run answers without them); the returned func
// undoes all of it.
func (r *Run) open() (done func()) {
	a, chat := r.a, r.to.chat
	stopTyping := a.chans.keepTyping(r.ctx, chat)
	stopCtx, stop := context.WithCancelCause(r.ctx)
	forget := sync.OnceFunc(a.queue.stoppable(r.g.Folder, stop))
	r.settled = forget
	runCtx, cancelTimeout := context.WithTimeout(stopCtx, r.set.Run.Timeout)
	r.runCtx = runCtx
	tools, err := a.opts.ToolSource(runCtx, &r.g)
	if err != nil {
		r.log.Warn("agent: tools unavailable; answering without them", "err", err)
	}
	r.tools = tools
	return func() {
		if tools != nil {
			tools.Close()
		}
		forget()
		cancelTimeout()
		stop(nil)
		stopTyping()
		a.chans.typing(context.WithoutCancel(r.ctx), chat, false)
	}
}

// permitTools puts the group's allow-list and the asker's role before
// the run's tools (settings.go).
func (r *Run) permitTools() {
	if r.tools == nil || (r.grp.Tools == nil && r.role == groups.Owner) {
		return
	}
	r.tools = &permit{ToolSession: r.tools, folder: r.g.Folder, allow: r.grp.Tools, role: r.role}
}

// guardTools puts the run's guard (guard.go) before its tools; without
// tools there is nothing to guard.
func (r *Run) guardTools() {
	if r.tools == nil {
		return
	}
	gd := newGuard(r.tools, r.g.Folder)
	if r.a.opts.Media != nil {
		if c := r.a.opts.Media(r.g.Folder); c != nil {
			gd.ownTask = ownTaskLookup(c)
		}
	}
	r.tools, r.guard = gd, gd
}

// lazyTools offers the run's tools lazily (lazy.go): the core ones and
// load_tools first, the rest on request. Outermost, so what the group's
// allow-list and the guard leave is what the index lists.
func (r *Run) lazyTools() {
	if r.tools == nil || r.set.Run.EagerTools {
		return
	}
	if l := newLazyTools(r.tools); l != nil {
		r.tools, r.lazy = l, l
		r.req.Deferred = l.Deferred()
	}
}

// askToConfirm adds to a run's answer botd's line asking a person to
// confirm the calls the guard refused, if any.
func (r *Run) askToConfirm(final string) string {
	if r.guard == nil {
		return final
	}
	refused := r.guard.Refused()
	if len(refused) == 0 {
		return final
	}
	r.log.Info("agent: calls refused after reading strangers' words", "calls", len(refused), "tainted_by", r.guard.Tainted())
	return strings.TrimSpace(final + "\n\n" + r.a.confirms.offer(r.g.Folder, r.to.upTo, r.guard.Tainted(), refused))
}

// answer turns the final text into an outbox item, has queue store it (a
// nil item: the run stays silent) and delivers it.
//
// The run's live answer is finished by the item's delivery; one that
// gets no text (a silent or spoken answer, files only) is removed.
func (r *Run) answer(final string, queue func(*outboxdb.Item) (int64, error)) runResult {
	ctx, a := r.ctx, r.a
	ans, refused := parseAnswer(final, r.ws)
	for _, err := range refused {
		r.log.Warn("agent: file in the answer not sent", "err", err)
	}
	if hook := a.opts.Hooks.BeforeOutbox; hook != nil {
		if err := hook(r.g.Folder); err != nil {
			r.rec.Outcome, r.rec.Error = "aborted", err.Error()
			return runResult{outcome: outcomeStopped, err: errors.Join(errAbort, err)}
		}
	}
	if ans.Text == "" || ans.Voice {
		r.live.cancel(ctx, "")
	}
	if ans.empty() {
		if _, err := queue(nil); err != nil {
			return storeFailure(ctx, err)
		}
		return runResult{outcome: outcomeDone}
	}
	to := r.to
	item := outboxdb.Item{Folder: r.g.Folder, ChatID: to.chat, UpToSeq: to.upTo, Text: ans.Text, Media: ans.Media,
		ThreadID: to.thread, ReplyTo: to.replyTo, Voice: ans.Voice}
	lm, row := r.live.take()
	if lm != nil {
		item.LiveIDs = lm.IDs()
	}
	id, err := queue(&item)
	if err != nil {
		if lm != nil {
			if cerr := lm.Cancel(context.WithoutCancel(ctx), msgLiveFailed); cerr != nil {
				r.log.Warn("agent: live answer not cancelled", "err", cerr)
			}
			a.lives.close(ctx, row)
		}
		return storeFailure(ctx, err)
	}
	item.ID = id
	if lm != nil {
		a.lives.hold(id, lm, row)
	}
	if err := a.outbox.deliver(ctx, &item); err != nil {
		return runResult{outcome: outcomeDeliveryFailed, err: err}
	}
	return runResult{outcome: outcomeDone}
}

// save records the finished run with its bill and transcript.
func (r *Run) save() {
	r.rec.Finished = time.Now()
	r.rec.Attempts, r.rec.Model = r.bill.list()
	splitKnown(&r.rec) // a run without a model call split nothing: zeros, not "—"
	if err := r.a.opts.Store.SaveRun(context.WithoutCancel(r.ctx), r.rec, toTranscript(r.req.Messages)); err != nil {
		r.log.Warn("agent: transcript not saved", "err", err)
	}
	if done := r.a.opts.Hooks.RunDone; done != nil {
		done(r.rec)
	}
}

// turns is the run's model loop: call the model, run the tools it asks
// for, until it answers, hits the iteration limit or the deadline. first,
// when set, is the answer to the first call, already in (a batch result).
// stop is set when the run must end without an answer: shutting down, or
// the model failed (to be retried; told to the chat). A real answer's
// media notes are kept before it returns.
func (r *Run) turns(first *llm.Result) (final string, stop *runResult) {
	ctx, runCtx, rec, lv := r.ctx, r.runCtx, &r.rec, r.live
	var usage llm.Usage
	answered := false
	for rec.Iterations < r.set.Run.MaxIterations {
		rec.Iterations++
		res, err := first, error(nil)
		if first == nil {
			if r.lazy != nil {
				r.req.Tools = r.lazy.Tools()
			}
			res, err = r.ask()
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
				r.log.Warn("agent: model failed", "kind", llm.KindOf(err), "err", err)
				lv.cancel(ctx, msgLiveFailed)
				res := r.failed(outcomeModelFailed, err)
				return "", &res
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
		addSplit(rec, r.req, res.Usage) // where the input went (split.go), by the request as sent
		r.req.Messages = append(r.req.Messages, res.Message())
		if r.lazy != nil {
			r.lazy.loadedBy(res.Loaded)
		}
		calls := res.ToolCalls()
		if len(calls) == 0 {
			final, answered = res.Text(), true
			rec.Outcome = "answered"
			break
		}
		r.req.Messages = append(r.req.Messages, r.callTools(calls))
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
		r.a.history.with(r.set).recordNotes(context.WithoutCancel(ctx), &r.g, r.id, r.req.Messages, final)
	}
	return final, nil
}

// ask is one call of the model: streamed into the live answer when
// there is one and the model can stream.
func (r *Run) ask() (*llm.Result, error) {
	if r.live != nil && r.caps.Streaming {
		return r.streamTurn()
	}
	return r.grp.LLM.Generate(r.runCtx, r.req)
}

// stoppedByUser reports a run someone stopped from the chat (StopRun).
func stoppedByUser(runCtx context.Context) bool {
	return runCtx.Err() != nil && errors.Is(context.Cause(runCtx), errStoppedByUser)
}

// callTools runs the calls of one model turn in parallel and returns the
// tool message with their results in call order.
//
// A call still running after slowToolAfter has the live answer tell the
// chat, once.
func (r *Run) callTools(calls []llm.ToolCall) llm.Message {
	ctx, ws, tools := r.runCtx, r.ws, r.tools
	parts := make([]llm.Part, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.live.watchTool(ctx, c.Name)()
			if tools == nil {
				parts[i] = llm.ToolResultPart(c.ID, true, llm.Text("no tools are available right now"))
				return
			}
			res, err := tools.Call(ctx, c.Name, c.Args)
			if err != nil {
				r.log.Warn("agent: tool call failed", "tool", c.Name, "err", err)
				parts[i] = llm.ToolResultPart(c.ID, true, llm.Text(fmt.Sprintf("the tool %s failed: %s", c.Name, modelview.ModelError(err, ws.Root))))
				return
			}
			parts[i] = llm.ToolResultPart(c.ID, res.IsError, resultParts(ctx, ws, res, r.caps, r.a.opts.Describe)...)
		}()
	}
	wg.Wait()
	return llm.ToolResults(parts...)
}

// streamTurn asks the model for one turn through its stream, showing the
// text as it comes. A stream that breaks after showing text is asked once
// more (the chain may fall back to another model); the new text replaces
// what was shown.
func (r *Run) streamTurn() (*llm.Result, error) {
	for try := 1; ; try++ {
		r.live.startTurn()
		res, wrote, err := r.streamOnce()
		if err == nil {
			return res, nil
		}
		if !wrote || try > 1 || r.runCtx.Err() != nil || !llm.IsRetryable(err) {
			return nil, err
		}
		r.log.Warn("agent: model stream broke mid-answer; asking again", "kind", llm.KindOf(err), "err", err)
	}
}

// streamOnce folds one stream into a Result (llm.Folder, as Generate's
// callers get), relaying text deltas to the live answer. wrote reports
// whether any content arrived before an error.
func (r *Run) streamOnce() (res *llm.Result, wrote bool, err error) {
	ctx := r.runCtx
	s, err := r.grp.LLM.Stream(ctx, r.req)
	if err != nil {
		return nil, false, err
	}
	defer s.Close()
	f := llm.NewFolder()
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, wrote, llm.FromTransport("", ctx.Err())
			}
			return nil, wrote, err
		}
		if err := f.Add(c); err != nil {
			return nil, wrote, err
		}
		wrote = wrote || c.IsContent()
		if c.Kind == llm.ChunkText {
			r.live.delta(ctx, c.Text)
		}
	}
	res, err = f.Result()
	return res, wrote, err
}

func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
