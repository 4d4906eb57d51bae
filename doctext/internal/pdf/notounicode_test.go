package pdf

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/font/gofont/goregular"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// Fonts without a ToUnicode map, built from real font programs: the URW
// fonts Ghostscript brings (Type1 and CFF) and the Go font (TrueType),
// reshaped as the files in the wild have them (no ToUnicode, a symbolic
// cmap, a CFF's own encoding, glyphs known only by their names). Each is
// read, and where pdftotext reads it, compared with what pdftotext reads.

// systemFont is a font file Debian installs, or the test is skipped.
func systemFont(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%s is not installed (fonts-urw-base35, which ghostscript brings): %v", filepath.Base(path), err)
	}
	return b
}

// pfbToPDF turns a PFB file into a FontFile stream's bytes: clear text,
// binary part, trailer, with their lengths.
func pfbToPDF(t *testing.T, pfb []byte) ([]byte, [3]int) {
	t.Helper()
	var out []byte
	var lens [3]int
	part := 0
	for len(pfb) >= 2 && pfb[0] == 0x80 && pfb[1] != 3 {
		typ := pfb[1]
		n := int(binary.LittleEndian.Uint32(pfb[2:6]))
		out = append(out, pfb[6:6+n]...)
		if typ == 2 {
			part = 1
		} else if part == 1 {
			part = 2
		}
		lens[part] += n
		pfb = pfb[6+n:]
	}
	if lens[0] == 0 || lens[1] == 0 {
		t.Fatal("not a PFB file")
	}
	return out, lens
}

// sfntTables are the tables of a TrueType or OpenType file by tag.
func sfntTables(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	f, err := parseSfnt(data)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for k, v := range f.tables {
		m[k] = bytes.Clone(v)
	}
	return m
}

// buildSfnt writes a TrueType file of the given tables.
func buildSfnt(tables map[string][]byte) []byte {
	tags := make([]string, 0, len(tables))
	for k := range tables {
		tags = append(tags, k)
	}
	sort.Strings(tags)
	var head, body bytes.Buffer
	binary.Write(&head, binary.BigEndian, []uint16{1, 0, uint16(len(tags)), 0, 0, 0})
	off := 12 + 16*len(tags)
	for _, tag := range tags {
		b := tables[tag]
		head.WriteString(tag)
		binary.Write(&head, binary.BigEndian, []uint32{0, uint32(off + body.Len()), uint32(len(b))})
		body.Write(b)
		for body.Len()%4 != 0 {
			body.WriteByte(0)
		}
	}
	return append(head.Bytes(), body.Bytes()...)
}

// cmapBytes is a cmap table of one format 4 subtable (platform, encoding)
// mapping each code to its glyph.
func cmapBytes(pid, eid uint16, codes map[uint16]uint16) []byte {
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, int(c))
	}
	sort.Ints(keys)
	keys = append(keys, 0xFFFF)
	n := len(keys)
	var ends, starts, deltas, offs []uint16
	for _, c := range keys {
		ends, starts = append(ends, uint16(c)), append(starts, uint16(c))
		d := uint16(1)
		if c != 0xFFFF {
			d = codes[uint16(c)] - uint16(c)
		}
		deltas, offs = append(deltas, d), append(offs, 0)
	}
	var sub bytes.Buffer
	binary.Write(&sub, binary.BigEndian, []uint16{4, uint16(16 + 8*n), 0, uint16(2 * n), 0, 0, 0})
	binary.Write(&sub, binary.BigEndian, ends)
	binary.Write(&sub, binary.BigEndian, uint16(0))
	binary.Write(&sub, binary.BigEndian, starts)
	binary.Write(&sub, binary.BigEndian, deltas)
	binary.Write(&sub, binary.BigEndian, offs)
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, []uint16{0, 1, pid, eid})
	binary.Write(&b, binary.BigEndian, uint32(12))
	b.Write(sub.Bytes())
	return b.Bytes()
}

// postTable is a post table of format 2 naming n glyphs.
func postTable(n int, name func(gid int) string) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(0x00020000))
	b.Write(make([]byte, 28))
	binary.Write(&b, binary.BigEndian, uint16(n))
	for gid := range n {
		binary.Write(&b, binary.BigEndian, uint16(258+gid))
	}
	for gid := range n {
		s := name(gid)
		b.WriteByte(byte(len(s)))
		b.WriteString(s)
	}
	return b.Bytes()
}

// goGlyphs are the glyphs of the Go font that draw text.
func goGlyphs(t *testing.T, text string) []uint16 {
	t.Helper()
	f, err := parseSfnt(goregular.TTF)
	if err != nil {
		t.Fatal(err)
	}
	c := f.unicodeCmap()
	var gids []uint16
	for _, r := range text {
		g := c.glyph(uint32(r))
		if g == 0 {
			t.Fatalf("%q: no glyph", r)
		}
		gids = append(gids, uint16(g))
	}
	return gids
}

