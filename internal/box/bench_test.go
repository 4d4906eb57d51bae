package box_test

import (
	"context"
	"testing"

	"github.com/botd-dev/botd/internal/box"
)

// BenchmarkStartGoJob is the cost of one box child running a Go job that
// does nothing: re-executing botd, confining and limiting it, and waiting
// for it.
func BenchmarkStartGoJob(b *testing.B) {
	for b.Loop() {
		if _, err := box.Run(context.Background(), box.Job{Func: "test-env"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartTool is the same for an external tool (true).
func BenchmarkStartTool(b *testing.B) {
	for b.Loop() {
		if _, err := box.Run(context.Background(), box.Job{Tool: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}
