package scheduler

import (
	"context"
	"fmt"
	"github.com/botd-dev/botd/internal/sqldialect"
	"github.com/botd-dev/botd/store/storetest"
	"testing"
	"time"
)

// One due run among 10k scheduled tasks of three groups: the due query, the
// checks (grace, previous run answered, hourly cap), the delivery (the
// fake agent stores the message) and the claim transaction.
func BenchmarkRunDue10k(b *testing.B) {
	for _, d := range storetest.Drivers {
		b.Run(string(d), func(b *testing.B) { benchmarkRunDue10k(b, d) })
	}
}

func benchmarkRunDue10k(b *testing.B, d sqldialect.Dialect) {
	r := newRig(b, d, utc("2026-05-01T10:00:00Z"), func(o *Options) { o.MaxTasksPerGroup = 5000; o.MaxRunsPerHour = 1 << 30 })
	ctx := context.Background()
	folders := []string{"family", "main", "work"}
	for i := range 10_000 {
		if _, err := r.s.Schedule(ctx, NewTask{Folder: folders[i%3], CreatedBy: folders[i%3], Prompt: fmt.Sprint("task ", i),
			Kind: KindEvery, Expr: fmt.Sprintf("%dm", 1000+i)}); err != nil {
			b.Fatal(err)
		}
	}
	due := r.schedule("family", KindEvery, "1m")
	b.ResetTimer()
	for range b.N {
		r.clock.Advance(time.Minute)
		r.runDue()
	}
	b.StopTimer()
	if n := r.task(due.ID).Runs; n != b.N {
		b.Fatalf("%d runs for %d passes", n, b.N)
	}
}

// The next run of a fixed-hour cron in Europe/Berlin (wall-clock path).
func BenchmarkCronNext(b *testing.B) {
	s, err := Parse(KindCron, "30 2 * * 1-5", berlin(b), utc("2026-03-01T00:00:00Z"))
	if err != nil {
		b.Fatal(err)
	}
	t := utc("2026-03-01T00:00:00Z")
	for range b.N {
		t = s.Next(t, t)
	}
}
