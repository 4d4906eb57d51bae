package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Backoff is exponential with jitter: attempt n waits a random duration in
// [d/2, d] where d = Base·2^(n-1) capped at Max. Jitter keeps many groups
// that failed together from retrying in lockstep.
type Backoff struct {
	Base time.Duration // default 500ms
	Max  time.Duration // default 8s
}

func (b Backoff) delay(attempt int, jitter float64) time.Duration {
	base, maxD := b.Base, b.Max
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if maxD <= 0 {
		maxD = 8 * time.Second
	}
	d := base
	for i := 1; i < attempt && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// Entry is one step of a fallback chain.
type Entry struct {
	Provider Provider
	// Model replaces Request.Model for this entry; empty keeps the caller's.
	Model string
	// MaxAttempts is how many times a retryable failure is retried on this
	// entry before moving on; values below 1 mean 1.
	MaxAttempts int
	Backoff     Backoff
	// Caps is what this entry's model can take; nil means the provider's
	// own Capabilities.
	Caps *Capabilities
}

func (e Entry) attempts() int { return max(e.MaxAttempts, 1) }

func (e Entry) caps() Capabilities {
	if e.Caps != nil {
		return *e.Caps
	}
	return e.Provider.Capabilities()
}

// Outcome is how one attempt ended.
type Outcome string

const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	// OutcomeSkipped means the entry was not tried: cooling down after a
	// rate limit, or its model cannot take the request (Reason says which).
	OutcomeSkipped Outcome = "skipped"
)

// Attempt reports one try of one entry to the observer.
type Attempt struct {
	Entry    int // index into the chain
	Try      int // 1-based within the entry; 0 when skipped
	Provider string
	Model    string
	Outcome  Outcome
	Reason   string // why an entry was skipped
	Err      *Error // set when failed
	// Usage is what the attempt consumed, priced against its own model, so a
	// failover is billed correctly. Zero (cost unknown) for failures.
	Usage    Usage
	Duration time.Duration
}

// ChainOption configures a Chain.
type ChainOption func(*Chain)

// WithObserver receives every attempt, in order, synchronously.
func WithObserver(fn func(Attempt)) ChainOption { return func(c *Chain) { c.observe = fn } }

// WithLogger sets the logger for failover messages (default slog.Default()).
func WithLogger(l *slog.Logger) ChainOption { return func(c *Chain) { c.log = l } }

// WithSleep replaces the backoff wait, so tests need not sleep. It must
// return ctx.Err() if ctx ends first.
func WithSleep(fn func(ctx context.Context, d time.Duration) error) ChainOption {
	return func(c *Chain) { c.sleep = fn }
}

// WithCooldown sets how long a rate-limited entry is skipped (default 30s;
// a longer Retry-After from the vendor wins).
func WithCooldown(d time.Duration) ChainOption { return func(c *Chain) { c.cooldown = d } }

// WithClock replaces time.Now for cooldown bookkeeping.
func WithClock(now func() time.Time) ChainOption { return func(c *Chain) { c.now = now } }

// WithJitter replaces the random source of the backoff jitter; fn returns a
// value in [0, 1).
func WithJitter(fn func() float64) ChainOption { return func(c *Chain) { c.jitter = fn } }

// Chain tries entries in order and is itself a Provider, so the agent loop
// does not know whether it talks to one adapter or several.
//
// Policy: a retryable error is retried on the same entry with backoff until
// its attempts are used up, then the next entry is tried; a fatal error
// stops the chain at once; a stream that has forwarded content is never
// re-issued elsewhere, because the caller has already shown it to someone;
// reasoning and vendor parts are stripped from the history when the
// request goes to a provider other than the first entry's, since
// signatures and vendor blocks are only valid where they were issued.
type Chain struct {
	entries  []Entry
	observe  func(Attempt)
	log      *slog.Logger
	sleep    func(context.Context, time.Duration) error
	cooldown time.Duration
	now      func() time.Time
	jitter   func() float64

	mu      sync.Mutex
	cooling map[int]time.Time // entry index → end of its cooldown
}

