// Package agent is botd's agent loop: the router that stores what channels
// hear and decides which messages need an answer, the per-group queue
// (one run per group, a global limit, messages that arrive during a run
// folded into the next), the prompt, the tool loop over MCP, and the
// outbox that makes an answer survive a crash without being sent twice.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/backoff"
	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/modelview"
	"github.com/botd-dev/botd/store"
	"github.com/botd-dev/botd/tools"
)

// DefaultMaxTries bounds the runs of one failure streak when
// Options.MaxTries is zero. The other zero fields take the section's
// defaults (DefaultConfig), the one home of agent.* defaults.
const DefaultMaxTries = 5

// Options configures an Agent. Store, Groups, GroupsDir, Channels and LLM
// are required.
type Options struct {
	Store     *store.Store
	Groups    *groups.Set
	GroupsDir string
	DataDir   string
	// Channels by name ("telegram", ...): answers go to the channel named
	// by the chat id's prefix.
	Channels map[string]channels.Channel
	LLM      llm.Provider
	Model    string
	// MaxTokens caps each reply; zero uses the seam's default.
	MaxTokens     int
	MaxConcurrent int
	MaxMessages   int
	MaxIterations int
	RunTimeout    time.Duration
	// ContextMessages, ContextAge and ContextTokens are agent.context:
	// the handled messages shown again (negative: none), and the budget
	// past which older ones are summarised.
	ContextMessages int
	ContextAge      time.Duration
	ContextTokens   int
	// MaxCostPerDay (micro-cents; see USD) stops a group's runs for the
	// rest of the day once its model calls cost that much; 0 is no limit.
	MaxCostPerDay int64
	// Media answers botd's own tools (fetch_media, list_media,
	// send_message, send_media) of a group in-process: the daemon passes
	// the media service's Caller. Nil means no botd tools (unless Tools is
	// set).
	Media func(group string) tools.Caller
	// Batch, when set, answers the runs of tasks marked batch through this
	// provider's batch API, with BatchModel. Interactive runs never use it.
	Batch      llm.Batcher
	BatchModel string
	// BatchPoll is the first wait between polls of a batch, doubling up
	// to BatchPollMax; zero means one minute and ten minutes.
	BatchPoll    time.Duration
	BatchPollMax time.Duration
	// BatchDeadline is how long a submitted batch may run before it is
	// cancelled and the task answered at once; zero means 25h (the
	// providers promise 24h).
	BatchDeadline time.Duration
	// Generate offers botd's generation tools whose models are configured;
	// with Speech, an answer tagged [[audio_as_voice]] is spoken (through
	// Media's speak).
	Generate tools.Generate
	// Internet offers the web tools that are configured (fetch_url,
	// web_search), and the prompt says what the model can do with links.
	Internet tools.Internet
	// Describe describes an image for a model that cannot see one
	// (media.describe); nil means such a model gets a note instead.
	Describe Describe
	// InlineMaxBytes is media.inline_max_bytes for botd's own tools.
	InlineMaxBytes int64
	// Parse is media.parse: the limits of the children that read
	// members' files for botd's own tools.
	Parse box.Limits
	// ExtraMCP are further stdio MCP servers; their allow-listed tools are
	// exposed as "<name>__<tool>".
	ExtraMCP      map[string]MCPServer
	AssistantName string
	Log           *slog.Logger
	// Location renders message times; nil means time.Local.
	Location *time.Location
	// Now is the clock of context windows and notes; nil means time.Now.
	Now func() time.Time
	// Clock times what a run shows while it works (typing renewals, the
	// note about a slow tool call, writes of a live answer); nil means the
	// wall clock.
	Clock clock.Clock

	// RunDone, when set, hears every run the agent records (with its
	// outcome and model calls) once it is saved: botd's metrics.
	RunDone func(store.AgentRun)

	// Test hooks.

	// Tools replaces the stdio MCP tool source.
	Tools ToolSource
	// RetryDelay is the wait before retry number try (1-based) after a
	// failed run; nil means 5s·3^(try-1).
	RetryDelay func(try int) time.Duration
	// MaxTries bounds the runs of one failure streak; zero means 5.
	MaxTries int
	// BeforeOutbox, when set, is called after the model answered and before
	// the answer is written to the outbox; an error aborts the run there
	// (simulating a crash).
	BeforeOutbox func(folder string) error
}

