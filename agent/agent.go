// Package agent is botd's agent loop: the intake (Agent) that stores what
// channels hear and decides which messages need an answer, the per-group
// queue (one run per group, a global limit, messages that arrive during a
// run folded into the next; queue.go), a run as a value (Run: the prompt,
// the tool loop, the live answer; run.go), and the outbox that makes an
// answer survive a crash without being sent twice (deliver.go). The
// outbox's and the conversation's queries live in agent/outboxdb and
// agent/historydb.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/botd-dev/botd/agent/historydb"
	"github.com/botd-dev/botd/agent/outboxdb"
	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/store"
)

// Agent is the intake: the sink channels deliver to, which stores what
// they hear, decides what asks for an answer and queues the group's run
// (queue.go: one run per group, a global limit, retries). A run is a value
// of its own (Run, run.go); what it answers leaves through the outbox
// (deliver.go).
type Agent struct {
	opts Options
	// live are the settings a reload may change (Apply); a run takes
	// them when it is made.
	live  atomic.Pointer[Settings]
	log   *slog.Logger
	book  *groupBook
	chans *channelSet
	queue *queue

	// strangers are unregistered chats already logged.
	strangers sync.Map

	budget   *budget
	confirms *confirms
	history  *history
	outbox   *outbox
	lives    *lives
	batches  *batcher // nil: no batch API

	tools *toolMaker // each run's tools, the extra servers' state between runs (tools.go)
}

var _ channels.Sink = (*Agent)(nil)

// New builds an Agent; it has no side effects until Start.
func New(opts Options) *Agent {
	opts = opts.withDefaults()
	a := &Agent{opts: opts, log: opts.Log, book: &groupBook{set: opts.Groups}}
	live := settingsOf(opts)
	a.live.Store(&live)
	a.chans = &channelSet{m: opts.Channels, clk: opts.Time.Clock, log: opts.Log}
	a.queue = newQueue(opts.Intake, opts.Log, a.runOnce, a.chans.notifyFailure)
	a.queue.skip = a.book.disabled
	a.budget = &budget{st: opts.Store, now: opts.Time.Now, loc: opts.Time.Location,
		chans: a.chans, log: opts.Log, told: map[string]string{}}
	a.confirms = &confirms{now: opts.Time.Now, log: opts.Log}
	a.history = &history{st: opts.Store, db: historydb.New(opts.Store), lim: opts.Context, model: opts.Run.Model, llm: opts.LLM, loc: opts.Time.Location,
		now: opts.Time.Now, log: opts.Log}
	a.lives = &lives{st: opts.Store, chans: a.chans, log: opts.Log}
	a.outbox = &outbox{db: outboxdb.New(opts.Store), st: opts.Store, chans: a.chans, book: a.book, lives: a.lives, groupsDir: opts.GroupsDir,
		assistant: opts.AssistantName, maxTries: opts.Intake.MaxTries, now: opts.Time.Now, log: opts.Log}
	if opts.Generate.Speech && opts.Media != nil {
		a.outbox.speak = speakWith(opts.Media)
	}
	if opts.Batch.API != nil {
		a.batches = &batcher{o: opts.Batch, st: opts.Store, now: opts.Time.Now, log: opts.Log,
			kick: make(chan struct{}, 1), wake: func(folder string) { a.queue.kick(folder, false) }}
	}
	a.tools = &toolMaker{opts: &a.opts, log: opts.Log}
	if a.opts.ToolSource == nil {
		a.opts.ToolSource = a.tools.defaultTools
	}
	return a
}

// AddChannel makes ch available for answers under its Name. Channels are
// constructed with the Agent as their Sink, so they may only exist after
// New; add them before Start.
func (a *Agent) AddChannel(ch channels.Channel) error {
	if a.queue.started() {
		return errors.New("agent: AddChannel after Start")
	}
	a.chans.m[ch.Name()] = ch
	return nil
}

