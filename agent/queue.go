package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/backoff"
)

// IntakeOptions bound the intake: runs at once, a group's spending, and
// the retries of a failing group.
type IntakeOptions struct {
	MaxConcurrent int
	// MaxCostPerDay (micro-cents; see USD) stops a group's runs for the
	// rest of the day once its model calls cost that much; 0 is no limit.
	MaxCostPerDay int64
	// MaxTries bounds the runs of one failure streak; zero means 5.
	MaxTries int
	// RetryDelay is the wait before retry number try (1-based) after a
	// failed run; nil means 5s·3^(try-1).
	RetryDelay func(try int) time.Duration
	// Gate, when set, sees every message before it is routed and may
	// answer it without the model (pairing of unknown chats, an owner's
	// /approve); what it handled is neither stored nor routed.
	Gate Gate
	// Admit, when set, is asked about each message that would start a
	// run (access.per_sender_per_hour); false: it told the sender, and
	// the message is neither stored nor routed.
	Admit func(ctx context.Context, in channels.Inbound, g *groups.Group) bool
	// AckReaction is put on the message a run answers while it runs
	// (ack.go); empty puts none.
	AckReaction string
}

func (o IntakeOptions) withDefaults(def Config) IntakeOptions {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = def.MaxConcurrent
	}
	if o.MaxTries <= 0 {
		o.MaxTries = DefaultMaxTries
	}
	if o.RetryDelay == nil {
		o.RetryDelay = defaultRetryDelay
	}
	return o
}

// defaultRetryDelay is 5s, 15s, 45s, 2m15s: long enough that a vendor
// outage is not hammered, short enough that a blip costs under a minute.
func defaultRetryDelay(try int) time.Duration {
	return backoff.Schedule{Initial: 5 * time.Second, Factor: 3}.Wait(try - 1)
}

type outcome int

const (
	outcomeDone           outcome = iota // answered, or nothing to do
	outcomeStopped                       // shutting down; Start picks it up next time
	outcomeModelFailed                   // the provider failed: retry with backoff
	outcomeDeliveryFailed                // the channel failed: retry the outbox with backoff
)

// runResult is what one unit of a group's work came to.
type runResult struct {
	outcome outcome
	err     error
	// where to tell the chat about a failure
	chat, thread string
}

// errStoppedByUser ends a run someone stopped from the chat.
var errStoppedByUser = errors.New("stopped from the chat")

// queue is the per-group queue: one worker per group with work, runs
// bounded by a global slot count, a failed run retried with backoff, and
// the chat told once per failure streak.
type queue struct {
	o   IntakeOptions
	log *slog.Logger
	// run does one unit of a group's work; notify tells the chat a run
	// failed.
	run    func(ctx context.Context, folder string) runResult
	notify func(ctx context.Context, folder string, res runResult)
	// skip reports a group whose work must wait (its folder was refused
	// at start); nil skips none.
	skip func(folder string) bool

	mu      sync.Mutex
	ctx     context.Context // set by start; nil before
	state   map[string]*groupState
	running int // workers in flight
	idle    *sync.Cond

	sem chan struct{}
	wg  sync.WaitGroup
}

// groupState is the scheduling state of one group, guarded by queue.mu.
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

func newQueue(o IntakeOptions, log *slog.Logger, run func(context.Context, string) runResult,
	notify func(context.Context, string, runResult)) *queue {
	q := &queue{o: o, log: log, run: run, notify: notify, state: map[string]*groupState{}, sem: make(chan struct{}, o.MaxConcurrent)}
	q.idle = sync.NewCond(&q.mu)
	return q
}

// start begins taking work until ctx ends; a pending retry is dropped
// then (Start finds the work in the store next time).
func (q *queue) start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ctx != nil {
		return errors.New("agent: already started")
	}
	q.ctx = ctx
	q.goRun(func() {
		<-ctx.Done()
		q.mu.Lock()
		for _, st := range q.state {
			if st.timer != nil {
				st.timer.Stop()
				st.timer = nil
			}
		}
		q.idle.Broadcast()
		q.mu.Unlock()
	})
	return nil
}

func (q *queue) started() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ctx != nil
}

// goRun runs fn in a goroutine that wait waits for.
func (q *queue) goRun(fn func()) {
	q.wg.Add(1)
	go func() { defer q.wg.Done(); fn() }()
}

func (q *queue) wait() { q.wg.Wait() }

