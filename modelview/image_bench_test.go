//go:build unix

package modelview

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	registry "github.com/botd-dev/botd/tools"
)

// Peak RSS is a property of a process, so each preview runs in a fresh
// child: the test binary again, running only TestPreviewChild.
const (
	previewChildFile     = "BOTD_PREVIEW_CHILD_FILE"     // the image, in <group>/media/
	previewChildParallel = "BOTD_PREVIEW_CHILD_PARALLEL" // concurrent fetches of it
)

// previewGoalMB is issue 13's goal for one botd mcp process, whatever the
// input.
const previewGoalMB = 200

// TestPreviewChild is the child side: it fetches the file the way the
// agent's fetch_media does and prints what the model would get.
func TestPreviewChild(t *testing.T) {
	file := os.Getenv(previewChildFile)
	if file == "" {
		t.Skip("only runs as the child of a peak-RSS measurement")
	}
	parallel, _ := strconv.Atoi(os.Getenv(previewChildParallel))
	parallel = max(parallel, 1)
	group := filepath.Dir(filepath.Dir(file))
	rel := "media/" + filepath.Base(file)
	tl, err := New(Options{GroupDir: group, InlineMaxBytes: 1 << 20, Log: testLoggerB(),
		Caller: instantHost{registry.FetchMediaResult{Ref: "tg_PeakRss000001", Kind: "Image", Path: rel}}})
	if err != nil {
		t.Fatal(err)
	}
	req := registry.Args(map[string]any{"mediaRef": "tg_PeakRss000001"})
	results := make([]*mcpgo.CallToolResult, parallel)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			res, err := fetchMCP(tl, context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	for _, res := range results {
		var images int
		var text string
		for _, c := range res.Content {
			switch v := c.(type) {
			case mcpgo.ImageContent:
				images++
			case mcpgo.TextContent:
				text = v.Text
			}
		}
		fmt.Printf("preview-child images=%d text=%q\n", images, text)
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for l := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				fmt.Printf("preview-child-hwm %s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			}
		}
	}
}

// previewInChild runs parallel fetches of file in a fresh process and
// returns its peak RSS in MB and what it printed. On Linux the peak is the
// child's own VmHWM: its rusage maxrss is no use, because os/exec starts
// the child sharing the parent's memory (CLONE_VM) and exec records that
// memory's high-water mark as the child's, so the child of a test binary
// that once held 300 MB "peaks" at 300 MB.
func previewInChild(tb testing.TB, file string, parallel int) (float64, []string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPreviewChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), previewChildFile+"="+file, previewChildParallel+"="+strconv.Itoa(parallel))
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("child: %v\n%s", err, out)
	}
	var lines []string
	hwm := -1.0
	for l := range strings.Lines(string(out)) {
		if s, ok := strings.CutPrefix(l, "preview-child "); ok {
			lines = append(lines, strings.TrimSpace(s))
		}
		if s, ok := strings.CutPrefix(l, "preview-child-hwm "); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
			hwm = kb
		}
	}
	if len(lines) != parallel {
		tb.Fatalf("child printed %d results, want %d:\n%s", len(lines), parallel, out)
	}
	if hwm >= 0 {
		return hwm / 1024, lines
	}
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) // KiB on the BSDs
	if runtime.GOOS == "darwin" {
		rss /= 1024 // bytes there
	}
	return rss / 1024, lines
}

// writeGroupFile puts data where a fetch would have saved it.
func writeGroupFile(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "groups", "family", "media", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o640); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestImageBombPeakRSS: one preview of each bomb, each in its own
// process, stays under the goal and answers with the path only.
func TestImageBombPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			file := writeGroupFile(t, filepath.Base(b.rel), b.data())
			mb, lines := previewInChild(t, file, 1)
			t.Logf("peak RSS %.0f MB: %s", mb, lines[0])
			if !strings.HasPrefix(lines[0], "images=0 ") || !strings.Contains(lines[0], "too large to preview safely") {
				t.Errorf("want the path only: %s", lines[0])
			}
			if mb > previewGoalMB {
				t.Errorf("peak RSS %.0f MB, goal < %d MB", mb, previewGoalMB)
			}
		})
	}
}

// photoJPEG is a 12 MP baseline 4:2:0 JPEG, what a phone sends: a gradient
// with noise, a few MB.
func photoJPEG(tb testing.TB, w, h int) []byte {
	img := gradient(w, h)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix {
		if i%4 != 3 {
			img.Pix[i] += uint8(r.IntN(48))
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// paddedJPEG makes a small generated JPEG larger than the inline limit,
// so that it takes the preview path: decoders stop at the end-of-image
// marker and never read what follows.
func paddedJPEG(data []byte, pad int) []byte {
	return append(append([]byte(nil), data...), make([]byte, pad)...)
}

// BenchmarkPreviewPeakRSS reports the peak RSS of a process that previews
// one image (or several at once), the figure issue 13 sets a goal for.
// Run with -benchtime 1x: every iteration is a new process anyway.
func BenchmarkPreviewPeakRSS(b *testing.B) {
	kinds := []struct {
		name     string
		file     string
		data     func(testing.TB) []byte
		parallel int
	}{
		{"progressive-jpeg-8001x4998", "bomb.jpg", func(testing.TB) []byte { return progressiveJPEG(8001, 4998, false) }, 1},
		{"png16-interlaced-8001x4998", "bomb.png", func(testing.TB) []byte { return interlacedPNG16(8001, 4998) }, 1},
		{"jpeg-12mp-4000x3000", "photo.jpg", func(tb testing.TB) []byte { return photoJPEG(tb, 4000, 3000) }, 1},
		// The largest progressive photo that is still previewed, and six
		// of them at once through one process (issue 13 saw 2 GB).
		{"progressive-jpeg-4000x3000", "prog.jpg", func(testing.TB) []byte { return paddedJPEG(progressiveJPEG(4000, 3000, true), 2<<20) }, 1},
		{"progressive-jpeg-4000x3000-6-parallel", "prog.jpg", func(testing.TB) []byte { return paddedJPEG(progressiveJPEG(4000, 3000, true), 2<<20) }, 6},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			file := writeGroupFile(b, k.file, k.data(b))
			var peak float64
			var last []string
			for b.Loop() {
				mb, lines := previewInChild(b, file, k.parallel)
				peak, last = max(peak, mb), lines
			}
			b.Logf("%s", last[0])
			b.ReportMetric(peak, "peak-RSS-MB")
		})
	}
}