var _ Provider = (*Chain)(nil)

// NewChain builds a chain; it fails for an empty chain or a nil provider.
func NewChain(entries []Entry, opts ...ChainOption) (*Chain, error) {
	if len(entries) == 0 {
		return nil, errors.New("llm: chain has no entries")
	}
	for i, e := range entries {
		if e.Provider == nil {
			return nil, fmt.Errorf("llm: chain entry %d has no provider", i)
		}
	}
	c := &Chain{
		entries:  append([]Entry(nil), entries...),
		log:      slog.Default(),
		sleep:    sleepCtx,
		cooldown: 30 * time.Second,
		now:      time.Now,
		jitter:   rand.Float64,
		cooling:  map[int]time.Time{},
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Name lists the providers, e.g. "chain(anthropic,openai)".
func (c *Chain) Name() string {
	names := make([]string, len(c.entries))
	for i, e := range c.entries {
		names[i] = e.Provider.Name()
	}
	return "chain(" + strings.Join(names, ",") + ")"
}

// Capabilities are the first entry's: requests are built for the model
// the operator chose first. A later entry whose model cannot take a
// request (an image for a text-only fallback) is skipped for it, not
// failed, so text requests still fail over to it.
func (c *Chain) Capabilities() Capabilities { return c.entries[0].caps() }

// Generate runs the chain for a complete reply.
func (c *Chain) Generate(ctx context.Context, req *Request) (*Result, error) {
	run := c.newRun(ctx, req)
	for {
		idx, r, err := run.next(ctx)
		if err != nil {
			return nil, err
		}
		start := c.now()
		res, err := c.entries[idx].Provider.Generate(ctx, r)
		if err == nil {
			run.succeeded(idx, res.Usage, c.now().Sub(start))
			return res, nil
		}
		e := AsError(c.entries[idx].Provider.Name(), err)
		if !run.failed(ctx, idx, e, c.now().Sub(start)) {
			return nil, e
		}
	}
}

// Stream runs the chain for a streamed reply. Failover happens while
// opening and on errors before the first content chunk; after that a
// mid-stream error is returned to the caller as is.
func (c *Chain) Stream(ctx context.Context, req *Request) (Stream, error) {
	s := &chainStream{ctx: ctx, run: c.newRun(ctx, req)}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// run is the state of one call walking the chain.
type run struct {
	c         *Chain
	req       *Request
	stripped  []Message // req.Messages without reasoning and vendor parts, built on demand
	primary   string
	i, try    int
	wait      time.Duration // backoff owed before the next attempt
	attempted int
	skipped   int
	anyway    bool // every entry was cooling: try them regardless
	last      *Error
	need      Capabilities
	unfit     []string // entries skipped because their model cannot take the request
	observe   func(Attempt)
}

func (c *Chain) newRun(ctx context.Context, req *Request) *run {
	obs, _ := ctx.Value(attemptsKey{}).(func(Attempt))
	return &run{c: c, req: req, primary: c.entries[0].Provider.Name(), need: needs(req), observe: obs}
}

type attemptsKey struct{}

// WithAttemptObserver returns a context under which a chain reports every
// attempt of a request to fn as well (after the chain's own observer): the
// caller learns what its request cost, failed attempts included.
func WithAttemptObserver(ctx context.Context, fn func(Attempt)) context.Context {
	return context.WithValue(ctx, attemptsKey{}, fn)
}

// ReportAttempt tells the observer of ctx (WithAttemptObserver) about a
// model call made outside a chain, such as a describing model's.
func ReportAttempt(ctx context.Context, a Attempt) {
	if obs, ok := ctx.Value(attemptsKey{}).(func(Attempt)); ok {
		obs(a)
	}
}

func (r *run) report(a Attempt) {
	r.c.report(a)
	if r.observe != nil {
		r.observe(a)
	}
}

func (r *run) cooling(i int) bool {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	until, ok := r.c.cooling[i]
	if ok && !r.c.now().Before(until) {
		delete(r.c.cooling, i)
		return false
	}
	return ok
}

// next picks the entry to try, waiting out any backoff, and returns the
// request tailored to it. It returns the final error when the chain is
// exhausted.
func (r *run) next(ctx context.Context) (int, *Request, error) {
	entries := r.c.entries
	for {
		if r.i >= len(entries) {
			if r.attempted == 0 && r.skipped > 0 && !r.anyway {
				// Refusing to try anything is worse than trying a
				// rate-limited provider early.
				r.anyway, r.i, r.try, r.skipped, r.unfit = true, 0, 0, 0, nil
				continue
			}
			if r.last != nil {
				return 0, nil, r.last
			}
			if r.attempted == 0 && len(r.unfit) > 0 {
				return 0, nil, NewError(r.c.Name(), KindBadRequest, "no configured model can take this request: "+strings.Join(r.unfit, "; "))
			}
			return 0, nil, NewError(r.c.Name(), KindUnknown, "no provider could be tried")
		}
		e := entries[r.i]
		if r.try == 0 {
			if why := e.caps().lacks(r.need); why != "" {
				r.unfit = append(r.unfit, r.model(r.i)+" "+why)
				r.report(Attempt{Entry: r.i, Provider: e.Provider.Name(), Model: r.model(r.i), Outcome: OutcomeSkipped, Reason: why})
				r.i++
				continue
			}
		}
		if r.try == 0 && !r.anyway && r.cooling(r.i) {
			r.skipped++
			r.report(Attempt{Entry: r.i, Provider: e.Provider.Name(), Model: r.model(r.i), Outcome: OutcomeSkipped, Reason: "cooling down after a rate limit"})
			r.i++
			continue
		}
		if r.try >= e.attempts() {
			r.i, r.try = r.i+1, 0
			continue
		}
		if r.wait > 0 {
			if err := r.c.sleep(ctx, r.wait); err != nil {
				return 0, nil, FromTransport(e.Provider.Name(), err)
			}
			r.wait = 0
		}
		if err := ctx.Err(); err != nil {
			return 0, nil, FromTransport(e.Provider.Name(), err)
		}
		r.try++
		r.attempted++
		return r.i, r.request(r.i), nil
	}
}

func (r *run) model(i int) string {
	if m := r.c.entries[i].Model; m != "" {
		return m
	}
	return r.req.Model
}

func (r *run) request(i int) *Request {
	cp := *r.req
	cp.Model = r.model(i)
	if r.c.entries[i].Provider.Name() != r.primary {
		if r.stripped == nil {
			r.stripped = StripReasoning(r.req.Messages)
		}
		cp.Messages = r.stripped
	}
	return &cp
}

func (r *run) succeeded(i int, u Usage, d time.Duration) {
	r.report(Attempt{Entry: i, Try: r.try, Provider: r.c.entries[i].Provider.Name(), Model: r.model(i), Outcome: OutcomeSucceeded, Usage: u, Duration: d})
}

// failed records a failed attempt and reports whether the chain goes on.
func (r *run) failed(ctx context.Context, i int, e *Error, d time.Duration) bool {
	entry := r.c.entries[i]
	r.last = e
	r.report(Attempt{Entry: i, Try: r.try, Provider: entry.Provider.Name(), Model: r.model(i), Outcome: OutcomeFailed, Err: e, Duration: d})
	if ctx.Err() != nil || !e.Retryable {
		return false
	}
	if e.Kind == KindRateLimit {
		cool := max(r.c.cooldown, e.RetryAfter)
		r.c.mu.Lock()
		r.c.cooling[i] = r.c.now().Add(cool)
		r.c.mu.Unlock()
	}
	r.wait = entry.Backoff.delay(r.try, r.c.jitter())
	if e.RetryAfter > 0 && r.try < entry.attempts() {
		// Honour the vendor's hint for a same-entry retry, within reason.
		maxWait := entry.Backoff.Max
		if maxWait <= 0 {
			maxWait = 8 * time.Second
		}
		r.wait = max(r.wait, min(e.RetryAfter, maxWait))
	}
	return true
}

func (c *Chain) report(a Attempt) {
	if c.observe != nil {
		c.observe(a)
	}
	if c.log == nil {
		return
	}
	attrs := []any{"provider", a.Provider, "model", a.Model, "entry", a.Entry, "try", a.Try}
	switch a.Outcome {
	case OutcomeFailed:
		attrs = append(attrs, "kind", a.Err.Kind, "status", a.Err.Status, "retryable", a.Err.Retryable, "error", a.Err.Message)
		c.log.Warn("llm attempt failed", attrs...)
	case OutcomeSkipped:
		c.log.Info("llm provider skipped: cooling down after rate limit", attrs...)
	case OutcomeSucceeded:
		attrs = append(attrs, "input_tokens", a.Usage.InputTokens, "output_tokens", a.Usage.OutputTokens, "duration", a.Duration)
		if a.Usage.CostKnown {
			attrs = append(attrs, "cost_microcents", a.Usage.CostMicrocents)
		}
		if a.Entry > 0 || a.Try > 1 {
			c.log.Info("llm failover succeeded", attrs...)
		} else {
			c.log.Debug("llm attempt succeeded", attrs...)
		}
	}
}

type chainStream struct {
	ctx       context.Context
	run       *run
	idx       int
	start     time.Time
	forwarded bool
	err       error

	mu     sync.Mutex
	cur    Stream
	closed bool
}

func (s *chainStream) open() error {
	c := s.run.c
	for {
		idx, r, err := s.run.next(s.ctx)
		if err != nil {
			return err
		}
		start := c.now()
		st, err := c.entries[idx].Provider.Stream(s.ctx, r)
		if err != nil {
			e := AsError(c.entries[idx].Provider.Name(), err)
			if !s.run.failed(s.ctx, idx, e, c.now().Sub(start)) {
				return e
			}
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			st.Close()
			return NewError(c.entries[idx].Provider.Name(), KindCancelled, "stream closed")
		}
		s.cur, s.idx, s.start = st, idx, start
		s.mu.Unlock()
		return nil
	}
}

func (s *chainStream) Next() (Chunk, error) {
	c := s.run.c
	for {
		if s.err != nil {
			return Chunk{}, s.err
		}
		s.mu.Lock()
		cur := s.cur
		s.mu.Unlock()
		if cur == nil {
			return Chunk{}, io.EOF
		}
		ch, err := cur.Next()
		if err == nil {
			if ch.Kind == ChunkStop {
				var u Usage
				if ch.Usage != nil {
					u = *ch.Usage
				}
				s.run.succeeded(s.idx, u, c.now().Sub(s.start))
			} else {
				s.forwarded = true
			}
			return ch, nil
		}
		if errors.Is(err, io.EOF) {
			s.err = io.EOF
			return Chunk{}, io.EOF
		}
		name := c.entries[s.idx].Provider.Name()
		e := AsError(name, err)
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		cur.Close()
		if s.forwarded {
			// The caller already relayed part of this reply; re-issuing it
			// elsewhere would show the user two different answers.
			s.run.last = e
			s.run.report(Attempt{Entry: s.idx, Try: s.run.try, Provider: name, Model: s.run.model(s.idx), Outcome: OutcomeFailed, Err: e, Duration: c.now().Sub(s.start)})
			s.err = e
			return Chunk{}, e
		}
		if !s.run.failed(s.ctx, s.idx, e, c.now().Sub(s.start)) {
			s.err = e
			return Chunk{}, e
		}
		if err := s.open(); err != nil {
			s.err = err
			return Chunk{}, err
		}
	}
}

func (s *chainStream) Close() error {
	s.mu.Lock()
	cur := s.cur
	s.closed = true
	s.mu.Unlock()
	if cur != nil {
		return cur.Close()
	}
	return nil
}