// load is the runs in flight and the workers waiting for a slot.
func (q *queue) load() (running, waiting int) {
	q.mu.Lock()
	workers := q.running
	q.mu.Unlock()
	running = len(q.sem)
	return running, max(0, workers-running)
}

// kick notes work for a group and starts its worker unless one is active
// or a retry is already scheduled (a failing group waits for its backoff
// even when new messages arrive). fresh marks a new trigger, which ends a
// streak that was given up.
func (q *queue) kick(folder string, fresh bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ctx == nil || q.ctx.Err() != nil {
		return // before Start: Start finds the trigger in the store
	}
	if q.skip != nil && q.skip(folder) {
		return // its folder was refused at start: the trigger stays stored
	}
	st := q.st(folder)
	st.pending = true
	if st.active || st.timer != nil {
		return
	}
	if fresh && st.tries == 0 {
		st.notified = false
	}
	q.startWorker(folder, st)
}

// again marks the group as having work left, so its worker runs once more
// after this run instead of waiting for the next trigger.
func (q *queue) again(folder string) {
	q.mu.Lock()
	q.st(folder).pending = true
	q.mu.Unlock()
}

// retrying says whether folder's last run failed (a streak goes on).
func (q *queue) retrying(folder string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.state[folder]
	return ok && st.tries > 0
}

func (q *queue) st(folder string) *groupState {
	st, ok := q.state[folder]
	if !ok {
		st = &groupState{}
		q.state[folder] = st
	}
	return st
}

// startWorker must be called with q.mu held.
func (q *queue) startWorker(folder string, st *groupState) {
	st.active = true
	q.running++
	q.wg.Add(1)
	go q.work(q.ctx, folder)
}

// work runs the group until it has nothing pending, then exits. The
// global slot is taken per run, not per worker, so a busy group cannot
// starve the others between its runs.
func (q *queue) work(ctx context.Context, folder string) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		st := q.st(folder)
		st.pending = false
		q.mu.Unlock()

		var res runResult
		select {
		case q.sem <- struct{}{}:
			res = q.run(ctx, folder)
			<-q.sem
		case <-ctx.Done():
			res = runResult{outcome: outcomeStopped}
		}

		q.mu.Lock()
		switch res.outcome {
		case outcomeDone:
			st.tries, st.notified = 0, false
			if st.pending && ctx.Err() == nil {
				q.mu.Unlock()
				continue
			}
		case outcomeStopped:
		case outcomeModelFailed, outcomeDeliveryFailed:
			st.tries++
			if st.tries >= q.o.MaxTries {
				q.log.Error("agent: giving up on the group until a new message triggers it",
					"group", folder, "tries", st.tries, "err", res.err)
				st.tries, st.pending = 0, false
				break
			}
			delay := q.o.RetryDelay(st.tries)
			q.log.Warn("agent: run failed, retrying later", "group", folder, "try", st.tries, "in", delay, "err", res.err)
			notify := res.outcome == outcomeModelFailed && !st.notified
			st.notified = st.notified || notify
			if notify {
				q.mu.Unlock()
				q.notify(ctx, folder, res)
				q.mu.Lock()
			}
			if ctx.Err() == nil {
				st.timer = time.AfterFunc(delay, func() { q.retry(folder) })
			}
		}
		st.active = false
		q.running--
		q.idle.Broadcast()
		q.mu.Unlock()
		return
	}
}

func (q *queue) retry(folder string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.st(folder)
	st.timer = nil
	if q.ctx.Err() != nil || st.active {
		return
	}
	q.startWorker(folder, st)
}

// waitIdle blocks until no run is in flight and no retry is scheduled, or
// ctx ends. Tests use it to assert that nothing more happens.
func (q *queue) waitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.idle.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		busy := q.running > 0
		for _, st := range q.state {
			busy = busy || st.timer != nil
		}
		if !busy {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		q.idle.Wait()
	}
}

// stop ends the group's run in flight, if one is; see Agent.StopRun.
func (q *queue) stop(folder string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.state[folder]
	if st == nil || st.stop == nil {
		return false
	}
	st.stop(errStoppedByUser)
	return true
}

// stoppable records the cancel of the group's run for stop; the returned
// func forgets it.
func (q *queue) stoppable(folder string, cancel context.CancelCauseFunc) func() {
	q.mu.Lock()
	if st := q.state[folder]; st != nil {
		st.stop = cancel
	}
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		if st := q.state[folder]; st != nil {
			st.stop = nil
		}
		q.mu.Unlock()
	}
}