// Agent routes inbound messages and runs the model for groups.
type Agent struct {
	opts Options
	log  *slog.Logger

	// gmu guards opts.Groups: groups.Set is a plain map that Migrated
	// changes while channels deliver concurrently.
	gmu sync.RWMutex

	// strangers are unregistered chats already logged.
	strangers sync.Map

	mu      sync.Mutex
	ctx     context.Context // set by Start; nil before
	state   map[string]*groupState
	running int // runs in flight, for tests
	idle    *sync.Cond

	sem chan struct{}

	// confirms are the calls each group's people are asked to confirm
	// (confirm.go), by folder.
	cmu      sync.Mutex
	confirms map[string][]*pendingConfirm

	wg sync.WaitGroup

	budgetTold map[string]string // folder → the day the chat was told its budget is spent (guarded by mu)

	batchKick chan struct{} // wakes the batch loop: a run was handed off

	clk clock.Clock
	// lives are the live answers the outbox items (by id) finish when
	// delivered (guarded by mu).
	lives map[int64]finishing
}

// groupState is the scheduling state of one group, guarded by Agent.mu.
type groupState struct {
	active   bool        // a worker goroutine owns the group
	pending  bool        // a trigger arrived since the worker last looked
	timer    *time.Timer // a retry is scheduled
	tries    int         // failed runs in the current streak
	notified bool        // the chat was told about this streak's failure
	// stop ends the group's run in flight (the web room's Stop button);
	// nil when none is.
	stop context.CancelCauseFunc
}

var _ channels.Sink = (*Agent)(nil)

// New builds an Agent; it has no side effects until Start.
func New(opts Options) *Agent {
	def := DefaultConfig()
	if opts.BatchPoll <= 0 {
		opts.BatchPoll = time.Minute
	}
	if opts.BatchPollMax <= 0 {
		opts.BatchPollMax = 10 * time.Minute
	}
	if opts.BatchDeadline <= 0 {
		opts.BatchDeadline = 25 * time.Hour
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = def.MaxConcurrent
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = def.MaxMessages
	}
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = def.MaxIterations
	}
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = def.RunTimeout.D()
	}
	switch {
	case opts.ContextMessages == 0:
		opts.ContextMessages = def.Context.Messages
	case opts.ContextMessages < 0: // none
		opts.ContextMessages = 0
	}
	if opts.ContextAge <= 0 {
		opts.ContextAge = def.Context.MaxAge.D()
	}
	if opts.ContextTokens <= 0 {
		opts.ContextTokens = def.Context.MaxTokens
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxTries <= 0 {
		opts.MaxTries = DefaultMaxTries
	}
	if opts.RetryDelay == nil {
		opts.RetryDelay = defaultRetryDelay
	}
	if opts.AssistantName == "" {
		opts.AssistantName = DefaultAssistantName
	}
	if opts.InlineMaxBytes <= 0 {
		opts.InlineMaxBytes = modelview.DefaultInlineMaxBytes
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	a := &Agent{
		opts:  opts,
		log:   opts.Log,
		state: map[string]*groupState{}, budgetTold: map[string]string{}, batchKick: make(chan struct{}, 1),
		sem: make(chan struct{}, opts.MaxConcurrent),
	}
	a.idle = sync.NewCond(&a.mu)
	a.clk = opts.Clock
	if a.clk == nil {
		a.clk = clock.Real{}
	}
	if a.opts.Tools == nil {
		a.opts.Tools = a.defaultTools
	}
	return a
}

// AddChannel makes ch available for answers under its Name. Channels are
// constructed with the Agent as their Sink, so they may only exist after
// New; add them before Start.
func (a *Agent) AddChannel(ch channels.Channel) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx != nil {
		return errors.New("agent: AddChannel after Start")
	}
	if a.opts.Channels == nil {
		a.opts.Channels = map[string]channels.Channel{}
	}
	a.opts.Channels[ch.Name()] = ch
	return nil
}