// embedded is a font program for a font descriptor.
type embedded struct {
	key  string // FontFile, FontFile2 or FontFile3
	dict string // more of its stream dictionary
	data []byte
}

// fontPDF is one page showing content in font F1, whose dictionary
// font(desc) gives; desc is the number of its font descriptor, which
// embeds e (if any).
func fontPDF(content string, font func(desc int) string, flags int, e *embedded) []byte {
	w := doctexttest.NewPDF(false)
	cat, tree, pg, c, f, desc, file := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	w.Obj(f, font(desc))
	fd := fmt.Sprintf("<< /Type /FontDescriptor /FontName /Test /Flags %d /FontBBox [0 -200 1000 900] /ItalicAngle 0 "+
		"/Ascent 800 /Descent -200 /CapHeight 700 /StemV 80", flags)
	if e != nil {
		fd += fmt.Sprintf(" /%s %d 0 R", e.key, file)
		w.Stream(file, "/Filter /FlateDecode "+e.dict, doctexttest.Deflate(e.data))
	} else {
		w.Obj(file, "null")
	}
	w.Obj(desc, fd+" >>")
	w.Stream(c, "", []byte(content))
	w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>", tree, c, f))
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", pg))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

// pdftotextOf is what pdftotext reads of data ("" and false if it is not
// installed).
func pdftotextOf(t *testing.T, data []byte) (string, bool) {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		return "", false
	}
	p := filepath.Join(t.TempDir(), "f.pdf")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "pdftotext", "-enc", "UTF-8", p, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return strings.TrimSpace(string(out)), true
}

const (
	flagSymbolic    = 4
	flagNonsymbolic = 32
)

func simpleFontDict(sub, base, more string) func(int) string {
	return func(desc int) string {
		return fmt.Sprintf("<< /Type /Font /Subtype /%s /BaseFont /%s /FirstChar 0 /LastChar 255 /Widths [%s] /FontDescriptor %d 0 R %s >>",
			sub, base, strings.Repeat("600 ", 256), desc, more)
	}
}

func identityDict(sub string, more string) func(int) string {
	return func(desc int) string {
		return fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Test /Encoding /Identity-H /DescendantFonts [<< /Type /Font "+
			"/Subtype /%s /BaseFont /Test /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> "+
			"/FontDescriptor %d 0 R /DW 600 %s >>] >>", sub, desc, more)
	}
}

func hexCodes(gids []uint16, width int) string {
	var b strings.Builder
	b.WriteString("<")
	for _, g := range gids {
		fmt.Fprintf(&b, "%0*X", width, g)
	}
	b.WriteString(">")
	return b.String()
}

