package pdf

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// bookPDF is a document of n pages of 40 lines each in the given font,
// every line drawn by line(i).
func bookPDF(n int, fontDict string, line func(i int) string) []byte {
	w := doctexttest.NewPDF(false)
	cat, tree, font := w.Reserve(), w.Reserve(), w.Reserve()
	w.Obj(font, fontDict)
	var kids []string
	for p := range n {
		pg, c := w.Reserve(), w.Reserve()
		var b strings.Builder
		b.WriteString("BT /F1 10 Tf 12 TL 72 740 Td\n")
		for i := range 40 {
			fmt.Fprintf(&b, "%s Tj T*\n", line(p*40+i))
		}
		b.WriteString("ET")
		w.Stream(c, "/Filter /FlateDecode", doctexttest.Deflate([]byte(b.String())))
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>", tree, c, font))
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
	}
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

func benchRead(b *testing.B, data []byte) {
	b.Helper()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		for i := 1; i <= d.NumPages(); i++ {
			if _, err := d.PageText(context.Background(), i, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCJKWithoutToUnicode: 20 pages of Japanese in a CID font read
// through Adobe-Japan1 (the table decoded once per process).
func BenchmarkCJKWithoutToUnicode(b *testing.B) {
	line := cids(&testing.T{}, "UniJIS-UCS2-H", strings.Repeat("日本語の文章を読むための試験です。", 2))
	benchRead(b, bookPDF(20, cidFont("Identity-H", "Japan1"), func(int) string { return line }))
}

// BenchmarkRightToLeft: 20 pages of Arabic in presentation forms.
func BenchmarkRightToLeft(b *testing.B) {
	data := doctexttest.PDF(func() []doctexttest.Page {
		var ps []doctexttest.Page
		for range 20 {
			var p doctexttest.Page
			for range 40 {
				p.Lines = append(p.Lines, "\uFEE2\uFEDF\uFE8E\uFECC\uFEDF\uFE8E\uFE91 \uFE8E\uFE92\uFEA3\uFEAE\uFEE3 PDF 2024 ملاعلاب ابحرم")
			}
			ps = append(ps, p)
		}
		return ps
	}(), doctexttest.PDFOptions{Unicode: true, Compress: true})
	benchRead(b, data)
}

// BenchmarkRepair: a 300-page file whose table points before every
// object, rebuilt by the scan.
func BenchmarkRepair(b *testing.B) {
	helv := "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
	data := bookPDF(300, helv, func(i int) string { return fmt.Sprintf("(Line %d of a book whose table is wrong.)", i) })
	data = bytes.Replace(data, []byte("%PDF-1.7\n"), []byte("%PDF-1.7\n% shifted\n"), 1)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil || !d.repaired || d.NumPages() != 300 {
			b.Fatal(err)
		}
	}
}
