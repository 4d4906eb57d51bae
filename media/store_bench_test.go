package media_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/mediaregistry/s3store/s3test"
)

// BenchmarkFetchFromStore measures a fetch of bytes botd already holds,
// through each backend: with the local store the group's copy is made
// from the cache folder; with the S3 store the local copies are gone (a
// restart on a fresh disk, or an evicted copy) and the bytes come back
// from the bucket, verified, before the group's copy is made. Reported:
// the latency percentiles, the bytes allocated per fetch (B/op), and how
// far the peak resident set rose above the resident set before the loop.
func BenchmarkFetchFromStore(b *testing.B) {
	for _, backend := range []string{"local", "s3"} {
		for _, sz := range []struct {
			name, file, mime string
			size             int64
		}{
			{"10KB-image", "photo.png", "image/png", 10 << 10},
			{"50MB-file", "talk.mp4", "video/mp4", 50 << 20},
		} {
			b.Run(backend+"/"+sz.name, func(b *testing.B) {
				e := newS3Env(b)
				var bucket mediaregistry.ObjectStore
				if backend == "s3" {
					bucket = s3test.Start(b).NewStore(b, "bench")
				}
				e.open(bucket, nil)
				ref := mediaregistry.MediaReference{Chat: "telegram:-100", Kind: mediaregistry.Document, FileName: sz.file, MIME: sz.mime,
					Size: sz.size, Private: []byte("bench-" + sz.name)}
				if err := e.reg.Register(context.Background(), &ref); err != nil {
					b.Fatal(err)
				}
				e.tg.Serve(string(ref.Private), chantest.Media{Reader: func() io.ReadCloser {
					return io.NopCloser(io.LimitReader(pattern{}, sz.size))
				}})
				ctx := context.Background()
				if _, herr := e.svc.Fetch(ctx, e.family, ref.ID); herr != nil {
					b.Fatal(herr)
				}
				if backend == "s3" {
					e.waitUploaded()
				}
				lat := make([]time.Duration, 0, b.N)
				base := rssField("VmRSS:")
				resetPeakRSS()
				b.ReportAllocs()
				b.SetBytes(sz.size)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					os.RemoveAll(filepath.Join(e.groupsDir, "family", "media"))
					if backend == "s3" {
						e.freshDisk()
					}
					b.StartTimer()
					start := time.Now()
					res, herr := e.svc.Fetch(ctx, e.family, ref.ID)
					if herr != nil || !res.Cached || res.Size != sz.size {
						b.Fatal(herr, res)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				if e.tg.Downloads() != 1 {
					b.Fatalf("the channel was asked %d times", e.tg.Downloads())
				}
				reportPercentiles(b, lat)
				if peak := rssField("VmHWM:"); peak > 0 && base > 0 {
					b.ReportMetric(float64(max(peak-base, 0))/(1<<20), "peak-rss-growth-MB")
				}
			})
		}
	}
}

// pattern is an endless stream of non-zero bytes (zeros could be stored
// sparsely by a filesystem).
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return len(p), nil
}

// resetPeakRSS resets VmHWM to the current resident set (Linux: writing 5
// to clear_refs), so the peak read afterwards is this benchmark's.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// rssField reads a size field of /proc/self/status in bytes.
func rssField(name string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name) {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
