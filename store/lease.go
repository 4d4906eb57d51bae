package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LeaseName is the one lease of this step (docs/scaling.md, "How
// leadership is held"): whoever holds it is the active instance, running
// the channels, the agent and the scheduler.
const LeaseName = "botd"

// ErrFenced means a fenced write was refused: this process does not hold
// the lease at the epoch it wrote with (another instance took over, or it
// never held it). The caller stops: it is not the leader.
var ErrFenced = errors.New("fenced: this instance does not hold the lease")

// fenceNone is the fence of a process that requires the lease and does
// not hold it: every fenced write is refused without asking the database.
const fenceNone = -1

// Lease is the state of a lease row: who holds it, since when, until
// when, and its epoch (raised by every acquisition).
type Lease struct {
	Name     string
	Holder   string
	Epoch    int64
	Acquired time.Time // when Holder took it (this epoch began)
	Renewed  time.Time
	Expires  time.Time // after this, anyone may take it
}

// Live reports whether the lease is held at now.
func (l Lease) Live(now time.Time) bool { return now.Before(l.Expires) }

// RequireLease makes every fenced write of s refused until s acquires the
// lease: the mode of a daemon, standby included. Before it (tests, one-shot
// commands on a single instance), fenced writes are not fenced.
func (s *Store) RequireLease() { s.fence.CompareAndSwap(0, fenceNone) }

// DropLease refuses s's fenced writes until it acquires the lease again:
// what an active that stopped because it could not renew does, whether or
// not the database still names it.
func (s *Store) DropLease() { s.fence.Store(fenceNone) }

// FenceEpoch is the epoch s's fenced writes carry: 0 unfenced, -1 when the
// lease is required but not held.
func (s *Store) FenceEpoch() int64 { return s.fence.Load() }

// TryAcquireLease takes the lease for holder if it is free,
// lapsed (expires <= now) or already holder's (a restart under the same
// instance id), raising its epoch, and makes s's fenced writes carry the
// new epoch. ok is false, with the lease as it stands, when another holder
// has it. Times are the caller's clock: instances compare each other's
// expiry with their own clocks, which must agree to well within the gap
// between giving up (15 s) and lapsing (30 s).
func (s *Store) TryAcquireLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (l Lease, ok bool, err error) {
	return s.acquireLease(ctx, holder, now, ttl, false)
}

// TakeLease takes the lease for holder whoever holds it, raising its
// epoch: a single instance's start on SQLite, where a second process on
// the same file is a mistake and the new epoch fences the old one out,
// instead of waiting for a crashed predecessor's lease to lapse.
func (s *Store) TakeLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	l, _, err := s.acquireLease(ctx, holder, now, ttl, true)
	return l, err
}

func (s *Store) acquireLease(ctx context.Context, holder string, now time.Time, ttl time.Duration, force bool) (l Lease, ok bool, err error) {
	at, exp := now.UnixMilli(), now.Add(ttl).UnixMilli()
	// One statement each, so two instances racing settle in the database:
	// Postgres re-checks the WHERE against a row another transaction just
	// changed, and SQLite has one writer.
	row := s.DB.QueryRowContext(ctx, `UPDATE leases SET holder = ?, epoch = epoch + 1, acquired = ?, renewed = ?, expires = ?
		WHERE name = ? AND (expires <= ? OR holder = ? OR ? = 1) RETURNING `+leaseCols, holder, at, at, exp, LeaseName, at, holder, force)
	l, err = scanLease(row)
	if errors.Is(err, sql.ErrNoRows) {
		row = s.DB.QueryRowContext(ctx, `INSERT INTO leases(name, holder, epoch, acquired, renewed, expires) VALUES (?, ?, 1, ?, ?, ?)
			ON CONFLICT(name) DO NOTHING RETURNING `+leaseCols, LeaseName, holder, at, at, exp)
		l, err = scanLease(row)
	}
	if errors.Is(err, sql.ErrNoRows) {
		l, found, err := s.CurrentLease(ctx)
		if err == nil && !found {
			err = fmt.Errorf("lease %s: vanished while being taken", LeaseName)
		}
		return l, false, err
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("acquire lease %s: %w", LeaseName, err)
	}
	s.fence.Store(l.Epoch)
	return l, true, nil
}

