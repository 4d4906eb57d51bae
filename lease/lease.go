// Package lease makes one of several botd instances sharing a database the
// active one (docs/scaling.md, "How leadership is held"). A Keeper stands
// by until it takes the lease in the database (store.TryAcquireLease),
// then runs what only the active instance may run (the channels, the
// agent, the scheduler) under a context it cancels when the lease may be
// lost: another instance took it, or it could not renew it for GiveUp. It
// renews every RenewEvery; the lease lapses TTL after the last renewal, and
// GiveUp < TTL means the active has stopped before anyone may take over.
// What a stopped active still tries to write is refused by the fence
// (store.Fenced, ErrFenced).
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/botd-dev/botd/internal/clock"
	"github.com/botd-dev/botd/store"
)

// The timings of issue 32; Options' zero values mean these.
const (
	DefaultTTL        = 30 * time.Second
	DefaultRenewEvery = 10 * time.Second
	DefaultGiveUp     = 15 * time.Second
	DefaultTryEvery   = 5 * time.Second
	DefaultRetryRenew = 2 * time.Second
)

// Options configures a Keeper. Store and Holder are required.
type Options struct {
	Store *store.Store
	// Holder is this instance's id in the lease (see InstanceID); unique
	// per running process.
	Holder string
	// Clock is the wall clock when nil; a clock.Fake in tests.
	Clock clock.Clock
	// TTL is how long after its last renewal the lease lapses; RenewEvery
	// how often the active renews; GiveUp how long the active goes on
	// without a renewal before it stops (must be less than TTL); TryEvery
	// how often a standby tries to take the lease; RetryRenew the wait
	// after a failed renewal.
	TTL, RenewEvery, GiveUp, TryEvery, RetryRenew time.Duration
	Log                                           *slog.Logger
	// TakeAtStart takes the lease at the first try whoever holds it
	// (store.TakeLease): the one instance on SQLite, which must not wait
	// for a crashed predecessor's lease to lapse. Later tries (after a
	// loss) wait like any standby.
	TakeAtStart bool
	// Sole says no other instance can take the lease: the one instance on
	// SQLite, its data folder locked for it (botd run). A renewal that
	// fails (a disk full, the database locked) does not stop it, since
	// nobody can take over: it retries every RetryRenew, logs once when
	// renewals start failing and once when one succeeds again, and Status
	// reports the failure meanwhile. (CheckFence still reads the epoch
	// past GiveUp: a read goes through where a write is locked out.)
	Sole bool
	// StandingBy, when set, is called once, from Run, the first time this
	// instance stands by (the lease is another's, or cannot be tried):
	// where the instance starts what a standby serves. It must not block.
	StandingBy func()
}

// Role is what a Keeper is doing.
type Role string

const (
	Starting Role = "starting"
	Standby  Role = "standby"
	Active   Role = "active"
)

// Status is a Keeper's view: its role, the lease as it last read or wrote
// it, and (active) when its last renewal was made.
type Status struct {
	Role  Role
	Lease store.Lease
	// RenewError is why the renewals fail, since FailingSince (this
	// instance's clock); empty while they succeed.
	RenewError   string
	FailingSince time.Time
}

// Keeper holds the lease for one instance.
type Keeper struct {
	opts Options
	clk  clock.Clock
	log  *slog.Logger

	mu     sync.Mutex
	status Status
	// stoodBy: Options.StandingBy was called (Run's goroutine only).
	stoodBy bool
}

