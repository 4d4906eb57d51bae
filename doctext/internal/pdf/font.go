package pdf

import (
	"io"
	"iter"
	"math"
	"sort"
	"strings"
	"unicode/utf16"
)

const (
	maxCMapBytes    = 4 << 20
	maxFontEntries  = 1 << 17 // code→text and width entries of one font
	maxFontsEntries = 1 << 20 // of all the fonts kept
	maxFonts        = 512     // decoded fonts kept per document
)

// font turns the bytes of a shown string into codes, text and widths.
type font struct {
	cid    bool      // Type0: multi-byte codes, widths by CID
	spaces []csRange // code lengths (Type0; a ToUnicode map may name them too)
	toUni  map[uint32]string
	ranges []uniRange   // large bfranges, kept unexpanded
	simple *[256]string // simple fonts: code → text by the font's encoding
	// fill completes simple when a code without text is first shown (from
	// the font's TrueType program, or pdftotext's pass-through).
	fill func(*[256]string)
	ucs2 bool // a Type0 font whose codes are UTF-16 themselves
	// enc maps codes to CIDs (a predefined CMap); cids does for an
	// embedded one; neither: the code is the CID (Identity).
	enc  *cmapTable
	cids []cidRange
	// cidText gives the text of a CID by the font's character collection
	// (Adobe-Japan1…), for fonts without a ToUnicode map.
	cidText *cmapTable
	// glyphs gives the text of a CID by its TrueType program's cmap, for
	// an Identity font without ToUnicode.
	byGlyph  *glyphMap
	vertical bool    // written top to bottom (WMode 1)
	vadv     float64 // vertical advance, glyph units (negative: down)
	usecmap  string  // the predefined CMap an embedded one builds on
	widths   map[uint32]float64
	dw       float64 // width of codes without one
	scale    float64 // glyph space to text space (1/1000, or a Type3 FontMatrix)
	// em is a Type3 font's size in text space per unit of font size,
	// guessed from its glyphs (1 for other fonts, whose glyph space is
	// a thousandth of the size).
	em      float64
	unicode bool // any way to get text at all
}

type csRange struct {
	n      int
	lo, hi uint32
}

type uniRange struct {
	lo, hi uint32
	base   []uint16 // dst of the first code; the last unit counts up
	arr    []string // or one string per code
}

// cidRange maps codes lo…hi of n bytes to CIDs from cid on.
type cidRange struct {
	n           int
	lo, hi, cid uint32
}

// glyph is one code of a shown string.
type glyph struct {
	code  uint32
	cid   uint32
	n     int // bytes
	text  string
	width float64 // in text space units per unit of font size
}

func (f *font) glyphs(s string, each func(g glyph)) {
	for i := 0; i < len(s); {
		n := f.codeLen(s[i:])
		var code uint32
		for _, c := range []byte(s[i : i+n]) {
			code = code<<8 | uint32(c)
		}
		i += n
		cid := f.cidOf(code, n)
		g := glyph{code: code, cid: cid, n: n, text: f.text(code, n, cid)}
		w, ok := f.widths[cid]
		if !ok {
			w = f.dw
		}
		g.width = w * f.scale
		each(g)
	}
}

// cidOf is the CID of a code (for simple fonts, the code itself).
func (f *font) cidOf(code uint32, n int) uint32 {
	if len(f.cids) > 0 {
		// Sorted by length and start when read: a search, as an embedded
		// CMap may hold many thousand ranges.
		rs := f.cids
		i := sort.Search(len(rs), func(i int) bool { return rs[i].n > n || (rs[i].n == n && rs[i].hi >= code) })
		if i < len(rs) && rs[i].n == n && rs[i].lo <= code {
			return rs[i].cid + code - rs[i].lo
		}
	}
	if f.enc != nil {
		c, _ := f.enc.lookup(code, n)
		return c
	}
	if len(f.cids) > 0 {
		return 0
	}
	return code
}

func (f *font) codeLen(s string) int {
	if !f.cid && len(f.spaces) == 0 {
		return 1
	}
	if len(f.spaces) == 0 {
		return min(2, len(s))
	}
	var code uint32
	for n := 1; n <= 4 && n <= len(s); n++ {
		code = code<<8 | uint32(s[n-1])
		for _, r := range f.spaces {
			if r.n == n && code >= r.lo && code <= r.hi {
				return n
			}
		}
	}
	// Not in any range: take the shortest length the font uses.
	n := 4
	for _, r := range f.spaces {
		n = min(n, r.n)
	}
	return max(1, min(n, len(s)))
}

