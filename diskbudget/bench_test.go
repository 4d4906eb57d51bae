package diskbudget_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/botd-dev/botd/diskbudget"
)

// fill writes n files of size bytes into a flat cache-like folder, each
// used a second apart, starting at from.
func fill(b *testing.B, dir string, prefix string, n, size int, from time.Time) {
	b.Helper()
	data := make([]byte, size)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("%s%064d", prefix, i))
		if err := os.WriteFile(p, data, 0o640); err != nil {
			b.Fatal(err)
		}
		used := from.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, used, used); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweep100k is the budget's periodic pass over 100k cached files:
// under budget it only measures; over, it evicts the 1000 least recently
// used (recreated before each iteration, outside the timer).
func BenchmarkSweep100k(b *testing.B) {
	const n, size = 100_000, 100
	dir := b.TempDir()
	fill(b, dir, "k", n, size, t0)
	area := diskbudget.Area{Name: "cache", Open: func() (*os.Root, error) { return os.OpenRoot(dir) }, Dir: "."}

	b.Run("under-budget", func(b *testing.B) {
		bud := diskbudget.New(n*size, []diskbudget.Area{area}, nil)
		b.ReportAllocs()
		for b.Loop() {
			res, err := bud.Sweep(context.Background())
			if err != nil || res.Files != 0 || res.Left != n*size {
				b.Fatalf("sweep = %+v, %v", res, err)
			}
		}
	})
	b.Run("evict-1000", func(b *testing.B) {
		// 1000 old files of 2000 bytes take the total over a budget whose
		// low water (90%) is exactly the 100k: each sweep evicts them all.
		bud := diskbudget.New(11_111_112, []diskbudget.Area{area}, nil)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			fill(b, dir, "old", 1000, 2000, t0.Add(-time.Hour))
			b.StartTimer()
			res, err := bud.Sweep(context.Background())
			if err != nil || res.Files != 1000 {
				b.Fatalf("sweep = %+v, %v; want the 1000 old files evicted", res, err)
			}
		}
	})
}
