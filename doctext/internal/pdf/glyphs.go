package pdf

import (
	"embed"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

//go:generate go run ./aglgen -gs /usr/share/ghostscript/10.00.0/Resource -out glyphs

// glyphFiles are the Adobe Glyph List (agl.txt, and the Zapf Dingbats
// names apart in zapf.txt: "name hex[ hex…]" a line, sorted), the glyph
// names of the predefined simple encodings (encodings.txt), the CFF
// standard strings (cffstd.txt) and the 258 standard Macintosh glyph
// names of TrueType's post table (macglyphs.txt); glyphs/README.md says
// where they come from.
//
//go:embed glyphs/*.txt
var glyphFiles embed.FS

// glyphList is a sorted list of glyph names with their text.
type glyphList struct {
	names []string
	text  []string
}

func (g *glyphList) lookup(name string) (string, bool) {
	i := sort.SearchStrings(g.names, name)
	if i < len(g.names) && g.names[i] == name {
		return g.text[i], true
	}
	return "", false
}

func loadGlyphList(file string) *glyphList {
	b, err := glyphFiles.ReadFile("glyphs/" + file)
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	g := &glyphList{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		var rs []rune
		for _, h := range f[1:] {
			v, err := strconv.ParseUint(h, 16, 32)
			if err != nil {
				panic(err)
			}
			rs = append(rs, rune(v))
		}
		g.names = append(g.names, f[0])
		g.text = append(g.text, string(rs))
	}
	return g
}

var (
	aglList  = sync.OnceValue(func() *glyphList { return loadGlyphList("agl.txt") })
	zapfList = sync.OnceValue(func() *glyphList { return loadGlyphList("zapf.txt") })
	// cffStandard are the glyph names of SIDs 0…390 of a CFF font.
	cffStandard = sync.OnceValue(func() []string { return wordsOf("cffstd.txt") })
	// macGlyphs are the names of TrueType's post table format 1.
	macGlyphs = sync.OnceValue(func() []string { return wordsOf("macglyphs.txt") })
	// encodingNames are the predefined encodings by name: the glyph name
	// of each code ("" where there is none).
	encodingNames = sync.OnceValue(func() map[string]*[256]string {
		b, err := glyphFiles.ReadFile("glyphs/encodings.txt")
		if err != nil {
			panic(err)
		}
		m := map[string]*[256]string{}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			if len(f) != 257 {
				panic("glyphs/encodings.txt: " + f[0])
			}
			var t [256]string
			for i, n := range f[1:] {
				if n != "-" {
					t[i] = n
				}
			}
			m[f[0]] = &t
		}
		return m
	})
	// encodingTexts are those encodings' text, code by code.
	encodingTexts = sync.OnceValue(func() map[string]*[256]string {
		m := map[string]*[256]string{}
		for n, names := range encodingNames() {
			t, _ := namesText(names, n == "ZapfDingbats")
			m[n] = t
		}
		return m
	})
)

func wordsOf(file string) []string {
	b, err := glyphFiles.ReadFile("glyphs/" + file)
	if err != nil {
		panic(err)
	}
	return strings.Fields(string(b))
}

// encodingByName is the glyph names of a predefined encoding: Standard,
// WinAnsi, MacRoman, MacExpert, Symbol or ZapfDingbats.
func encodingByName(n string) *[256]string { return encodingNames()[n] }

// aglText is the text of a name in the Adobe Glyph List (and, for the
// ZapfDingbats font, in its own list), with the ligatures of the
// Alphabetic Presentation Forms spelled out as pdftotext does ("fi").
func aglText(name string, zapf bool) (string, bool) {
	if zapf {
		if t, ok := zapfList().lookup(name); ok {
			return t, true
		}
	}
	t, ok := aglList().lookup(name)
	if !ok {
		return "", false
	}
	if r := []rune(t); len(r) == 1 && r[0] >= 0xFB00 && r[0] <= 0xFB4F {
		t = norm.NFKC.String(t)
	}
	return t, true
}

// namesText turns a font's glyph names into text code by code, as
// pdftotext does (poppler's Gfx8BitFont): the glyph list first; then,
// for the names it lacks, the Adobe Glyph Mapping convention (variants
// "a.sc", ligatures "f_f_i", "uniXXXX", "uXXXX[XX]"). missing tells that
// some name was not in the list: pdftotext then reads names that are all
// numbers as codes ("c65", "G41") and takes the code itself as the
// character for every code it still has no text for (simpleEncoding
// does both).
func namesText(names *[256]string, zapf bool) (*[256]string, bool) {
	var t [256]string
	missing := false
	for code, n := range names {
		if n == "" {
			continue
		}
		if s, ok := aglText(n, zapf); ok {
			t[code] = s
		} else if n != ".notdef" {
			missing = true
		}
	}
	if missing {
		for code, n := range names {
			if t[code] == "" && n != "" && n != ".notdef" {
				t[code] = parseCharName(n, false, true, false, false, true, 0)
			}
		}
	}
	return &t, missing
}

