package progress

import (
	"context"
	"testing"
)

func TestReport(t *testing.T) {
	// Without a reporter nothing happens (an in-process call).
	Report(context.Background(), Progress{State: Working})

	var got []Progress
	ctx := With(context.Background(), func(p Progress) { got = append(got, p) })
	Report(ctx, Progress{State: Downloading, Done: 3, Total: 10})
	Report(context.WithValue(ctx, struct{}{}, 1), Progress{State: Working}) // reaches through derived contexts
	want := []Progress{{State: Downloading, Done: 3, Total: 10}, {State: Working}}
	if len(got) != len(want) {
		t.Fatalf("reported %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d = %v, want %v", i, got[i], want[i])
		}
	}
}
