//go:build unix

package doctext

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// Peak RSS belongs to a process, so each measurement runs Extract once
// in a fresh child: the test binary again, running only TestExtractChild.
const (
	childFile  = "BOTD_DOCTEXT_CHILD_FILE"  // the document; "-" reads nothing (the baseline)
	childPages = "BOTD_DOCTEXT_CHILD_PAGES" // Options.Pages
	childMax   = "BOTD_DOCTEXT_CHILD_MAX"   // Options.MaxChars
)

// TestExtractChild is the child side: one Extract, then the process's
// high-water mark of resident memory.
func TestExtractChild(t *testing.T) {
	file := os.Getenv(childFile)
	if file == "" {
		t.Skip("only runs as the child of a peak-RSS measurement")
	}
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		maxChars, _ := strconv.Atoi(os.Getenv(childMax))
		res, err := Extract(context.Background(), f, st.Size(), filepath.Base(file), "application/pdf",
			Options{Pages: os.Getenv(childPages), MaxChars: maxChars})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("doctext-child shown=%s more=%q chars=%d\n", res.Shown, res.More, len([]rune(res.Text)))
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc: peak RSS is measured on Linux only")
	}
	for l := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Printf("doctext-child-hwm %s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
}

// peakRSS runs one Extract in a child and returns its peak RSS in MB (its
// own VmHWM: rusage would count the memory of the parent it was cloned
// from) and what it printed; -1 where /proc is missing.
func peakRSS(tb testing.TB, file, pages string, maxChars int) (float64, string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExtractChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childFile+"="+file, childPages+"="+pages, childMax+"="+strconv.Itoa(maxChars))
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("child: %v\n%s", err, out)
	}
	hwm, said := -1.0, ""
	for l := range strings.Lines(string(out)) {
		if s, ok := strings.CutPrefix(l, "doctext-child "); ok {
			said = strings.TrimSpace(s)
		}
		if s, ok := strings.CutPrefix(l, "doctext-child-hwm "); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
			hwm = kb / 1024
		}
	}
	return hwm, said
}

// book is a 300-page PDF as a modern producer writes it (object streams,
// compressed contents), each page about 3,000 characters.
func book(tb testing.TB) string {
	tb.Helper()
	ps := make([]doctexttest.Page, 300)
	for i := range ps {
		lines := []string{fmt.Sprintf("Chapter %d", i+1)}
		for j := range 44 {
			lines = append(lines, fmt.Sprintf("Line %d of page %d: the quick brown fox jumps over the lazy dog, twice.", j+1, i+1))
		}
		ps[i] = doctexttest.Page{Lines: lines}
	}
	p := filepath.Join(tb.TempDir(), "book.pdf")
	if err := os.WriteFile(p, doctexttest.PDF(ps, doctexttest.PDFOptions{ObjStreams: true, Compress: true}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkExtractPDF300Pages: a 300-page PDF read whole (a budget large
// enough for all of it), the first call with the default budget, and
// three pages from the middle. peak-RSS-MB is one such call in a fresh
// process; baseline-RSS-MB is the same process reading nothing.
func BenchmarkExtractPDF300Pages(b *testing.B) {
	file := book(b)
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	base, _ := peakRSS(b, "-", "", 0)
	cases := []struct {
		name  string
		pages string
		max   int
	}{
		{"whole-document", "", 1 << 30},
		{"default-budget", "", 0},
		{"pages-150-152", "150-152", 0},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var res Result
			for b.Loop() {
				res, err = Extract(context.Background(), bytes.NewReader(data), int64(len(data)), "book.pdf", "application/pdf",
					Options{Pages: tc.pages, MaxChars: tc.max})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			peak, said := peakRSS(b, file, tc.pages, tc.max)
			b.Logf("%d bytes of PDF: %s", len(data), said)
			b.ReportMetric(float64(len([]rune(res.Text))), "chars")
			b.ReportMetric(peak, "peak-RSS-MB")
			b.ReportMetric(base, "baseline-RSS-MB")
		})
	}
}