func TestFontsWithoutToUnicode(t *testing.T) {
	urw := "/usr/share/fonts/"
	cases := []struct {
		name string
		pdf  func(t *testing.T) []byte
		want string
		// pdftotext: pdftotext reads this file too (and botd must find
		// its words); false where it reads the codes as they are.
		pdftotext bool
	}{
		{"a Type1 program's own encoding (Symbol's Greek)", func(t *testing.T) []byte {
			prog, l := pfbToPDF(t, systemFont(t, urw+"X11/Type1/StandardSymbolsPS.pfb"))
			return fontPDF("BT /F1 24 Tf 72 700 Td (abgdp) Tj ET", simpleFontDict("Type1", "ABCDEF+StandardSymbolsPS", ""), flagSymbolic,
				&embedded{"FontFile", fmt.Sprintf("/Length1 %d /Length2 %d /Length3 %d", l[0], l[1], l[2]), prog})
		}, "αβγδπ", true},
		{"a CFF program's own encoding", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td (bcd) Tj ET", simpleFontDict("Type1", "ABCDEF+StandardSymbolsPS", ""), flagSymbolic,
				&embedded{"FontFile3", "/Subtype /Type1C", symbolCFF(t)})
		}, "ΑΒΧ", true},
		{"a CFF program named StandardEncoding", func(t *testing.T) []byte {
			cff := sfntTables(t, systemFont(t, urw+"opentype/urw-base35/NimbusSans-Regular.otf"))["CFF "]
			return fontPDF("BT /F1 24 Tf 72 700 Td (Quoted \\140text\\047) Tj ET", simpleFontDict("Type1", "ABCDEF+NimbusSans-Regular", ""), flagNonsymbolic,
				&embedded{"FontFile3", "/Subtype /Type1C", cff})
		}, "Quoted ‘text’", true},
		{"a symbolic TrueType font: codes through its (3,0) cmap, glyphs by their post names", func(t *testing.T) []byte {
			gids := goGlyphs(t, "Glyphs")
			m := map[uint16]uint16{}
			var codes []uint16
			for i, g := range gids {
				m[0xF001+uint16(i)] = g
				codes = append(codes, uint16(1+i))
			}
			tables := sfntTables(t, goregular.TTF)
			tables["cmap"] = cmapBytes(3, 0, m)
			return fontPDF("BT /F1 24 Tf 72 700 Td "+hexCodes(codes, 2)+" Tj ET", simpleFontDict("TrueType", "ABCDEF+GoRegular", ""), flagSymbolic,
				&embedded{"FontFile2", "", buildSfnt(tables)})
		}, "Glyphs", false},
		{"a TrueType font of a Macintosh cmap only, glyphs by their post names", func(t *testing.T) []byte {
			gids := goGlyphs(t, "Glyphs")
			m := map[uint16]uint16{}
			var codes []uint16
			for i, g := range gids {
				m[uint16(0x10+i)] = g
				codes = append(codes, uint16(0x10+i))
			}
			tables := sfntTables(t, goregular.TTF)
			tables["cmap"] = cmapBytes(1, 0, m)
			return fontPDF("BT /F1 24 Tf 72 700 Td "+hexCodes(codes, 2)+" Tj ET", simpleFontDict("TrueType", "ABCDEF+GoRegular", ""), flagSymbolic,
				&embedded{"FontFile2", "", buildSfnt(tables)})
		}, "Glyphs", false},
		{"a TrueType font whose Differences name glyphs of its post table (g42 is not \"*\")", func(t *testing.T) []byte {
			gids := goGlyphs(t, "Glyphs")
			tables := sfntTables(t, goregular.TTF)
			f, _ := parseSfnt(goregular.TTF)
			tables["post"] = postTable(f.numGlyphs, func(gid int) string { return fmt.Sprintf("g%d", gid) })
			var diffs strings.Builder
			diffs.WriteString("[1")
			for _, g := range gids {
				fmt.Fprintf(&diffs, " /g%d", g)
			}
			diffs.WriteString("]")
			return fontPDF("BT /F1 24 Tf 72 700 Td <010203040506> Tj ET", simpleFontDict("TrueType", "ABCDEF+GoRegular",
				"/Encoding << /Differences "+diffs.String()+" >>"), flagNonsymbolic, &embedded{"FontFile2", "", buildSfnt(tables)})
		}, "Glyphs", false},
		{"an Identity TrueType font without a cmap: glyphs by their post names", func(t *testing.T) []byte {
			tables := sfntTables(t, goregular.TTF)
			delete(tables, "cmap")
			return fontPDF("BT /F1 24 Tf 72 700 Td "+hexCodes(goGlyphs(t, "Glyphs café"), 4)+" Tj ET", identityDict("CIDFontType2", ""), flagNonsymbolic,
				&embedded{"FontFile2", "", buildSfnt(tables)})
		}, "Glyphs café", false},
		{"an Identity font of a CFF program that names its glyphs", func(t *testing.T) []byte {
			cff := sfntTables(t, systemFont(t, urw+"opentype/urw-base35/NimbusSans-Regular.otf"))["CFF "]
			c, ok := parseCFF(cff)
			if !ok {
				t.Fatal("NimbusSans: CFF not read")
			}
			names := c.glyphNames()
			var gids []uint16
			for _, n := range []string{"G", "l", "y", "p", "h", "s", "space", "c", "a", "f", "eacute"} {
				i := indexOf(names, n)
				if i < 0 {
					t.Fatalf("no glyph %q", n)
				}
				gids = append(gids, uint16(i))
			}
			return fontPDF("BT /F1 24 Tf 72 700 Td "+hexCodes(gids, 4)+" Tj ET", identityDict("CIDFontType0", ""), flagNonsymbolic,
				&embedded{"FontFile3", "/Subtype /CIDFontType0C", cff})
		}, "Glyphs café", false},
		{"names read as decimal codes", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td <0102030304> Tj ET", simpleFontDict("Type1", "Unknown",
				"/Encoding << /Differences [1 /c72 /c101 /c108 /c111] >>"), flagNonsymbolic, nil)
		}, "Hello", true},
		{"names read as hexadecimal codes", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td <0102030304> Tj ET", simpleFontDict("Type1", "Unknown",
				"/Encoding << /Differences [1 /G48 /G65 /G6C /G6F] >>"), flagNonsymbolic, nil)
		}, "Hello", true},
		{"names nobody knows: the code itself", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td (Hi there) Tj ET", simpleFontDict("Type1", "Unknown",
				"/Encoding << /Differences [72 /glyph1 /glyph2 104 /glyph3] >>"), flagNonsymbolic, nil)
		}, "Hi there", true},
		{"ZapfDingbats by its own names", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td (!\"#) Tj ET", simpleFontDict("Type1", "ZapfDingbats", ""), flagSymbolic, nil)
		}, "✁✂✃", true},
		{"Symbol not embedded", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td (abg) Tj ET", simpleFontDict("Type1", "Symbol", ""), flagSymbolic, nil)
		}, "αβγ", true},
		{"a Type3 font's numeric names", func(t *testing.T) []byte {
			return fontPDF("BT /F1 24 Tf 72 700 Td <01020304> Tj ET", func(int) string {
				return "<< /Type /Font /Subtype /Type3 /FontBBox [0 0 100 100] /FontMatrix [0.01 0 0 0.01 0 0] /Resources << >> " +
					"/CharProcs << >> /Encoding << /Type /Encoding /Differences [1 /a84 /a121 /a112 /a101] >> /FirstChar 1 /LastChar 4 /Widths [50 50 50 50] >>"
			}, 0, nil)
		}, "Type", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.pdf(t)
			info := pageText(t, data)
			if info.Text != tc.want || info.Unmapped != 0 {
				t.Errorf("%q (%d of %d glyphs unmapped), want %q", info.Text, info.Unmapped, info.Glyphs, tc.want)
			}
			ref, ok := pdftotextOf(t, data)
			if !ok {
				return
			}
			t.Logf("pdftotext: %q", ref)
			if !tc.pdftotext {
				return
			}
			if ref == "" {
				t.Fatalf("pdftotext reads nothing of it")
			}
			if r := recall(ref, info.Text); r < 0.9 {
				t.Errorf("recall %.2f against pdftotext's %q", r, ref)
			}
		})
	}
}