func (f *font) text(code uint32, n int, cid uint32) string {
	if t, ok := f.toUni[code]; ok && t != "" {
		return t
	}
	for _, r := range f.ranges {
		if code >= r.lo && code <= r.hi {
			return r.at(code)
		}
	}
	if f.ucs2 {
		switch n {
		case 2:
			return string(utf16.Decode([]uint16{uint16(code)}))
		case 4: // a surrogate pair (the UTF-16 CMaps)
			return string(utf16.Decode([]uint16{uint16(code >> 16), uint16(code)}))
		}
		return ""
	}
	if f.cidText != nil {
		return f.cidText.text(cid)
	}
	if f.byGlyph != nil {
		return f.byGlyph.textOf(cid)
	}
	if f.simple != nil && code < 256 {
		if t := f.simple[code]; t != "" || f.fill == nil {
			return t
		}
		fill := f.fill
		f.fill = nil
		t := *f.simple
		fill(&t)
		f.simple = &t
		return t[code]
	}
	return ""
}

func (r uniRange) at(code uint32) string {
	off := code - r.lo
	if r.arr != nil {
		if int(off) < len(r.arr) {
			return r.arr[off]
		}
		return ""
	}
	u := append([]uint16(nil), r.base...)
	if len(u) > 0 {
		u[len(u)-1] += uint16(off)
	}
	return string(utf16.Decode(u))
}

// loadFont reads a font dictionary. Fonts are shared by many pages, so
// they are kept by reference.
func (d *Doc) loadFont(o object) *font {
	r, isRef := o.(ref)
	if isRef {
		if f, ok := d.fonts[r]; ok {
			return f
		}
	}
	f := d.parseFont(d.dictOf(o))
	d.fontEntries += len(f.toUni) + len(f.widths) + len(f.cids)
	if f.byGlyph != nil {
		d.fontEntries += len(f.byGlyph.text)
	}
	if isRef {
		if len(d.fonts) >= maxFonts || d.fontEntries > maxFontsEntries {
			clear(d.fonts)
			d.fontEntries = 0
		}
		d.fonts[r] = f
	}
	return f
}

func (d *Doc) parseFont(fd dict) *font {
	f := &font{dw: 1000, scale: 0.001, em: 1, widths: map[uint32]float64{}}
	if fd == nil {
		f.simple = encodingTexts()["WinAnsi"]
		f.unicode = true
		f.dw = 500
		return f
	}
	sub, _ := d.resolve(fd["Subtype"]).(name)
	base, _ := d.resolve(fd["BaseFont"]).(name)
	if s, ok := d.resolve(fd["ToUnicode"]).(*stream); ok {
		d.readToUnicode(f, s)
	}
	if sub == "Type0" {
		f.cid = true
		f.vadv = -1000
		coll := ""
		switch enc := d.resolve(fd["Encoding"]).(type) {
		case name:
			d.predefinedEncoding(f, string(enc), &coll)
		case *stream:
			// An embedded CMap: its code lengths, its CIDs, its writing
			// mode, and the predefined CMap it builds on.
			tmp := &font{}
			d.readCMap(tmp, enc)
			if tmp.usecmap != "" {
				d.predefinedEncoding(f, tmp.usecmap, &coll)
			}
			if len(tmp.spaces) > 0 {
				f.spaces = tmp.spaces
			}
			f.cids = tmp.cids
			sort.Slice(f.cids, func(i, j int) bool {
				a, b := f.cids[i], f.cids[j]
				return a.n < b.n || (a.n == b.n && a.lo < b.lo)
			})
			if len(f.cids) > 0 {
				f.ucs2 = false // its codes are its own, not the Unicode of the one it builds on
			}
			f.vertical = f.vertical || tmp.vertical
		}
		if ds, _ := d.resolve(fd["DescendantFonts"]).(array); len(ds) > 0 {
			df := d.dictOf(ds[0])
			if df != nil {
				f.dw = d.numOf(df["DW"], 1000)
				d.cidWidths(f, df["W"])
				if dw2, _ := d.resolve(df["DW2"]).(array); len(dw2) == 2 {
					if v := d.numOf(dw2[1], -1000); v < 0 {
						f.vadv = v
					}
				}
				info := d.dictOf(df["CIDSystemInfo"])
				reg, _ := d.resolve(info["Registry"]).(string)
				ord, _ := d.resolve(info["Ordering"]).(string)
				if t := collectionToUnicode(reg, ord); t != nil {
					f.cidText = t
				} else if f.toUni == nil && !f.ucs2 {
					f.byGlyph = d.programText(df)
				}
			}
		}
		if f.cidText == nil && coll != "" {
			f.cidText = predefinedCMap(coll + "-UCS2")
		}
		d.seen.cid = true
		if f.cidText != nil && f.toUni == nil {
			d.seen.cidByCollection = true
		}
		if f.cidText != nil || f.byGlyph != nil {
			f.unicode = true
		}
		return f
	}
	// A simple font: one byte per code.
	f.spaces = nil
	f.unicode = true
	f.simple, f.fill = d.simpleEncoding(fd, sub, base)
	f.dw = d.numOf(d.dictOf(fd["FontDescriptor"])["MissingWidth"], 0)
	if f.dw == 0 {
		f.dw = standardWidth(string(base))
	}
	if sub == "Type3" {
		if m, _ := d.resolve(fd["FontMatrix"]).(array); len(m) == 6 {
			f.scale = d.numOf(m[0], 0.001)
		}
	}
	first, _ := d.intOf(fd["FirstChar"])
	if ws, ok := d.resolve(fd["Widths"]).(array); ok && first >= 0 && first < 256 {
		for i, w := range ws {
			if i >= 256 {
				break
			}
			f.widths[uint32(first)+uint32(i)] = d.numOf(w, f.dw)
		}
	}
	if sub == "Type3" {
		f.em = type3Em(f, d.resolve(fd["FontMatrix"]))
		d.seen.type3 = true
	}
	return f
}

