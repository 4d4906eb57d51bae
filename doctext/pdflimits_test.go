package doctext

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// heavyPages is a PDF of n pages, each saying "page i" and then drawing
// 20 MiB of decoded white space: three fit in what one call decodes.
func heavyPages(n int) []byte {
	w := doctexttest.NewPDF(false)
	cat, tree, font := w.Reserve(), w.Reserve(), w.Reserve()
	var kids []string
	for i := range n {
		pg, text, pad := w.Reserve(), w.Reserve(), w.Reserve()
		w.Stream(text, "", fmt.Appendf(nil, "BT /F1 12 Tf (page %d) Tj ET", i+1))
		w.Stream(pad, "/Filter /FlateDecode", doctexttest.FlateRepeat(nil, []byte{' '}, 20<<20))
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents [%d 0 R %d 0 R] /Resources << /Font << /F1 %d 0 R >> >> >>",
			tree, text, pad, font))
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
	}
	w.Obj(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

// A PDF that decodes to more than one call may is read in several: each
// call shows the pages read before its budget ran out, says why it
// stopped, and offers the rest.
func TestPDFBudgetParts(t *testing.T) {
	data := heavyPages(10)
	extract := func(pages string) (Result, error) {
		return Extract(context.Background(), bytes.NewReader(data), int64(len(data)), "heavy.pdf", "application/pdf",
			Options{Pages: pages, MaxChars: 1 << 20})
	}
	cases := []struct {
		pages, shown, more string
	}{
		{"", "1-4", `pages: "5-8"`},
		{"5-", "5-8", `pages: "9-10"`},
		{"9-", "9-10", ""},
	}
	for _, tc := range cases {
		res, err := extract(tc.pages)
		if err != nil {
			t.Fatalf("pages %q: %v", tc.pages, err)
		}
		if res.Shown != tc.shown || res.More != tc.more {
			t.Errorf("pages %q: shown %q more %q, want %q and %q", tc.pages, res.Shown, res.More, tc.shown, tc.more)
		}
		if tc.more != "" && !strings.Contains(res.Text, "Reading stopped before page") {
			t.Errorf("pages %q: no word of why reading stopped:\n%s", tc.pages, res.Text[len(res.Text)-300:])
		}
		last := strings.Split(tc.shown, "-")[1]
		if !strings.Contains(res.Text, "page "+last) {
			t.Errorf("pages %q: no text of page %s", tc.pages, last)
		}
	}
}