// RenewLease extends holder's lease at epoch to now+ttl. It fails with
// ErrFenced when the lease is no longer holder's at that epoch.
func (s *Store) RenewLease(ctx context.Context, holder string, epoch int64, now time.Time, ttl time.Duration) (Lease, error) {
	l, err := scanLease(s.DB.QueryRowContext(ctx, `UPDATE leases SET renewed = ?, expires = ? WHERE name = ? AND holder = ? AND epoch = ?
		RETURNING `+leaseCols, now.UnixMilli(), now.Add(ttl).UnixMilli(), LeaseName, holder, epoch))
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, fmt.Errorf("renew lease %s at epoch %d: %w", LeaseName, epoch, ErrFenced)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("renew lease %s: %w", LeaseName, err)
	}
	return l, nil
}

// ReleaseLease lets holder's lease at epoch lapse at now, so a standby
// takes it at its next try instead of after the lease's time (a clean
// stop). A lease no longer holder's is left alone. s's fenced writes are
// refused from here on.
func (s *Store) ReleaseLease(ctx context.Context, holder string, epoch int64, now time.Time) error {
	s.fence.Store(fenceNone)
	if _, err := s.DB.ExecContext(ctx, `UPDATE leases SET expires = ? WHERE name = ? AND holder = ? AND epoch = ? AND expires > ?`,
		now.UnixMilli(), LeaseName, holder, epoch, now.UnixMilli()); err != nil {
		return fmt.Errorf("release lease %s: %w", LeaseName, err)
	}
	return nil
}

// CurrentLease reads the lease; found is false when it was
// never taken.
func (s *Store) CurrentLease(ctx context.Context) (l Lease, found bool, err error) {
	l, err = scanLease(s.DB.QueryRowContext(ctx, `SELECT `+leaseCols+` FROM leases WHERE name = ?`, LeaseName))
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("lease %s: %w", LeaseName, err)
	}
	return l, true, nil
}

const leaseCols = `name, holder, epoch, acquired, renewed, expires`

func scanLease(r interface{ Scan(...any) error }) (Lease, error) {
	var l Lease
	var acq, ren, exp int64
	err := r.Scan(&l.Name, &l.Holder, &l.Epoch, &acq, &ren, &exp)
	l.Acquired, l.Renewed, l.Expires = time.UnixMilli(acq), time.UnixMilli(ren), time.UnixMilli(exp)
	return l, err
}

// CheckFence reports whether s still holds the lease at the epoch it
// took, for what goes to a chat with no fenced write before it: every
// call a channel makes asks the lease's Keeper where it leaves the
// process (channels.FencedTransport), and the Keeper asks here once its
// last renewal is more than GiveUp ago. It
// is ErrFenced when another instance has taken the lease since (an
// instance frozen past its lease and thawed reads the new epoch here,
// whatever its own timers have noticed yet) or when s is standing by;
// nil for a store that never asked for the lease. What is sent after the
// check is the network's (docs/scaling.md, "What fencing cannot undo").
func (s *Store) CheckFence(ctx context.Context) error {
	epoch := s.fence.Load()
	switch epoch {
	case 0:
		return nil
	case fenceNone:
		return fmt.Errorf("%w (it is standing by)", ErrFenced)
	}
	return checkEpoch(ctx, s.DB, epoch, "")
}

// checkEpoch reads the lease's epoch through q (lock: a locking clause,
// or none) and refuses with ErrFenced when it is not epoch.
func checkEpoch(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, epoch int64, lock string) error {
	var cur int64
	err := q.QueryRowContext(ctx, `SELECT epoch FROM leases WHERE name = ?`+lock, LeaseName).Scan(&cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w (no lease recorded)", ErrFenced)
	case err != nil:
		return fmt.Errorf("check lease: %w", err)
	case cur != epoch:
		return fmt.Errorf("%w (its epoch is %d, the lease's is %d)", ErrFenced, epoch, cur)
	}
	return nil
}

// Fenced runs fn in a transaction that first checks that the lease is
// still at the epoch s acquired it with, and refuses with ErrFenced
// otherwise: every write that must not happen twice (an answer's delivery,
// a scheduled run's claim, a cursor move, a video's sending, a batch's
// result) goes through it. The check holds the lease row until the
// transaction ends (FOR SHARE on Postgres; SQLite's write lock), so a
// takeover waits for the write and then sees it, or comes first and the
// write is refused: a stale instance's write never lands after its
// successor has read. Unfenced (no lease in use), fn just runs in a
// transaction.
func (s *Store) Fenced(ctx context.Context, fn func(tx *sql.Tx) error) error {
	epoch := s.fence.Load()
	if epoch == fenceNone {
		return fmt.Errorf("%w (it is standing by)", ErrFenced)
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if epoch != 0 {
		if err := checkEpoch(ctx, tx, epoch, s.Dialect.ForShare()); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
