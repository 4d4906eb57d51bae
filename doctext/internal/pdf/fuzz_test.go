package pdf

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/image/font/gofont/goregular"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// FuzzRead varies files that take the reader's newer paths (CID fonts
// read through Adobe's collections and predefined CMaps, vertical
// writing, right-to-left lines, tables rebuilt by scanning, RC4 and
// revision 5 encryption, Type3 fonts, fonts without ToUnicode read by
// their programs and glyph names, columns put in reading order): whatever the bytes, it answers
// text or an error, never a panic, and counts no more unreadable glyphs
// than glyphs.
func FuzzRead(f *testing.F) {
	t := &testing.T{}
	jp := cids(t, "UniJIS-UCS2-H", "日本語")
	seeds := [][]byte{
		onePageFont([]byte("BT /F1 12 Tf 72 700 Td "+jp+" Tj ET"), "", cidFont("Identity-H", "Japan1"), nil),
		onePageFont([]byte("BT /F1 12 Tf 1 0 0 1 500 700 Tm "+jp+" Tj ET"), "", cidFont("Identity-V", "Japan1"), nil),
		onePageFont([]byte("BT /F1 12 Tf 72 700 Td <93FA967B8CEA41> Tj ET"), "", cidFont("90ms-RKSJ-V", "Japan1"), nil),
		onePageFont([]byte("BT /F1 100 Tf 72 700 Td [(Transfer) -40 (high-rate)] TJ ET"), "", type3Font("[0.001 0 0 0.001 0 0]"), nil),
		doctexttest.PDF([]doctexttest.Page{{Lines: []string{"ملاعلاب ابحرم", "םלוע םולש"}}}, doctexttest.PDFOptions{Unicode: true}),
		doctexttest.PDF([]doctexttest.Page{{Lines: []string{"rc4"}}}, doctexttest.PDFOptions{Encrypt: "rc4-40"}),
		doctexttest.PDF([]doctexttest.Page{{Lines: []string{"r5"}}}, doctexttest.PDFOptions{ObjStreams: true, Encrypt: "aes256-r5-owner"}),
	}
	// Fonts without ToUnicode: a symbolic TrueType program read by its
	// cmap and post names, a CFF program's own encoding, numeric names,
	// an Identity font of a CFF program that names its glyphs.
	small := sfntTables(t, goregular.TTF)
	for _, k := range []string{"glyf", "loca", "hmtx", "GPOS", "GSUB", "kern", "fpgm", "prep", "cvt "} {
		delete(small, k)
	}
	small["cmap"] = cmapBytes(3, 0, map[uint16]uint16{0xF001: 42, 0xF002: 43})
	seeds = append(seeds,
		fontPDF("BT /F1 24 Tf 72 700 Td <0102> Tj ET", simpleFontDict("TrueType", "T", ""), flagSymbolic, &embedded{"FontFile2", "", buildSfnt(small)}),
		fontPDF("BT /F1 24 Tf 72 700 Td (ABCD) Tj ET", simpleFontDict("Type1", "T", ""), flagNonsymbolic, &embedded{"FontFile3", "/Subtype /Type1C", tinyCFF()}),
		fontPDF("BT /F1 24 Tf 72 700 Td <0001000200030004> Tj ET", identityDict("CIDFontType0", ""), flagNonsymbolic, &embedded{"FontFile3", "/Subtype /CIDFontType0C", tinyCFF()}),
		fontPDF("BT /F1 24 Tf 72 700 Td <0102030304> Tj ET", simpleFontDict("Type1", "Unknown",
			"/Encoding << /Differences [1 /G48 /G65 /G6C /G6F] >>"), flagNonsymbolic, nil))
	// Two columns drawn line by line across, a title over them, put back
	// in reading order.
	var cols bytes.Buffer
	cols.WriteString("BT /F1 14 Tf 1 0 0 1 72 740 Tm (A title over both columns of the page) Tj /F1 9 Tf\n")
	for i := range 8 {
		fmt.Fprintf(&cols, "1 0 0 1 72 %d Tm (left%d quick brown foxes jump over dogs) Tj 1 0 0 1 320 %d Tm (right%d quick brown foxes jump over dogs) Tj\n",
			700-11*i, i, 700-11*i, i)
	}
	cols.WriteString("ET")
	seeds = append(seeds, layoutPDF(cols.String(), "/Rotate 90"))
	plain := doctexttest.PDF([]doctexttest.Page{{Lines: []string{"one"}}, {Lines: []string{"two"}}}, doctexttest.PDFOptions{})
	seeds = append(seeds, plain[:bytes.LastIndex(plain, []byte("xref"))],
		bytes.Replace(plain, []byte("%PDF-1.7\n"), []byte("%PDF-1.7\n%moved\n"), 1))
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d, err := Open(ctx, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for i := 1; i <= min(d.NumPages(), 4); i++ {
			info, err := d.PageText(ctx, i, 2000)
			if err == nil && info.Unmapped > info.Glyphs {
				t.Fatalf("page %d: %d unmapped of %d glyphs", i, info.Unmapped, info.Glyphs)
			}
		}
	})
}
