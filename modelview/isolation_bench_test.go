package modelview

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// BenchmarkParseInProcess runs the parsers' own jobs in this process,
// without the box: set beside BenchmarkFetchMediaPDF and
// BenchmarkFetchMediaPreview3000x2000 (the same files through fetch_media
// and a child), it is what the isolation costs.
func BenchmarkParseInProcess(b *testing.B) {
	dir := b.TempDir()
	b.Run("pdf", func(b *testing.B) {
		var pages []doctexttest.Page
		for p := range 3 {
			var lines []string
			for l := range 40 {
				lines = append(lines, fmt.Sprintf("Page %d, line %d: the quarterly figures and what they mean.", p+1, l+1))
			}
			pages = append(pages, doctexttest.Page{Lines: lines})
		}
		data := doctexttest.PDF(pages, doctexttest.PDFOptions{Compress: true})
		f := benchFile(b, filepath.Join(dir, "report.pdf"), data)
		arg, _ := json.Marshal(docTextArgs{Name: "report.pdf", MIME: "application/pdf", Size: int64(len(data))})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Seek(0, 0); err != nil {
				b.Fatal(err)
			}
			if _, err := docTextJob(context.Background(), f, arg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("preview3000x2000", func(b *testing.B) {
		data := largeJPEG(b)
		f := benchFile(b, filepath.Join(dir, "big.jpg"), data)
		src := &imageSource{f: f, size: int64(len(data))}
		cfg, format, err := src.config()
		if err != nil {
			b.Fatal(err)
		}
		arg, _ := json.Marshal(previewArgs{Size: int64(len(data)), Budget: 1 << 20, Orientation: 1,
			Format: format, Width: cfg.Width, Height: cfg.Height})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := previewJob(context.Background(), f, arg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchFile(b *testing.B, path string, data []byte) *os.File {
	b.Helper()
	if err := os.WriteFile(path, data, 0o640); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}
