package ffmpeg_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
)

// Four stills requests at once on the playlist posing as clip.mp4: what
// refusing it costs the box children in CPU (getrusage of the waited-for
// children: botd's re-exec and ffprobe). Their peak RSS is in the box's
// log (max_rss); getrusage's would count the setup's encoder.
func BenchmarkRefusePlaylistFourAtOnce(b *testing.B) {
	ffmpegtest.NeedReal(b)
	dir := b.TempDir()
	secret := filepath.Join(dir, "secret.ts")
	ffmpegtest.Make(b, secret, "-f", "lavfi", "-i", "testsrc=s=640x360:d=10", "-f", "lavfi", "-i", "sine=f=440:d=10",
		"-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac")
	clip := filepath.Join(dir, "clip.mp4")
	ffmpegtest.WriteFile(b, clip, ffmpegtest.DisguisedHLS(secret))
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := os.Open(clip)
				if err != nil {
					b.Error(err)
					return
				}
				defer f.Close()
				if frames, _, err := ffmpeg.Keyframes(context.Background(), f, 4, lim); len(frames) > 0 || !ffmpeg.Refused(err) {
					b.Errorf("%d stills, %v; want a refusal", len(frames), err)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	cpu := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
	b.ReportMetric(float64(cpu(after)-cpu(before))/1e6/float64(b.N), "child-cpu-ms/op")
}
