package channels

import (
	"errors"
	"testing"
)

// A network that did not answer is ErrUnavailable to callers, in words
// that say so and nothing about media.
func TestUnreachable(t *testing.T) {
	err := Unreachable("telegram: getMe at %s: %s", "http://127.0.0.1:1", "connection refused")
	if !errors.Is(err, ErrUnavailable) {
		t.Error("not ErrUnavailable")
	}
	if errors.Is(err, ErrForbidden) || errors.Is(err, ErrUnchecked) {
		t.Error("Is another error")
	}
	if got, want := err.Error(), "telegram: getMe at http://127.0.0.1:1: connection refused"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}
