package channels_test

import (
	"sync"
	"testing"

	"github.com/botd-dev/botd/channels"
)

// A channel value receives once: of many concurrent Starts exactly one
// goes ahead, and the others are told why in the channel's name.
func TestStartOnceLetsOneStartThrough(t *testing.T) {
	var once channels.StartOnce
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = once.Begin("telegram") })
	}
	wg.Wait()
	passed := 0
	for _, err := range errs {
		switch {
		case err == nil:
			passed++
		case err.Error() != "telegram: already started":
			t.Errorf("refusal = %q, want %q", err, "telegram: already started")
		}
	}
	if passed != 1 {
		t.Fatalf("%d of %d Starts went ahead, want exactly 1", passed, n)
	}
}
