package pdf

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// cidFont is a Type0 font of the given encoding and character collection
// with no ToUnicode map, as TeX, iText and older Office write them.
func cidFont(encoding, ordering string) string {
	return fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Ryumin-Light /Encoding /%s /DescendantFonts [<< /Type /Font "+
		"/Subtype /CIDFontType0 /BaseFont /Ryumin-Light /CIDSystemInfo << /Registry (Adobe) /Ordering (%s) /Supplement 2 >> "+
		"/DW 1000 /W [1 [500 500]] >>] >>", encoding, ordering)
}

// cids writes s as 2-byte CIDs of a collection, found through the
// collection's Unicode encoding CMap (the reader maps back through the
// CID to Unicode table, a different one).
func cids(t *testing.T, uniCMap, s string) string {
	t.Helper()
	tb := predefinedCMap(uniCMap)
	var b strings.Builder
	for _, r := range s {
		cid, ok := tb.lookup(uint32(r), 2)
		if !ok {
			t.Fatalf("%q not in %s", r, uniCMap)
		}
		fmt.Fprintf(&b, "%04X", cid)
	}
	return "<" + b.String() + ">"
}

func hexOf(b []byte) string { return fmt.Sprintf("<%X>", b) }

func pageText(t *testing.T, data []byte) PageInfo {
	t.Helper()
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.PageText(context.Background(), 1, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestCJKWithoutToUnicode: CID fonts with no ToUnicode map read through
// Adobe's character collections, whatever predefined CMap encodes them,
// vertical writing read top to bottom, column after column.
func TestCJKWithoutToUnicode(t *testing.T) {
	sjis, _ := japanese.ShiftJIS.NewEncoder().Bytes([]byte("日本語のテキスト"))
	gbk, _ := simplifiedchinese.GBK.NewEncoder().Bytes([]byte("中文文本"))
	cases := []struct {
		name, font, content, want string
		unmapped                  int
	}{
		{"Adobe-Japan1, Identity-H", cidFont("Identity-H", "Japan1"),
			"BT /F1 12 Tf 72 700 Td " + cids(t, "UniJIS-UCS2-H", "日本語のテキスト") + " Tj 0 -14 Td " +
				cids(t, "UniJIS-UCS2-H", "二行目") + " Tj ET", "日本語のテキスト\n二行目", 0},
		{"Adobe-GB1, Identity-H", cidFont("Identity-H", "GB1"),
			"BT /F1 12 Tf 72 700 Td " + cids(t, "UniGB-UCS2-H", "中文文本，简体字。") + " Tj ET", "中文文本，简体字。", 0},
		{"Adobe-Japan1, 90ms-RKSJ-H (one and two bytes)", cidFont("90ms-RKSJ-H", "Japan1"),
			"BT /F1 12 Tf 72 700 Td " + hexOf(append([]byte("PDF "), sjis...)) + " Tj ET", "PDF 日本語のテキスト", 0},
		{"Adobe-GB1, GBK-EUC-H", cidFont("GBK-EUC-H", "GB1"),
			"BT /F1 12 Tf 72 700 Td " + hexOf(gbk) + " Tj ET", "中文文本", 0},
		{"the collection named by the CMap alone", strings.Replace(cidFont("GBK-EUC-H", "GB1"), "(Adobe)", "(Nobody)", 1),
			"BT /F1 12 Tf 72 700 Td " + hexOf(gbk) + " Tj ET", "中文文本", 0},
		{"UniJIS-UCS2-H: the codes are the text", cidFont("UniJIS-UCS2-H", "Japan1"),
			"BT /F1 12 Tf 72 700 Td <65E5672C> Tj ET", "日本", 0},
		{"UniJIS-UTF16-H: surrogate pairs too", cidFont("UniJIS-UTF16-H", "Japan1"),
			"BT /F1 12 Tf 72 700 Td <65E5D842DFB7> Tj ET", "日𠮷", 0},
		// Two columns, right to left, a glyph at a time as many producers
		// place them; the second column also with TJ.
		{"vertical, Identity-V", cidFont("Identity-V", "Japan1"),
			"BT /F1 12 Tf 1 0 0 1 500 700 Tm " + cids(t, "UniJIS-UCS2-V", "縦書") + " Tj 1 0 0 1 500 676 Tm " +
				cids(t, "UniJIS-UCS2-V", "き") + " Tj 1 0 0 1 484 700 Tm [" + cids(t, "UniJIS-UCS2-V", "二") + " -10 " +
				cids(t, "UniJIS-UCS2-V", "列目") + "] TJ ET", "縦書き\n二列目", 0},
		{"vertical, 90ms-RKSJ-V", cidFont("90ms-RKSJ-V", "Japan1"),
			"BT /F1 12 Tf 1 0 0 1 500 700 Tm " + hexOf(sjis[:6]) + " Tj 1 0 0 1 484 700 Tm " + hexOf(sjis[6:]) + " Tj ET",
			"日本語\nのテキスト", 0},
		{"an Identity collection cannot be read, and says so", cidFont("Identity-H", "Identity"),
			"BT /F1 12 Tf 72 700 Td <00410042> Tj ET", "", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := pageText(t, onePageFont([]byte(tc.content), "", tc.font, nil))
			if info.Text != tc.want || info.Unmapped != tc.unmapped {
				t.Errorf("%q (%d unmapped), want %q (%d)", info.Text, info.Unmapped, tc.want, tc.unmapped)
			}
		})
	}
}

// TestEmbeddedEncodingCMap: an embedded encoding CMap that builds on a
// predefined one and maps some codes itself.
func TestEmbeddedEncodingCMap(t *testing.T) {
	cmap := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Test def /WMode 0 def " +
		"/UniJIS-UCS2-H usecmap 1 begincodespacerange <00> <FF> endcodespacerange " +
		"1 begincidrange <41> <42> 843 endcidrange 1 begincidchar <43> 3284 endcidchar endcmap"
	data := onePageFont([]byte("BT /F1 12 Tf 72 700 Td (ABC) Tj ET"), "", strings.Replace(cidFont("X", "Japan1"), "/Encoding /X",
		"/Encoding 9 0 R", 1), nil)
	// The font's Encoding is object 9, appended as an update.
	data = appendObject(t, data, 9, "<< /Type /CMap >>\nstream\n"+cmap+"\nendstream")
	info := pageText(t, data)
	if info.Text != "あぃ日" {
		t.Errorf("%q", info.Text)
	}
}

// appendObject adds object num to the file as an incremental update.
func appendObject(t *testing.T, data []byte, num int, body string) []byte {
	t.Helper()
	i := bytes.LastIndex(data, []byte("startxref"))
	prev, _ := strconv.Atoi(strings.Fields(string(data[i+len("startxref"):]))[0])
	tr := bytes.LastIndex(data, []byte("trailer"))
	j := bytes.Index(data[tr:], []byte("/Root"))
	root, _ := strconv.Atoi(strings.Fields(string(data[tr+j+len("/Root"):]))[0])
	var b bytes.Buffer
	b.Write(data)
	off := b.Len()
	fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", num, body)
	x := b.Len()
	fmt.Fprintf(&b, "xref\n%d 1\n%010d 00000 n \ntrailer\n<< /Size %d /Root %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n",
		num, off, num+1, root, prev, x)
	return b.Bytes()
}

// TestEmbeddedCMapBounded: an embedded encoding CMap of 300,000 ranges
// keeps at most maxFontEntries of them, and the page still reads.
func TestEmbeddedCMapBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("/CIDInit /ProcSet findresource begin begincmap 1 begincodespacerange <0000> <FFFF> endcodespacerange\n")
	for i := range 3000 {
		b.WriteString("100 begincidrange\n")
		for j := range 100 {
			c := (i*100 + j) % 0xFFFF
			fmt.Fprintf(&b, "<%04X> <%04X> %d\n", c, c, 843)
		}
		b.WriteString("endcidrange\n")
	}
	b.WriteString("endcmap")
	font := strings.Replace(cidFont("X", "Japan1"), "/Encoding /X", "/Encoding 9 0 R", 1)
	data := onePageFont([]byte("BT /F1 12 Tf 72 700 Td <00410042> Tj ET"), "", font, nil)
	data = appendObject(t, data, 9, fmt.Sprintf("<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream",
		len(doctexttest.Deflate([]byte(b.String()))), doctexttest.Deflate([]byte(b.String()))))
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.PageText(context.Background(), 1, 100)
	if err != nil || info.Text != "ああ" {
		t.Errorf("%q %v", info.Text, err)
	}
	for _, f := range d.fonts {
		if len(f.cids) > maxFontEntries {
			t.Errorf("%d ranges kept", len(f.cids))
		}
	}
}