// hexNames tells whether a font's names look like "Axx" or "xx" with xx
// two hexadecimal digits, one of them a letter (poppler's test).
func hexNames(names *[256]string) bool {
	for _, n := range names {
		if n == "" || n == ".notdef" {
			continue
		}
		if _, ok := aglList().lookup(n); ok {
			continue
		}
		isLetterHex := func(c byte) bool { return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }
		switch {
		case len(n) == 3 && isAlpha(n[0]) && isHexDigit(n[1]) && isHexDigit(n[2]) && (isLetterHex(n[1]) || isLetterHex(n[2])):
			return true
		case len(n) == 2 && isHexDigit(n[0]) && isHexDigit(n[1]) && isLetterHex(n[1]):
			return true
		}
	}
	return false
}

func isAlpha(c byte) bool    { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isHexDigit(c byte) bool { _, ok := unhex(c); return ok }
func isAlnum(c byte) bool    { return isAlpha(c) || isDigit(c) }

// parseNumericName reads names like "xx", "Axx" (hex) or "nn", "Ann",
// "ABnn" (decimal), as poppler does.
func parseNumericName(s string, hex bool) (uint32, bool) {
	if hex {
		n := 0
		for n < len(s) && isAlnum(s[n]) {
			n++
		}
		switch {
		case n == 3 && isAlpha(s[0]):
			s = s[1:]
		case n != 2:
			return 0, false
		}
	} else {
		for i := 0; i < 2 && len(s) > 0 && isAlpha(s[0]); i++ {
			s = s[1:]
		}
	}
	base := uint64(10)
	if hex {
		base = 16
	}
	digits := 0
	var v uint64
	for digits < len(s) {
		c := s[digits]
		var d byte
		switch {
		case isDigit(c):
			d = c - '0'
		case hex && isHexDigit(c):
			d, _ = unhex(c)
		default:
			goto done
		}
		if v = v*base + uint64(d); v > 0x10FFFF {
			return 0, false
		}
		digits++
	}
done:
	if digits == 0 {
		return 0, false
	}
	for _, c := range []byte(s[digits:]) {
		if isAlnum(c) {
			return 0, false
		}
	}
	return uint32(v), true
}

// numericNames tells whether a font's Differences name every glyph by a
// number, from codes under 6 on (poppler's testForNumericNames): only
// then are such names read as codes.
func (d *Doc) numericNames(diffs array, hex bool) bool {
	if len(diffs) == 0 {
		return false
	}
	for _, v := range diffs {
		switch v := d.resolve(v).(type) {
		case int64:
			if v > 5 {
				return false
			}
		case name:
			if _, ok := parseNumericName(string(v), hex); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// parseCharName reads a glyph name by the Adobe Glyph Mapping convention,
// as poppler's parseCharName: a variant (drops ".suffix"), a ligature
// (components apart by "_"), a name of the list (names), "uniXXXX…",
// "uXXXX[XX]", or, numeric, a code.
func parseCharName(n string, names, ligatures, numeric, hex, variants bool, depth int) string {
	if depth > 4 || len(n) > 256 {
		return ""
	}
	if variants {
		if i := strings.IndexByte(n, '.'); i == 0 {
			return ""
		} else if i > 0 {
			return parseCharName(n[:i], true, ligatures, numeric, hex, false, depth+1)
		}
	}
	if ligatures && strings.IndexByte(n, '_') >= 0 {
		var b strings.Builder
		for p := range strings.SplitSeq(n, "_") {
			if p != "" {
				b.WriteString(parseCharName(p, true, false, numeric, hex, variants, depth+1))
			}
		}
		return b.String()
	}
	if names {
		if t, ok := aglText(n, false); ok {
			return t
		}
	}
	if h, ok := strings.CutPrefix(n, "uni"); ok && len(h) >= 4 && len(h)%4 == 0 {
		var u []uint16
		for i := 0; i+4 <= len(h); i += 4 {
			v, ok := hexVal(h[i : i+4])
			if ok && (v <= 0xD7FF || v >= 0xE000) {
				u = append(u, uint16(v))
			}
		}
		return string(utf16.Decode(u))
	}
	if h, ok := strings.CutPrefix(n, "u"); ok && len(h) >= 4 && len(h) <= 6 {
		if v, ok := hexVal(h); ok && (v <= 0xD7FF || (v >= 0xE000 && v <= 0x10FFFF)) {
			return string(rune(v))
		}
	}
	if numeric {
		if v, ok := parseNumericName(n, hex); ok && v >= 0x20 && (v < 0xD800 || v >= 0xE000) {
			return string(rune(v))
		}
	}
	return ""
}

// glyphText is the text a glyph name stands for, as a ToUnicode map or a
// Differences array may give it: a name of the list, uniXXXX,
// uXXXX[XX], or a name with a suffix (a.sc) or ligature parts (f_f_i).
func glyphText(n string) string {
	if t, ok := aglText(n, false); ok {
		return t
	}
	return parseCharName(n, false, true, false, false, true, 0)
}
