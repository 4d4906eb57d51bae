package pdf

import (
	"bytes"
	"context"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// TestRightToLeft: Arabic, Persian and Hebrew drawn in visual order, in
// presentation forms, come out in logical order as the letters written.
func TestRightToLeft(t *testing.T) {
	cases := []struct {
		name  string
		drawn string // the glyphs left to right, as the page shows them
		want  string
	}{
		// مرحبا بالعالم, shaped: initial, medial and final forms.
		{"Arabic presentation forms", "\uFEE2\uFEDF\uFE8E\uFECC\uFEDF\uFE8E\uFE91 \uFE8E\uFE92\uFEA3\uFEAE\uFEE3", "مرحبا بالعالم"},
		{"Arabic letters", "ملاعلاب ابحرم", "مرحبا بالعالم"},
		// لا as one lam-alef ligature.
		{"a lam-alef ligature", "\uFEFB", "لا"},
		{"Latin inside Arabic", "PDF فلم", "ملف PDF"},
		{"numbers inside Arabic", "2024 ماع", "عام 2024"},
		{"Arabic inside Latin", "the word ةملك means word", "the word كلمة means word"},
		{"Hebrew", "םלוע םולש", "שלום עולם"},
		// کتاب فارسی (Persian, with its own letters).
		{"Persian", "یسراف باتک", "کتاب فارسی"},
		{"Hebrew with points stays on its letters", "\u05DD\u05B9\u05DC\u05B8\u05E9\u05C1", "\u05E9\u05C1\u05DC\u05B8\u05DD\u05B9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := doctexttest.PDF([]doctexttest.Page{{Lines: []string{tc.drawn, "second line"}}}, doctexttest.PDFOptions{Unicode: true})
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			info, err := d.PageText(context.Background(), 1, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want + "\nsecond line"; info.Text != want {
				t.Errorf("%q, want %q", info.Text, want)
			}
		})
	}
}

// TestRightToLeftPlacedInOrder: a producer that places each glyph of an
// Arabic word right to left, in logical order, is not reversed.
func TestRightToLeftPlacedInOrder(t *testing.T) {
	font := "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 9 0 R " +
		"/DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /X /CIDSystemInfo << /Registry (Adobe) " +
		"/Ordering (Identity) /Supplement 0 >> /DW 400 >>] >>"
	// ك ت ا ب placed at x = 300, 296, 292, 288 (each glyph 4 units wide).
	content := "BT /F1 10 Tf 1 0 0 1 300 700 Tm <0001> Tj 1 0 0 1 296 700 Tm <0002> Tj 1 0 0 1 292 700 Tm <0003> Tj " +
		"1 0 0 1 288 700 Tm <0004> Tj ET"
	data := onePageFont([]byte(content), "", font, nil)
	cmap := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap 1 begincodespacerange <0000> <FFFF> endcodespacerange " +
		"4 beginbfchar <0001> <0643> <0002> <062A> <0003> <0627> <0004> <0628> endbfchar endcmap"
	data = appendObject(t, data, 9, "<< >>\nstream\n"+cmap+"\nendstream")
	if info := pageText(t, data); info.Text != "كتاب" {
		t.Errorf("%q, want كتاب", info.Text)
	}
}
