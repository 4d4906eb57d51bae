package doctext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// unreadablePDF has four pages of Latin text; pages 2 and 3 also show
// glyphs of a CID font that says nothing of its letters (an Identity
// collection, no ToUnicode map).
func unreadablePDF() []byte {
	w := doctexttest.NewPDF(false)
	cat, tree, helv, cid := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	w.Obj(helv, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	w.Obj(cid, "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /DescendantFonts [<< /Type /Font "+
		"/Subtype /CIDFontType2 /BaseFont /X /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> >>] >>")
	var kids []string
	for i := 1; i <= 4; i++ {
		pg, c := w.Reserve(), w.Reserve()
		content := fmt.Sprintf("BT /F1 10 Tf 72 700 Td (Latin text of page %d) Tj ET", i) // 20 glyphs
		if i == 2 || i == 3 {
			content += " BT /F2 10 Tf 72 680 Td <0011001200130014001500160017> Tj ET" // 7 unknown
		}
		w.Stream(c, "", []byte(content))
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R /Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >> >>",
			tree, c, helv, cid))
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
	}
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count 4 >>", strings.Join(kids, " ")))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

// TestPDFUnreadable: characters that cannot be read are said in the
// document's header, with how many and where, never dropped silently.
func TestPDFUnreadable(t *testing.T) {
	data := unreadablePDF()
	cases := []struct{ pages, want string }{
		// 14 of 2×27 glyphs on pages 2 and 3.
		{"", `unreadable="25 % of the characters on pages 2–3 could not be read (fonts that do not say which letters they show)"`},
		{"3", `unreadable="25 % of the characters on page 3 could not be read`},
		{"4", ""},
	}
	for _, tc := range cases {
		res, err := extract(t, data, "mixed.pdf", "application/pdf", Options{Pages: tc.pages})
		if err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(res.Text, "\n")
		if tc.want == "" && strings.Contains(header, "unreadable") || !strings.Contains(header, tc.want) {
			t.Errorf("pages %q: header %s, want %s", tc.pages, header, tc.want)
		}
		if !strings.Contains(res.Text, "Latin text of page") {
			t.Errorf("the readable text is lost: %s", res.Text)
		}
	}
}

// TestPDFReadByGlyphNames: fonts without a ToUnicode map whose glyph
// names say their letters (Symbol's own encoding, Differences with
// numeric names, names nobody knows standing for their codes, as
// pdftotext reads them) are read, and the header says nothing is lost.
func TestPDFReadByGlyphNames(t *testing.T) {
	w := doctexttest.NewPDF(false)
	cat, tree, pg, c, sym, num, odd := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	w.Obj(sym, "<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>")
	w.Obj(num, "<< /Type /Font /Subtype /Type1 /BaseFont /X /Encoding << /Differences [1 /c72 /c101 /c108 /c111] >> >>")
	w.Obj(odd, "<< /Type /Font /Subtype /Type1 /BaseFont /X /Encoding << /Differences [97 /g1 /g2 /g3] >> >>")
	w.Stream(c, "", []byte("BT /F1 10 Tf 72 700 Td (abg) Tj ET BT /F2 10 Tf 72 680 Td <0102030304> Tj ET BT /F3 10 Tf 72 660 Td (cab) Tj ET"))
	w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R /Resources << /Font << /F1 %d 0 R /F2 %d 0 R /F3 %d 0 R >> >> >>",
		tree, c, sym, num, odd))
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", pg))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	res, err := extract(t, w.Finish(cat, ""), "names.pdf", "application/pdf", Options{})
	if err != nil {
		t.Fatal(err)
	}
	header, body, _ := strings.Cut(res.Text, "\n")
	if strings.Contains(header, "unreadable") {
		t.Errorf("header %s", header)
	}
	for _, want := range []string{"αβγ", "Hello", "cab"} {
		if !strings.Contains(body, want) {
			t.Errorf("%q not read: %s", want, body)
		}
	}
}