// defaultRetryDelay is 5s, 15s, 45s, 2m15s: long enough that a vendor
// outage is not hammered, short enough that a blip costs under a minute.
func defaultRetryDelay(try int) time.Duration {
	return backoff.Schedule{Initial: 5 * time.Second, Factor: 3}.Wait(try - 1)
}

// Start recovers from the last shutdown and begins answering: groups with
// an unsent answer in the outbox deliver it first (it is never generated
// again), then groups whose latest trigger is past their cursor run. It
// returns once that work is queued; runs continue until ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	if a.opts.Store == nil || a.opts.Groups == nil || a.opts.LLM == nil {
		return errors.New("agent: Store, Groups and LLM are required")
	}
	a.mu.Lock()
	if a.ctx != nil {
		a.mu.Unlock()
		return errors.New("agent: already started")
	}
	a.ctx = ctx
	a.mu.Unlock()

	// Before any answer goes out: what a crash left half-shown is marked
	// so, and its answer comes again below (the outbox, or a new run).
	if err := a.interruptLives(ctx); err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	queue := map[string]bool{}
	pending, err := a.opts.Store.PendingOutbox(ctx, "")
	if err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	for _, it := range pending {
		if _, ok := a.group(it.Folder); !ok {
			a.log.Warn("agent: unsent answer for a group that is no longer configured", "group", it.Folder, "outbox", it.ID)
			continue
		}
		queue[it.Folder] = true
	}
	for _, g := range a.allGroups() {
		cur, err := a.opts.Store.AgentCursor(ctx, g.Folder)
		if err != nil {
			return fmt.Errorf("agent start: %w", err)
		}
		t, ok, err := a.opts.Store.LastTrigger(ctx, g.Folder)
		if err != nil {
			return fmt.Errorf("agent start: %w", err)
		}
		if ok && t.Seq > cur {
			queue[g.Folder] = true
		}
	}
	ended, err := a.batchesAtStart(ctx)
	if err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	for _, f := range ended {
		queue[f] = true
	}
	for _, g := range a.allGroups() {
		if queue[g.Folder] {
			a.log.Info("agent: resuming group after restart", "group", g.Folder)
			a.kick(g.Folder, false)
		}
	}

	if a.opts.Batch != nil {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.runBatches(ctx) }()
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		<-ctx.Done()
		a.mu.Lock()
		for _, st := range a.state {
			if st.timer != nil {
				st.timer.Stop()
				st.timer = nil
			}
		}
		a.idle.Broadcast()
		a.mu.Unlock()
	}()
	return nil
}

// Queue is the agent's load: runs in flight, and groups whose worker
// waits for a run slot (agent.max_concurrent).
func (a *Agent) Queue() (running, waiting int) {
	a.mu.Lock()
	workers := a.running
	a.mu.Unlock()
	running = len(a.sem)
	return running, max(0, workers-running)
}

// Wait blocks until the context given to Start has ended and every run has
// stopped.
func (a *Agent) Wait() { a.wg.Wait() }

// group looks a folder up under the groups lock and returns a copy, so a
// run never reads aliases while Migrated appends to them.
func (a *Agent) group(folder string) (groups.Group, bool) {
	return a.lookupGroup((*groups.Set).ByFolder, folder)
}

func (a *Agent) groupByChat(chat string) (groups.Group, bool) {
	return a.lookupGroup((*groups.Set).ByChat, chat)
}

// lookupGroup runs find for key under the groups lock and copies what it
// found.
func (a *Agent) lookupGroup(find func(*groups.Set, string) (*groups.Group, bool), key string) (groups.Group, bool) {
	a.gmu.RLock()
	defer a.gmu.RUnlock()
	g, ok := find(a.opts.Groups, key)
	if !ok {
		return groups.Group{}, false
	}
	return copyGroup(g), true
}

func (a *Agent) allGroups() []groups.Group {
	a.gmu.RLock()
	defer a.gmu.RUnlock()
	var out []groups.Group
	for _, g := range a.opts.Groups.All() {
		out = append(out, copyGroup(g))
	}
	return out
}

