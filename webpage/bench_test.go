package webpage_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/webpage"
)

// BenchmarkRead1MB reads a real 1 MB page (Wikipedia's New Zealand).
func BenchmarkRead1MB(b *testing.B) {
	page, err := os.ReadFile(filepath.Join("testdata", "pages", "wikipedia-2", "source.html"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := webpage.Read(bytes.NewReader(page), webpage.Options{ContentType: "text/html"}); err != nil {
			b.Fatal(err)
		}
	}
}

// bigPage writes a page of about size bytes to path: Wikipedia's New
// Zealand article's body repeated, so the tree is as dense as a real
// page's and the extractor has real work.
func bigPage(t *testing.T, path string, size int) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "pages", "wikipedia-2", "source.html"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start, end := strings.Index(s, `<div id="mw-content-text"`), strings.Index(s, `<div id="catlinks"`)
	if start < 0 || end < start {
		t.Fatal("the saved page's content is not where it was")
	}
	head, body, tail := s[:start], s[start:end], s[end:]
	var b strings.Builder
	b.WriteString(head)
	for b.Len()+len(body)+len(tail) < size {
		b.WriteString(body)
	}
	b.WriteString(tail)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

const rssChildEnv = "WEBPAGE_RSS_CHILD"

// TestPeakRSS10MB reads a 10 MB page in a child process (the test binary
// again), as botd does in its box, and reports the child's peak resident
// memory, the figure the box's memory budget is set from.
func TestPeakRSS10MB(t *testing.T) {
	if path := os.Getenv(rssChildEnv); path != "" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		a, err := webpage.Read(f, webpage.Options{ContentType: "text/html", MaxInput: 10 << 20})
		if err != nil {
			t.Fatal(err)
		}
		// VmHWM, not the parent's rusage: ru_maxrss survives exec and
		// so counts what the parent had resident when it forked.
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				fmt.Printf("TEXT %d HWM %s\n", len(a.Text), strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("reads a 10 MB page in a child")
	}
	page := filepath.Join(t.TempDir(), "page.html")
	bigPage(t, page, 10<<20-64<<10)
	peak := func(pagePath string) int64 {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSS10MB$", "-test.count=1")
		cmd.Env = append(os.Environ(), rssChildEnv+"="+pagePath)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		var text, hwm int64
		i := strings.Index(string(out), "TEXT ")
		if i < 0 {
			t.Fatalf("the child did not read the page:\n%s", out)
		}
		if _, err := fmt.Sscanf(string(out[i:]), "TEXT %d HWM %d", &text, &hwm); err != nil || text == 0 {
			t.Fatalf("the child's answer %q: %v", out[i:], err)
		}
		return hwm << 10
	}
	small := filepath.Join(t.TempDir(), "small.html")
	if err := os.WriteFile(small, []byte(newsPage), 0o600); err != nil {
		t.Fatal(err)
	}
	base, big := peak(small), peak(page)
	st, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS reading a %.1f MB page: %d MB (a small page: %d MB)", float64(st.Size())/(1<<20), big>>20, base>>20)
	// A guard against a blow-up, not a tight budget: the box sets that
	// from the figure logged above.
	if big > 1<<30 {
		t.Errorf("peak RSS %d MB reading a 10 MB page", big>>20)
	}
	if big <= base {
		t.Errorf("the 10 MB page's peak (%d MB) is not above a small page's (%d MB): the child did not read it", big>>20, base>>20)
	}
}
