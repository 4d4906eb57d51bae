package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// TestLimits: each file the red team built (and smaller ones aimed at a
// single bound) is answered with ErrTooLarge and a sentence saying which
// bound, having decoded no more than the document's budget.
func TestLimits(t *testing.T) {
	predictorPage := func(filters int, columns int64) []byte {
		var fs, ps []string
		for range filters {
			fs = append(fs, "/FlateDecode")
			ps = append(ps, fmt.Sprintf("<< /Predictor 12 /Columns %d >>", columns))
		}
		data := doctexttest.FlateRepeat(nil, []byte{0}, 1<<20)
		for range filters - 1 {
			data = doctexttest.Deflate(data)
		}
		return onePage(data, fmt.Sprintf("/Filter [%s] /DecodeParms [%s]", strings.Join(fs, " "), strings.Join(ps, " ")), nil)
	}
	// manyValues is a page tree whose kids are also objects of 250,000
	// values each, in an object stream.
	manyValues := func() []byte {
		w := doctexttest.NewPDF(true)
		cat, tree, pg := w.Reserve(), w.Reserve(), w.Reserve()
		kids := []string{fmt.Sprintf("%d 0 R", pg)}
		for range 9 {
			n := w.Reserve()
			w.Obj(n, "["+strings.Repeat("0 ", 250_000)+"]")
			kids = append(kids, fmt.Sprintf("%d 0 R", n))
		}
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R >>", tree))
		w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count 1 >>", strings.Join(kids, " ")))
		w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
		return w.Finish(cat, "")
	}
	// endless is a page of 2000 content streams whose /Length is wrong
	// and that have no end: finding where each ends scans the rest of
	// the file.
	endless := func() []byte {
		w := doctexttest.NewPDF(false)
		cat, tree, pg := w.Reserve(), w.Reserve(), w.Reserve()
		var parts []string
		for range 2000 {
			n := w.Reserve()
			w.Obj(n, "<< /Length 99999999 >>\nstream\nBT ET")
			parts = append(parts, fmt.Sprintf("%d 0 R", n))
		}
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents [%s] >>", tree, strings.Join(parts, " ")))
		w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", pg))
		w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
		w.Raw("%" + strings.Repeat("x", 64<<10) + "\n")
		return w.Finish(cat, "")
	}
	cases := []struct {
		name string
		data func() []byte
		page bool   // the error comes from the page, not from Open
		msg  string // in the error
	}{
		{"eight filters with 64 MiB rows (FlateBombPDF)", doctexttest.FlateBombPDF, false, "through 8 filters; botd decodes at most 4"},
		{"four filters with 64 MiB rows", func() []byte { return predictorPage(4, 64<<20) }, true, "rows of 64 MB"},
		{"a 4 Mi-entry xref stream (HugeXrefPDF)", doctexttest.HugeXrefPDF, false, "claims 4194304 objects"},
		{"nine 64 MiB object streams (ObjStreamThrashPDF)", func() []byte { return doctexttest.ObjStreamThrashPDF(2000) }, false,
			"a stream of more than 8 MB"},
		{"nine 6 MiB object streams, past the cache", func() []byte { return doctexttest.ObjStreamPDF(2000, 9, 6<<20) }, false,
			"decodes to more than 64 MB"},
		{"objects of 2.25 million values", manyValues, false, "hold more than 2 million values"},
		{"2000 streams without an end", endless, true, "decodes to more than 64 MB"},
		{"a 9 MiB object stream", func() []byte { return doctexttest.ObjStreamPDF(10, 1, 9<<20) }, false,
			"a stream of more than 8 MB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if tc.page {
				if err != nil {
					t.Fatal(err)
				}
				_, err = d.PageText(context.Background(), 1, 1000)
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want ErrTooLarge saying %q", err, tc.msg)
			}
			if d != nil && d.decoded > MaxDecoded+1<<20 {
				t.Errorf("decoded %d MiB", d.decoded>>20)
			}
		})
	}
}

// Object streams the cache holds are decoded once however the pages are
// dealt over them: a real file with many small object streams is read
// to its last page.
func TestObjStreamsSpread(t *testing.T) {
	data := doctexttest.ObjStreamPDF(2000, 9, 512<<10)
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 1000, 2000} {
		info, err := d.PageText(context.Background(), n, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("Page %d", n); info.Text != want {
			t.Errorf("page %d: %q, want %q", n, info.Text, want)
		}
	}
	if d.decoded > 8<<20 {
		t.Errorf("decoded %d MiB for nine 512 KiB streams: the cache did not hold them", d.decoded>>20)
	}
}

// cancelAfter is a file that ends ctx once it has been read from n times:
// the context ends in the middle of Open, wherever that is.
type cancelAfter struct {
	r      io.ReaderAt
	n      atomic.Int32
	cancel context.CancelFunc
}

func (c *cancelAfter) ReadAt(p []byte, off int64) (int, error) {
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return c.r.ReadAt(p, off)
}

// Open stops at the context's end while it walks the cross-reference
// sections, object streams and page tree.
func TestOpenContext(t *testing.T) {
	ps := make([]doctexttest.Page, 300)
	for i := range ps {
		ps[i] = doctexttest.Page{Lines: []string{fmt.Sprint("page ", i+1)}}
	}
	data := doctexttest.PDF(ps, doctexttest.PDFOptions{ObjStreams: true, Compress: true})
	for _, reads := range []int32{1, 2, 4, 8} {
		t.Run(fmt.Sprint(reads, " reads"), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := &cancelAfter{r: bytes.NewReader(data), cancel: cancel}
			f.n.Store(reads)
			_, err := Open(ctx, f, int64(len(data)))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Open: %v, want context.Canceled", err)
			}
		})
	}
	// The same file opens when nothing ends the context: the reads above
	// happen before Open is done.
	if _, err := Open(context.Background(), bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

// The budget is the document's, not a page's: pages that each decode
// 20 MiB are read until the budget is spent, and the pages after that say
// so instead of looking empty.
func TestBudgetAcrossPages(t *testing.T) {
	w := doctexttest.NewPDF(false)
	cat, tree, font := w.Reserve(), w.Reserve(), w.Reserve()
	var kids []string
	for i := range 5 {
		pg, text, pad := w.Reserve(), w.Reserve(), w.Reserve()
		w.Stream(text, "", fmt.Appendf(nil, "BT /F1 12 Tf (p%d) Tj ET", i+1))
		w.Stream(pad, "/Filter /FlateDecode", doctexttest.FlateRepeat(nil, []byte{' '}, 20<<20))
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents [%d 0 R %d 0 R] /Resources << /Font << /F1 %d 0 R >> >> >>",
			tree, text, pad, font))
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
	}
	w.Obj(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count 5 >>", strings.Join(kids, " ")))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	data := w.Finish(cat, "")
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for n := 1; n <= 5; n++ {
		info, err := d.PageText(context.Background(), n, 100)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("page %d: %v", n, err)
			}
			got = append(got, "too large")
			continue
		}
		got = append(got, info.Text)
	}
	// 3 × 20 MiB fit in 64 MiB; page 4's text comes before its padding.
	if want := "p1|p2|p3|p4|too large"; strings.Join(got, "|") != want {
		t.Errorf("pages %q, want %q", strings.Join(got, "|"), want)
	}
}