// copyGroup is a copy of g that shares no slice with it.
func copyGroup(g *groups.Group) groups.Group {
	c := *g
	c.Aliases = slices.Clone(g.Aliases)
	return c
}

// Registered reports whether chat belongs to a group.
func (a *Agent) Registered(chat string) bool {
	_, ok := a.groupByChat(chat)
	return ok
}

// Deliver stores a received message and queues a run when it triggers.
// Chats that belong to no group keep their metadata only (so an operator
// can find the id to register), never their text.
func (a *Agent) Deliver(ctx context.Context, in channels.Inbound) error {
	ts := in.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	if err := a.opts.Store.UpsertChat(ctx, store.Chat{ID: in.ChatID, Name: in.ChatName, IsGroup: in.IsGroup, LastMessageAt: ts}); err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	g, ok := a.groupByChat(in.ChatID)
	if !ok {
		a.noteStranger(in)
		return nil
	}
	msg := store.Message{ChatID: in.ChatID, ID: in.ID, SenderID: in.SenderID, SenderName: in.SenderName, Text: in.Text,
		Time: ts, FromMe: in.FromMe, IsBot: in.IsBot, ReplyTo: in.ReplyTo, ThreadID: in.ThreadID}
	if in.Edit {
		// An edit changes what the next run reads but never starts one:
		// fixing a typo must not make the assistant answer again.
		found, err := a.opts.Store.UpdateText(ctx, in.ChatID, in.ID, in.Text)
		if err != nil {
			return fmt.Errorf("deliver edit: %w", err)
		}
		if !found {
			if _, err := a.opts.Store.PutMessage(ctx, msg); err != nil {
				return fmt.Errorf("deliver edit: %w", err)
			}
		}
		return nil
	}
	seq, err := a.opts.Store.PutMessage(ctx, msg)
	if err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	if !Triggers(&g, in) {
		return nil
	}
	if err := a.opts.Store.RecordTrigger(ctx, store.Trigger{Folder: g.Folder, Seq: seq, ChatID: in.ChatID, MessageID: in.ID, ThreadID: in.ThreadID}); err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	a.kick(g.Folder, true)
	return nil
}

// noteStranger logs, once per chat and run of the daemon, the id of a chat
// that is not registered, so the operator can copy it into groups:.
func (a *Agent) noteStranger(in channels.Inbound) {
	if _, seen := a.strangers.LoadOrStore(in.ChatID, true); seen {
		return
	}
	a.log.Info("message from a chat that is not registered; add it under groups: to answer there",
		"chat", in.ChatID, "name", in.ChatName, "is_group", in.IsGroup)
}

// Triggers reports whether a message asks the group's assistant for an
// answer. The assistant's own messages and other bots never do, so two
// bots cannot talk each other into a loop.
func Triggers(g *groups.Group, in channels.Inbound) bool {
	if in.FromMe || in.IsBot {
		return false
	}
	return !g.NeedsTrigger() || in.Mentioned || g.Triggered(in.Text)
}

// Migrated follows a chat that changed id (Telegram group → supergroup).
func (a *Agent) Migrated(ctx context.Context, from, to string) {
	a.gmu.Lock()
	g, ok := a.opts.Groups.ByChat(from)
	var err error
	if ok {
		err = a.opts.Groups.AddAlias(g.Folder, to)
	}
	a.gmu.Unlock()
	if !ok {
		return
	}
	if err != nil {
		a.log.Error("agent: cannot follow migrated chat", "group", g.Folder, "from", from, "to", to, "err", err)
		return
	}
	a.log.Warn("agent: chat changed id; update the group's chat in the config", "group", g.Folder, "from", from, "to", to)
}

// kick notes work for a group and starts its worker unless one is active
// or a retry is already scheduled (a failing group waits for its backoff
// even when new messages arrive). fresh marks a new trigger, which ends a
// streak that was given up.
func (a *Agent) kick(folder string, fresh bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx == nil || a.ctx.Err() != nil {
		return // before Start: Start finds the trigger in the store
	}
	if _, off := a.opts.Groups.Disabled(folder); off {
		return // its folder was refused at start: the trigger stays stored
	}
	st := a.st(folder)
	st.pending = true
	if st.active || st.timer != nil {
		return
	}
	if fresh && st.tries == 0 {
		st.notified = false
	}
	a.startWorker(folder, st)
}