// Start recovers from the last shutdown and begins answering: groups with
// an unsent answer in the outbox deliver it first (it is never generated
// again), then groups whose latest trigger is past their cursor run. It
// returns once that work is queued; runs continue until ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	if a.opts.Store == nil || a.opts.Groups == nil || a.settings().LLM == nil {
		return errors.New("agent: Store, Groups and LLM are required")
	}
	if err := a.queue.start(ctx); err != nil {
		return err
	}
	// Before any answer goes out: what a crash left half-shown is marked
	// so, and its answer comes again below (the outbox, or a new run).
	if err := a.lives.interruptAll(ctx); err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	queue := map[string]bool{}
	pending, err := a.outbox.db.Pending(ctx, "")
	if err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	for _, it := range pending {
		if _, ok := a.book.byFolder(it.Folder); !ok {
			a.log.Warn("agent: unsent answer for a group that is no longer configured", "group", it.Folder, "outbox", it.ID)
			continue
		}
		queue[it.Folder] = true
	}
	for _, g := range a.book.all() {
		t, cur, ok, err := a.opts.Store.DueTrigger(ctx, g.Folder)
		if err != nil {
			return fmt.Errorf("agent start: %w", err)
		}
		if ok && t.Seq > cur {
			queue[g.Folder] = true
		}
	}
	ended, err := batchesAtStart(ctx, a.batches, a.opts.Store, a.log)
	if err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	for _, f := range ended {
		queue[f] = true
	}
	for _, g := range a.book.all() {
		if queue[g.Folder] {
			a.log.Info("agent: resuming group after restart", "group", g.Folder)
			a.queue.kick(g.Folder, false)
		}
	}
	if a.batches != nil {
		a.queue.goRun(func() { a.batches.loop(ctx) })
	}
	return nil
}

// Queue is the agent's load: runs in flight, and groups whose worker
// waits for a run slot (agent.max_concurrent).
func (a *Agent) Queue() (running, waiting int) { return a.queue.load() }

// Wait blocks until the context given to Start has ended and every run has
// stopped.
func (a *Agent) Wait() { a.queue.wait() }

// Registered reports whether chat belongs to a group.
func (a *Agent) Registered(chat string) bool {
	_, ok := a.book.byChat(chat)
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
	g, ok := a.book.byChat(in.ChatID)
	if a.gate(ctx, in, g, ok) {
		return nil
	}
	if !ok {
		// Logged once per chat and run of the daemon, so the operator
		// can copy the id into groups:.
		if _, seen := a.strangers.LoadOrStore(in.ChatID, true); !seen {
			a.log.Info("message from a chat that is not registered; add it under groups: to answer there",
				"chat", in.ChatID, "name", in.ChatName, "is_group", in.IsGroup)
		}
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
	triggers := Triggers(&g, in)
	if admit := a.opts.Intake.Admit; triggers && admit != nil && !admit(ctx, in, &g) {
		// Its sender was told; not kept, so no later run answers it.
		return nil
	}
	seq, err := a.opts.Store.PutMessage(ctx, msg)
	if err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	if !triggers {
		return nil
	}
	if err := a.opts.Store.RecordTrigger(ctx, store.Trigger{Folder: g.Folder, Seq: seq, ChatID: in.ChatID, MessageID: in.ID, ThreadID: in.ThreadID}); err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	a.queue.kick(g.Folder, true)
	return nil
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
	folder, ok, err := a.book.addAlias(from, to)
	if !ok {
		return
	}
	if err != nil {
		a.log.Error("agent: cannot follow migrated chat", "group", folder, "from", from, "to", to, "err", err)
		return
	}
	a.log.Warn("agent: chat changed id; update the group's chat in the config", "group", folder, "from", from, "to", to)
}

// StopRun stops the run in flight of the group whose chat is chat (the
// web room's Stop button): what was shown stays, marked stopped, and the
// messages it answered count as answered. It reports whether a run was
// going.
func (a *Agent) StopRun(chat string) bool {
	g, ok := a.book.byChat(chat)
	return ok && a.queue.stop(g.Folder)
}
