package chantest

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/store"
)

// Lease is botd's lease held by one instance's store, for a channel's
// Env.Fence: Lose hands it to another instance the way a takeover does,
// after which every CheckFence is refused (store.ErrFenced) by the
// database's epoch, as for an instance frozen past its lease and thawed.
type Lease struct {
	st, other *store.Store
	now       time.Time
	refused   atomic.Int64
}

// NewLease opens two stores on one new SQLite database, the first holding
// the lease.
func NewLease(t testing.TB) *Lease {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lease.db")
	l := &Lease{now: time.Now()}
	for _, s := range []**store.Store{&l.st, &l.other} {
		st, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		*s = st
	}
	if _, ok, err := l.st.TryAcquireLease(ctx, "stale", l.now, 30*time.Second); !ok || err != nil {
		t.Fatalf("take the lease: %v %v", ok, err)
	}
	return l
}

// CheckFence implements channels.Fence, counting refusals.
func (l *Lease) CheckFence(ctx context.Context) error {
	err := l.st.CheckFence(ctx)
	if err != nil {
		l.refused.Add(1)
	}
	return err
}

// Refused is how many CheckFence calls were refused.
func (l *Lease) Refused() int64 { return l.refused.Load() }

// Lose lets another instance take the lease once it lapsed.
func (l *Lease) Lose(t testing.TB) {
	t.Helper()
	if _, ok, err := l.other.TryAcquireLease(context.Background(), "successor", l.now.Add(time.Minute), 30*time.Second); !ok || err != nil {
		t.Fatalf("the successor takes the lease: %v %v", ok, err)
	}
}