func indexOf(names []string, n string) int {
	for i, m := range names {
		if m == n {
			return i
		}
	}
	return -1
}

// symbolCFF is URW's Symbol CFF with an encoding of its own (the font's
// is empty): glyph g at code g+0x40, so Alpha (glyph 34) is "b".
func symbolCFF(t *testing.T) []byte {
	t.Helper()
	cff := sfntTables(t, systemFont(t, "/usr/share/fonts/opentype/urw-base35/StandardSymbolsPS.otf"))["CFF "]
	c, ok := parseCFF(cff)
	if !ok || c.enc < 2 || len(cff) > 0x7FFF {
		t.Skip("StandardSymbolsPS.otf is not the CFF this test knows")
	}
	if n := c.glyphNames(); len(n) < 40 || n[34] != "Alpha" {
		t.Skipf("StandardSymbolsPS.otf: glyph 34 is not Alpha")
	}
	// The Top DICT gives the encoding's offset as a 3-byte integer
	// (28 hi lo) before operator 16: point it at a new one at the end.
	old := []byte{28, byte(c.enc >> 8), byte(c.enc), 16}
	i := bytes.Index(cff, old)
	if i < 0 {
		t.Skip("StandardSymbolsPS.otf: encoding offset not found")
	}
	at := len(cff)
	cff[i+1], cff[i+2] = byte(at>>8), byte(at)
	enc := []byte{0, 60}
	for g := 1; g <= 60; g++ {
		enc = append(enc, byte(g+0x40))
	}
	return append(cff, enc...)
}

// TestCmapFormats: the subtables of formats 0, 6 and 12 map codes to
// glyphs, one by one and walked over.
func TestCmapFormats(t *testing.T) {
	f0 := append(be16(0, 262, 0), make([]byte, 256)...)
	f0[6+0x41], f0[6+0x42] = 7, 8
	f6 := be16(6, 16, 0, 0x41, 3, 7, 8, 9)
	f12 := append(be16(12, 0), be32(40, 0, 2, 0x41, 0x42, 7, 0x1F600, 0x1F600, 9)...)
	cases := []struct {
		name   string
		format uint16
		b      []byte
		want   map[uint32]int
	}{
		{"format 0", 0, f0, map[uint32]int{0x41: 7, 0x42: 8}},
		{"format 6", 6, f6, map[uint32]int{0x41: 7, 0x42: 8, 0x43: 9}},
		{"format 12", 12, f12, map[uint32]int{0x41: 7, 0x42: 8, 0x1F600: 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &sfntCmap{format: tc.format, b: tc.b}
			for code, gid := range tc.want {
				if g := c.glyph(code); g != gid {
					t.Errorf("glyph(%#x) = %d, want %d", code, g, gid)
				}
			}
			if g := c.glyph(0x44 + 0x100); g != 0 {
				t.Errorf("an unmapped code has glyph %d", g)
			}
			got := map[uint32]int{}
			c.each(func(code uint32, gid int) { got[code] = gid })
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("each: %v, want %v", got, tc.want)
			}
		})
	}
}