func (a *Agent) st(folder string) *groupState {
	st, ok := a.state[folder]
	if !ok {
		st = &groupState{}
		a.state[folder] = st
	}
	return st
}

// startWorker must be called with a.mu held.
func (a *Agent) startWorker(folder string, st *groupState) {
	st.active = true
	a.running++
	a.wg.Add(1)
	go a.work(a.ctx, folder)
}

// work runs the group until it has nothing pending, then exits. The
// global slot is taken per run, not per worker, so a busy group cannot
// starve the others between its runs.
func (a *Agent) work(ctx context.Context, folder string) {
	defer a.wg.Done()
	for {
		a.mu.Lock()
		st := a.st(folder)
		st.pending = false
		a.mu.Unlock()

		var res runResult
		select {
		case a.sem <- struct{}{}:
			res = a.runOnce(ctx, folder)
			<-a.sem
		case <-ctx.Done():
			res = runResult{outcome: outcomeStopped}
		}

		a.mu.Lock()
		switch res.outcome {
		case outcomeDone:
			st.tries, st.notified = 0, false
			if st.pending && ctx.Err() == nil {
				a.mu.Unlock()
				continue
			}
		case outcomeStopped:
		case outcomeModelFailed, outcomeDeliveryFailed:
			st.tries++
			if st.tries >= a.opts.MaxTries {
				a.log.Error("agent: giving up on the group until a new message triggers it",
					"group", folder, "tries", st.tries, "err", res.err)
				st.tries, st.pending = 0, false
				break
			}
			delay := a.opts.RetryDelay(st.tries)
			a.log.Warn("agent: run failed, retrying later", "group", folder, "try", st.tries, "in", delay, "err", res.err)
			notify := res.outcome == outcomeModelFailed && !st.notified
			st.notified = st.notified || notify
			if notify {
				a.mu.Unlock()
				a.notifyFailure(ctx, folder, res)
				a.mu.Lock()
			}
			if ctx.Err() == nil {
				st.timer = time.AfterFunc(delay, func() { a.retry(folder) })
			}
		}
		st.active = false
		a.running--
		a.idle.Broadcast()
		a.mu.Unlock()
		return
	}
}

func (a *Agent) retry(folder string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st(folder)
	st.timer = nil
	if a.ctx.Err() != nil || st.active {
		return
	}
	a.startWorker(folder, st)
}

// waitIdle blocks until no run is in flight and no retry is scheduled, or
// ctx ends. Tests use it to assert that nothing more happens.
func (a *Agent) waitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		a.mu.Lock()
		a.idle.Broadcast()
		a.mu.Unlock()
	})
	defer stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		busy := a.running > 0
		for _, st := range a.state {
			busy = busy || st.timer != nil
		}
		if !busy {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		a.idle.Wait()
	}
}

// errStoppedByUser ends a run someone stopped from the chat.
var errStoppedByUser = errors.New("stopped from the chat")

// StopRun stops the run in flight of the group whose chat is chat (the
// web room's Stop button): what was shown stays, marked stopped, and the
// messages it answered count as answered. It reports whether a run was
// going.
func (a *Agent) StopRun(chat string) bool {
	a.gmu.RLock()
	g, ok := a.opts.Groups.ByChat(chat)
	a.gmu.RUnlock()
	if !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state[g.Folder]
	if st == nil || st.stop == nil {
		return false
	}
	st.stop(errStoppedByUser)
	return true
}

// stoppable records the cancel of g's run for StopRun; the returned func
// forgets it.
func (a *Agent) stoppable(folder string, cancel context.CancelCauseFunc) func() {
	a.mu.Lock()
	if st := a.state[folder]; st != nil {
		st.stop = cancel
	}
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		if st := a.state[folder]; st != nil {
			st.stop = nil
		}
		a.mu.Unlock()
	}
}
