// Package testwait is how tests wait for something another goroutine or
// process does: poll a condition until it holds, with a deadline that only
// turns a hang into a failure and never decides a verdict, so a slow or
// loaded machine takes longer but does not fail.
package testwait

import (
	"testing"
	"time"
)

// HangGuard bounds a wait for what a working program does at once (in
// milliseconds); it is generous because it only catches hangs.
const HangGuard = time.Minute

// poll is how often a condition is asked again: short against what tests
// wait for, long enough not to starve the goroutines being waited on.
const poll = 5 * time.Millisecond

// Until polls cond until it holds; after HangGuard it fails t, naming what
// was awaited.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, HangGuard, what, cond)
}

// Within is Until with a hang guard of its own, for waits on a child
// process that does real work first (starting, converting, calling a
// model).
func Within(t testing.TB, guard time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poller(guard, cond) {
		t.Fatalf("waited %v for %s", guard, what)
	}
}

// Eventually polls cond until it holds (true) or HangGuard passes (false),
// for callers that report the failure themselves (with what they saw).
func Eventually(cond func() bool) bool { return poller(HangGuard, cond) }

func poller(guard time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}
