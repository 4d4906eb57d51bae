package media_test

import (
	"context"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/botd-dev/botd/media/mediatest"
	"github.com/botd-dev/botd/tools"

	"github.com/botd-dev/botd/channels/chantest"
	"github.com/botd-dev/botd/mediaregistry"
)

// BenchmarkIPCRoundTripCached measures one fetch_media of a cached 10 KB
// image through the file protocol: request written, host wakes on
// fsnotify, answers from the cache, client wakes on fsnotify.
func BenchmarkIPCRoundTripCached(b *testing.B) {
	r := mediatest.New(b)
	img := make([]byte, 10<<10)
	copy(img, pngHeader)
	id := r.Register("telegram:-100", mediaregistry.MediaReference{FileName: "ten.png", MIME: "image/png"}, chantest.Media{Data: img})
	c := r.Client("family")
	ctx := context.Background()
	if err := c.Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, nil); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var res tools.FetchMediaResult
		if err := c.Call(ctx, tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil || !res.Cached {
			b.Fatal(err, res.Cached)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

var pngHeader = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkFetch200MBRSS streams a 200 MB download through the service
// into the cache and reports how far the resident set grew meanwhile.
func BenchmarkFetch200MBRSS(b *testing.B) {
	const size = 200 << 20
	r := mediatest.NewMax(b, size)
	for i := 0; i < b.N; i++ {
		id := r.Register("telegram:-100", mediaregistry.MediaReference{Kind: mediaregistry.Video, FileName: "big.mp4", MIME: "video/mp4"},
			chantest.Media{Reader: func() io.ReadCloser { return io.NopCloser(io.LimitReader(zeros{}, size)) }})
		base := rss()
		var peak atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if v := rss(); v > peak.Load() {
					peak.Store(v)
				}
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		var res tools.FetchMediaResult
		if err := r.Client("family").Call(context.Background(), tools.FetchMedia, tools.FetchMediaArgs{MediaRef: id}, &res); err != nil {
			b.Fatal(err)
		}
		close(stop)
		<-done
		if res.Size != size {
			b.Fatalf("size %d", res.Size)
		}
		b.ReportMetric(float64(peak.Load()-base)/(1<<20), "rss-growth-MB")
		b.SetBytes(size)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// rss reads the resident set size of this process in bytes.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