// type3Em guesses how large a Type3 font is: its glyph space is the
// font's own, so the size set by Tf says little. As pdftotext does, the
// width of an "m" is taken as 0.6 of the size (or any letter's as 0.5),
// corrected by the matrix's aspect.
func type3Em(f *font, fm object) float64 {
	em := 0.0
	var letter, anyW float64
	for code := range 256 {
		w := f.widths[uint32(code)] * f.scale
		if w <= 0 {
			continue
		}
		t := f.simple[code]
		switch {
		case t == "m":
			em = w / 0.6
		case letter == 0 && len(t) == 1 && (t[0]|0x20 >= 'a' && t[0]|0x20 <= 'z'):
			letter = w
		case anyW == 0:
			anyW = w
		}
	}
	switch {
	case em > 0:
	case letter > 0:
		em = letter / 0.5
	case anyW > 0:
		em = anyW / 0.5
	default:
		return 1
	}
	if m, _ := fm.(array); len(m) == 6 {
		a, _ := m[0].(float64)
		dd, _ := m[3].(float64)
		if ai, ok := m[0].(int64); ok {
			a = float64(ai)
		}
		if di, ok := m[3].(int64); ok {
			dd = float64(di)
		}
		if a != 0 && dd != 0 {
			em *= math.Abs(dd / a)
		}
	}
	if em <= 0 || math.IsNaN(em) || math.IsInf(em, 0) {
		return 1
	}
	return em
}

// predefinedEncoding sets a Type0 font's encoding from the name of a
// predefined CMap, and coll to its character collection.
func (d *Doc) predefinedEncoding(f *font, e string, coll *string) {
	switch e {
	case "Identity-H":
		return
	case "Identity-V":
		f.vertical = true
		return
	}
	if strings.Contains(e, "UCS2") || strings.Contains(e, "UTF16") {
		f.ucs2 = true
		f.unicode = true
	}
	if t := predefinedCMap(e); t != nil && !t.toUni {
		f.enc = t
		f.spaces = t.spaces
		f.vertical = t.vertical
		*coll = t.coll
	} else if strings.HasSuffix(e, "-V") {
		f.vertical = true
	}
}

// standardWidth guesses an average width for a font without /Widths (the
// standard 14 fonts): close enough to tell a word gap from a letter.
func standardWidth(base string) float64 {
	switch {
	case strings.Contains(base, "Courier"):
		return 600
	case strings.Contains(base, "Helvetica"), strings.Contains(base, "Arial"):
		return 556
	}
	return 500
}

func (d *Doc) cidWidths(f *font, o object) {
	w, _ := d.resolve(o).(array)
	n := 0
	for i := 0; i < len(w) && n < maxFontEntries; {
		first, ok := d.intOf(w[i])
		if !ok || i+1 >= len(w) {
			return
		}
		if ws, ok := d.resolve(w[i+1]).(array); ok {
			for j, v := range ws {
				f.widths[uint32(first)+uint32(j)] = d.numOf(v, f.dw)
				n++
			}
			i += 2
			continue
		}
		if i+2 >= len(w) {
			return
		}
		last, _ := d.intOf(w[i+1])
		v := d.numOf(w[i+2], f.dw)
		for c := first; c <= last && n < maxFontEntries; c++ {
			f.widths[uint32(c)] = v
			n++
		}
		i += 3
	}
}

func (d *Doc) readToUnicode(f *font, s *stream) {
	d.readCMap(f, s)
	if len(f.toUni) > 0 || len(f.ranges) > 0 {
		f.unicode = true
	}
}

