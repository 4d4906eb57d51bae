package modelview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
	registry "github.com/botd-dev/botd/tools"
)

// BenchmarkFetchMediaPDF reads the text of a cached three-page PDF: the
// document path, where the parser's own work is small and what the
// benchmark shows is what running it costs.
func BenchmarkFetchMediaPDF(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "groups", "family")
	if err := os.MkdirAll(filepath.Join(dir, "media"), 0o750); err != nil {
		b.Fatal(err)
	}
	var pages []doctexttest.Page
	for p := range 3 {
		var lines []string
		for l := range 40 {
			lines = append(lines, fmt.Sprintf("Page %d, line %d: the quarterly figures and what they mean.", p+1, l+1))
		}
		pages = append(pages, doctexttest.Page{Lines: lines})
	}
	data := doctexttest.PDF(pages, doctexttest.PDFOptions{Compress: true})
	rel := "media/tg_Bench0000003_report.pdf"
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o640); err != nil {
		b.Fatal(err)
	}
	tl, err := New(Options{GroupDir: dir, Caller: instantHost{registry.FetchMediaResult{
		Ref: "tg_Bench0000003", Kind: "Document", MIME: "application/pdf", Size: int64(len(data)), Path: rel, Name: "report.pdf",
	}}, Log: testLoggerB(), InlineMaxBytes: 1024})
	if err != nil {
		b.Fatal(err)
	}
	req := registry.Args(map[string]any{"mediaRef": "tg_Bench0000003"})
	b.ReportAllocs()
	for b.Loop() {
		res, err := fetchMCP(tl, context.Background(), req)
		if err != nil || res.IsError || len(res.Content) != 1 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(len(data)), "src_bytes")
}