// New returns a Keeper; nothing happens until Run.
func New(o Options) (*Keeper, error) {
	if o.Store == nil || o.Holder == "" {
		return nil, errors.New("lease: Store and Holder are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.TTL, DefaultTTL)
	def(&o.RenewEvery, DefaultRenewEvery)
	def(&o.GiveUp, DefaultGiveUp)
	def(&o.TryEvery, DefaultTryEvery)
	def(&o.RetryRenew, DefaultRetryRenew)
	if o.GiveUp >= o.TTL || o.RenewEvery >= o.GiveUp {
		return nil, fmt.Errorf("lease: renew every %s < give up after %s < lapse after %s is required", o.RenewEvery, o.GiveUp, o.TTL)
	}
	k := &Keeper{opts: o, clk: o.Clock, log: o.Log, status: Status{Role: Starting}}
	if k.clk == nil {
		k.clk = clock.Real{}
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	return k, nil
}

// InstanceID is the holder id of this process: configured when set,
// else hostname, pid and a random suffix (so a restart is a new holder).
func InstanceID(configured string) string {
	if configured != "" {
		return configured
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "botd"
	}
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Status returns the Keeper's current view.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.status
}

func (k *Keeper) set(r Role, l store.Lease) {
	k.mu.Lock()
	k.status = Status{Role: r, Lease: l}
	k.mu.Unlock()
}

// renewed records a successful renewal, ending a streak of failures
// (logged for a Sole Keeper, which logged its start).
func (k *Keeper) renewed(l store.Lease) {
	k.mu.Lock()
	was, since := k.status.RenewError, k.status.FailingSince
	k.status = Status{Role: Active, Lease: l}
	k.mu.Unlock()
	if was != "" && k.opts.Sole {
		k.log.Info("lease: renewed again", "failing_since", since, "last_error", was)
	}
}

// renewFailed records a failed renewal; first reports that it begins a
// streak of failures.
func (k *Keeper) renewFailed(err error) (first bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	first = k.status.RenewError == ""
	if first {
		k.status.FailingSince = k.clk.Now()
	}
	k.status.RenewError = err.Error()
	return first
}

// Run stands by until it holds the lease, then calls active with a
// context cancelled when the lease may be lost, waits for it to return and
// stands by again. It returns when ctx ends (releasing a held lease, so a
// standby takes over at its next try) or when active returns while the
// lease is still held (released too), with active's error. Until it holds
// the lease, the store's fenced writes are refused.
func (k *Keeper) Run(ctx context.Context, active func(ctx context.Context) error) error {
	k.opts.Store.RequireLease()
	for {
		l, err := k.acquire(ctx)
		if err != nil {
			return nil // ctx ended while standing by
		}
		lost, err := k.hold(ctx, l, active)
		if !lost {
			return err
		}
	}
}

// standBy records the standby role and, the first time, tells
// Options.StandingBy.
func (k *Keeper) standBy(l store.Lease) {
	k.set(Standby, l)
	if k.opts.StandingBy != nil && !k.stoodBy {
		k.stoodBy = true
		k.opts.StandingBy()
	}
}

// acquire tries every TryEvery until it takes the lease or ctx ends.
func (k *Keeper) acquire(ctx context.Context) (store.Lease, error) {
	for {
		var l store.Lease
		var ok bool
		var err error
		if k.opts.TakeAtStart && k.Status().Role == Starting {
			l, err = k.opts.Store.TakeLease(ctx, k.opts.Holder, k.clk.Now(), k.opts.TTL)
			ok = err == nil
		} else {
			l, ok, err = k.opts.Store.TryAcquireLease(ctx, k.opts.Holder, k.clk.Now(), k.opts.TTL)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			k.log.Warn("lease: cannot try the lease", "err", err)
			k.standBy(k.Status().Lease)
		case err == nil && ok:
			k.set(Active, l)
			k.log.Info("lease: this instance is active", "holder", k.opts.Holder, "epoch", l.Epoch)
			return l, nil
		case err == nil:
			k.standBy(l)
		}
		if !clock.Wait(ctx, k.clk, k.opts.TryEvery, nil) {
			return store.Lease{}, ctx.Err()
		}
	}
}

// hold runs active while the lease is held. lost reports that the lease
// may be gone (fenced out, or no renewal for GiveUp) and active has
// returned; otherwise ctx ended or active returned, and the lease was
// released.
func (k *Keeper) hold(ctx context.Context, l store.Lease, active func(context.Context) error) (lost bool, err error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- active(actx) }()
	renewed := make(chan store.Lease)
	fenced := make(chan error, 1)
	rdone := make(chan struct{})
	go k.renew(actx, l, renewed, fenced, rdone)
	stop := func() error {
		cancel()
		err := <-done
		<-rdone
		return err
	}
	// last is when the newest successful renewal was sent, on this
	// instance's clock: the database set the expiry from it, so giving up
	// GiveUp after it is GiveUp before anyone may take over.
	last := l.Renewed
	for {
		// A Sole Keeper never gives up: nobody can take over.
		var giveUpC <-chan time.Time
		stopGiveUp := func() {}
		if !k.opts.Sole {
			giveUp := k.clk.NewTimer(last.Add(k.opts.GiveUp).Sub(k.clk.Now()))
			giveUpC, stopGiveUp = giveUp.C(), func() { giveUp.Stop() }
		}
		select {
		case nl := <-renewed:
			stopGiveUp()
			last = nl.Renewed
			k.renewed(nl)
			continue
		case err := <-fenced:
			stopGiveUp()
			k.log.Error("lease: another instance took the lease; stopping", "err", err)
		case <-giveUpC:
			k.log.Error("lease: could not renew the lease; stopping before it lapses", "last_renewal", last, "give_up_after", k.opts.GiveUp)
		case err := <-done:
			stopGiveUp()
			cancel()
			<-rdone
			k.release(l)
			return false, err
		case <-ctx.Done():
			stopGiveUp()
			err := stop()
			k.release(l)
			return false, err
		}
		// Fenced first: whatever the active part still writes while it
		// stops is refused.
		k.opts.Store.DropLease()
		stop()
		k.set(Standby, k.Status().Lease)
		return true, nil
	}
}

// CheckFence implements channels.Fence: nil while this instance holds the
// lease, ErrFenced (or why the lease could not be read) otherwise. Every
// call a channel makes to its network asks it first, so it must be cheap:
// within GiveUp of the last renewal on this instance's clock nobody else
// can hold the lease (it lapses TTL after it), and the answer is the
// Keeper's own, with no query. Past that — a renewal overdue, or an
// instance frozen past its lease and thawed before its timers noticed —
// the database's epoch decides (store.CheckFence).
func (k *Keeper) CheckFence(ctx context.Context) error {
	st := k.Status()
	if st.Role == Active && k.opts.Store.FenceEpoch() == st.Lease.Epoch &&
		k.clk.Now().Before(st.Lease.Renewed.Add(k.opts.GiveUp)) {
		return nil
	}
	return k.opts.Store.CheckFence(ctx)
}

// release lets the lease lapse now, for a standby to take at once.
func (k *Keeper) release(l store.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.opts.Store.ReleaseLease(ctx, k.opts.Holder, l.Epoch, k.clk.Now()); err != nil {
		k.log.Warn("lease: not released; a standby takes it when it lapses", "err", err)
	}
	k.set(Standby, k.Status().Lease)
}

// renew renews the lease every RenewEvery (RetryRenew after a failure)
// until ctx ends, reporting each renewal, or a refusal (another holder)
// on fenced, after which it stops.
func (k *Keeper) renew(ctx context.Context, l store.Lease, renewed chan<- store.Lease, fenced chan<- error, done chan<- struct{}) {
	defer close(done)
	wait := k.opts.RenewEvery
	for clock.Wait(ctx, k.clk, wait, nil) {
		nl, err := k.opts.Store.RenewLease(ctx, k.opts.Holder, l.Epoch, k.clk.Now(), k.opts.TTL)
		switch {
		case err == nil:
			wait = k.opts.RenewEvery
			select {
			case renewed <- nl:
			case <-ctx.Done():
				return
			}
		case errors.Is(err, store.ErrFenced):
			fenced <- err
			return
		case ctx.Err() == nil:
			first := k.renewFailed(err)
			switch {
			case !k.opts.Sole:
				k.log.Warn("lease: renewal failed", "err", err)
			case first:
				k.log.Error("lease: renewal failing; this is the only instance (SQLite), so it runs on and retries", "err", err, "retry_every", k.opts.RetryRenew)
			}
			wait = k.opts.RetryRenew
		}
	}
}