// readCMap reads the code space and the bfchar/bfrange maps of a CMap.
func (d *Doc) readCMap(f *font, s *stream) {
	r, err := d.streamReader(s)
	if err != nil {
		return
	}
	l := newLexer(io.LimitReader(r, maxCMapBytes), 0, false)
	if f.toUni == nil {
		f.toUni = map[uint32]string{}
	}
	entries := 0
	code := func(o object) (uint32, int, bool) {
		s, ok := o.(string)
		if !ok || len(s) == 0 || len(s) > 4 {
			return 0, 0, false
		}
		var c uint32
		for _, b := range []byte(s) {
			c = c<<8 | uint32(b)
		}
		return c, len(s), true
	}
	// section yields the entries of n objects of a section that ends with
	// end; broken is set when the stream ends inside an entry (the map is
	// then as read so far).
	var broken bool
	section := func(end keyword, n int) iter.Seq[[]object] {
		return func(yield func([]object) bool) {
			for {
				objs := make([]object, 0, n)
				for i := range n {
					o, err := l.object(0)
					if i == 0 && (err != nil || o == end) {
						return
					}
					if err != nil {
						broken = true
						return
					}
					objs = append(objs, o)
				}
				if !yield(objs) {
					return
				}
			}
		}
	}
	var prev, prev2 object
	for entries < maxFontEntries {
		t, err := l.object(0)
		if err != nil {
			return
		}
		k, ok := t.(keyword)
		if !ok {
			prev2, prev = prev, t
			continue
		}
		switch k {
		case "usecmap":
			if n, ok := prev.(name); ok {
				f.usecmap = string(n)
			}
		case "def":
			if prev2 == name("WMode") && prev == int64(1) {
				f.vertical = true
			}
		case "begincidrange", "begincidchar":
			per, end := 3, keyword("endcidrange")
			if k == "begincidchar" {
				per, end = 2, "endcidchar"
			}
			for e := range section(end, per) {
				if entries >= maxFontEntries || len(f.cids) >= maxFontEntries {
					break
				}
				lo, n, ok1 := code(e[0])
				hi, cidObj := lo, e[1]
				ok2 := true
				if per == 3 {
					hi, _, ok2 = code(e[1])
					cidObj = e[2]
				}
				cid, ok3 := cidObj.(int64)
				if ok1 && ok2 && ok3 && hi >= lo && cid >= 0 && cid <= 0xFFFF {
					f.cids = append(f.cids, cidRange{n: n, lo: lo, hi: hi, cid: uint32(cid)})
					entries++
				}
			}
		case "begincodespacerange":
			for e := range section("endcodespacerange", 2) {
				lo, n, ok1 := code(e[0])
				hi, _, ok2 := code(e[1])
				if ok1 && ok2 && len(f.spaces) < 64 {
					f.spaces = append(f.spaces, csRange{n: n, lo: lo, hi: hi})
				}
			}
		case "beginbfchar":
			for e := range section("endbfchar", 2) {
				if entries >= maxFontEntries {
					break
				}
				c, _, ok := code(e[0])
				b := e[1]
				dst, isStr := b.(string)
				if n, isName := b.(name); isName {
					dst, isStr = glyphText(string(n)), true
				}
				if ok && isStr {
					f.toUni[c] = utf16BE(dst)
					entries++
				}
			}
		case "beginbfrange":
			for e := range section("endbfrange", 3) {
				if entries >= maxFontEntries {
					break
				}
				lo, _, ok1 := code(e[0])
				hi, _, ok2 := code(e[1])
				c := e[2]
				if !ok1 || !ok2 || hi < lo {
					continue
				}
				var ur uniRange
				ur.lo, ur.hi = lo, hi
				switch dst := c.(type) {
				case string:
					ur.base = utf16Units(dst)
				case array:
					for _, x := range dst {
						s, _ := x.(string)
						ur.arr = append(ur.arr, utf16BE(s))
					}
				default:
					continue
				}
				if hi-lo <= 256 {
					for c := lo; c <= hi && entries < maxFontEntries; c++ {
						f.toUni[c] = ur.at(c)
						entries++
					}
				} else if len(f.ranges) < 1024 {
					f.ranges = append(f.ranges, ur)
					entries++
				}
			}
		}
		if broken {
			return
		}
		prev2, prev = prev, k
	}
}

func utf16Units(s string) []uint16 {
	u := make([]uint16, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
	}
	if len(s)%2 == 1 { // a one-byte destination: take it as a code point
		u = append(u, uint16(s[len(s)-1]))
	}
	return u
}

func utf16BE(s string) string { return string(utf16.Decode(utf16Units(s))) }

func hexVal(s string) (uint32, bool) {
	var v uint32
	for i := range len(s) {
		h, ok := unhex(s[i])
		if !ok {
			return 0, false
		}
		v = v<<4 | uint32(h)
	}
	return v, true
}
