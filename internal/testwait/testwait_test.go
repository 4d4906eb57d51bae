package testwait_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/internal/testwait"
)

// recorder is a testing.TB that keeps what Fatalf said instead of ending
// the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	testwait.Until(t, "three increments", func() bool { return n.Load() == 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("Until returned with n = %d", got)
	}
}

func TestWithinNamesWhatItAwaited(t *testing.T) {
	r := &recorder{TB: t}
	testwait.Within(r, 20*time.Millisecond, "the pigs to fly", func() bool { return false })
	if !strings.Contains(r.failed, "the pigs to fly") || !strings.Contains(r.failed, "20ms") {
		t.Errorf("failure says %q, want what was awaited and for how long", r.failed)
	}
}

func TestWithinDoesNotFailWhenTheConditionHolds(t *testing.T) {
	r := &recorder{TB: t}
	testwait.Within(r, time.Millisecond, "true", func() bool { return true })
	if r.failed != "" {
		t.Errorf("failed with %q on a condition that held at once", r.failed)
	}
}

func TestEventually(t *testing.T) {
	var calls atomic.Int32
	if !testwait.Eventually(func() bool { return calls.Add(1) >= 3 }) {
		t.Fatal("Eventually gave up on a condition that came true")
	}
}
