package webfetch

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// rssURLEnv, when set, makes TestPeakRSS the child: it fetches the URL into
// a file and reports its own peak RSS (VmHWM), so the figure is not
// muddied by the parent's test server and page.
const rssURLEnv = "WEBFETCH_RSS_URL"

// TestPeakRSS fetches a 10 MB brotli page (the default cap) in a child
// process and bounds the child's peak RSS: the body streams to disk, so
// memory must not grow with the page.
func TestPeakRSS(t *testing.T) {
	if raw := os.Getenv(rssURLEnv); raw != "" {
		rssChild(t, raw)
		return
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory swamps the figure; run without -race")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: VmHWM is Linux's")
	}
	big, small := br(page(10<<20)), br(page(1<<10))
	_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		if r.URL.Path == "/big" {
			w.Write(big)
			return
		}
		w.Write(small)
	})
	_, port, _ := strings.Cut(strings.TrimPrefix(base, "http://"), ":")
	baseKB, n := rssOf(t, "http://127.0.0.1:"+port+"/small")
	if n != 1<<10 {
		t.Fatalf("the small fetch got %d bytes", n)
	}
	kb, n := rssOf(t, "http://127.0.0.1:"+port+"/big")
	if n != 10<<20 {
		t.Fatalf("the big fetch got %d bytes, want 10 MB", n)
	}
	t.Logf("peak RSS: %d kB for a 10 MB brotli page, %d kB for a 1 KB one", kb, baseKB)
	// Holding the page would add at least its 10 MB; streaming adds
	// buffers (brotli's window is 4 MB at the level used here).
	if kb-baseKB > 8<<10 {
		t.Fatalf("a 10 MB page raised the peak RSS by %d kB", kb-baseKB)
	}
}

// rssOf fetches raw in a child process and returns the child's VmHWM in
// kB and the bytes it fetched.
func rssOf(t *testing.T, raw string) (kb, n int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSS$", "-test.v")
	cmd.Env = append(os.Environ(), rssURLEnv+"="+raw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if _, v, ok := strings.Cut(line, "rss: VmHWM kB "); ok {
			fields := strings.Fields(v)
			kb, _ = strconv.ParseInt(fields[0], 10, 64)
			n, _ = strconv.ParseInt(fields[1], 10, 64)
		}
	}
	if kb <= 0 {
		t.Fatalf("the child reported no VmHWM:\n%s", out)
	}
	return kb, n
}

func rssChild(t *testing.T, raw string) {
	c := DefaultConfig()
	c.AllowPrivate = []string{"127.0.0.1"}
	f, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := f.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(t.TempDir() + "/page")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := bufio.NewWriterSize(out, 32<<10)
	r, err := f.Get(context.Background(), u, Validators{}, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			t.Logf("rss: VmHWM kB %s %d", strings.Fields(v)[0], r.Bytes)
		}
	}
}
