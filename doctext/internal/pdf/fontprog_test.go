package pdf

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"golang.org/x/image/font/gofont/goregular"
)

// tinyCFF is a CFF font of four glyphs (.notdef, A, "glyphX", a) with a
// charset of format 0 and an encoding of format 0 with a supplement:
// A at 0x41, glyphX at 0x42, a at 0x43, and B (a glyph it has not) at
// 0x44.
func tinyCFF() []byte {
	num := func(v int) []byte { return []byte{29, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	index := func(items ...[]byte) []byte {
		if len(items) == 0 {
			return []byte{0, 0}
		}
		b := []byte{byte(len(items) >> 8), byte(len(items)), 2}
		off := 1
		b = append(b, byte(off>>8), byte(off))
		for _, it := range items {
			off += len(it)
			b = append(b, byte(off>>8), byte(off))
		}
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	header := []byte{1, 0, 4, 1}
	names := index([]byte("T"))
	strs := index([]byte("glyphX"))
	gsubrs := index()
	charStrings := index([]byte{14}, []byte{14}, []byte{14}, []byte{14})
	charset := []byte{0, 0, 34, 1, 135, 0, 66}                    // SIDs 34 (A), 391 (glyphX), 66 (a)
	encoding := []byte{0x80, 3, 0x41, 0x42, 0x43, 1, 0x44, 0, 35} // and B (SID 35) at 0x44
	// The Top DICT's size is fixed (three 5-byte operands and their
	// operators), so the offsets can be computed before it is written.
	topLen := len(index(make([]byte, 18)))
	base := len(header) + len(names) + topLen + len(strs) + len(gsubrs)
	csOff := base
	charsetOff := csOff + len(charStrings)
	encOff := charsetOff + len(charset)
	top := append(append(append(num(charsetOff), 15), append(num(encOff), 16)...), append(num(csOff), 17)...)
	var b []byte
	for _, part := range [][]byte{header, names, index(top), strs, gsubrs, charStrings, charset, encoding} {
		b = append(b, part...)
	}
	return b
}

func TestCFFEncodingAndCharset(t *testing.T) {
	c, ok := parseCFF(tinyCFF())
	if !ok {
		t.Fatal("not read")
	}
	e := c.encoding()
	for code, want := range map[int]string{0x41: "A", 0x42: "glyphX", 0x43: "a", 0x44: "B", 0x61: "a", 0x27: "quoteright"} {
		if e[code] != want {
			t.Errorf("code %#x: %q, want %q", code, e[code], want)
		}
	}
	if n := c.glyphNames(); len(n) != 4 || n[1] != "A" || n[2] != "glyphX" || n[3] != "a" {
		t.Errorf("glyph names %q", n)
	}
}

// sfntOf is a font file of the given tables (no others).
func sfntOf(tables map[string][]byte) []byte { return buildSfnt(tables) }

func be16(v ...int) []byte {
	var b []byte
	for _, x := range v {
		b = binary.BigEndian.AppendUint16(b, uint16(x))
	}
	return b
}

func be32(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.BigEndian.AppendUint32(b, x)
	}
	return b
}

// patchCFF is tinyCFF changed by patch.
func patchCFF(patch func(b []byte, c *cffFont)) []byte {
	b := tinyCFF()
	c, ok := parseCFF(b)
	if !ok {
		panic("tinyCFF not read")
	}
	patch(b, c)
	return b
}

// hostileFontPrograms are font programs that lie about their sizes.
func hostileFontPrograms() map[string][]byte {
	cmapHeader := func(pid, eid int) []byte { return append(be16(0, 1, pid, eid), be32(12)...) }
	maxp := append(be32(0x00005000), be16(0xFFFF)...) // 65535 glyphs claimed
	m := map[string][]byte{
		"65535 tables":   append(be32(0x00010000), be16(0xFFFF, 0, 0, 0)...),
		"table past end": append(append(be32(0x00010000), be16(1, 0, 0, 0)...), append([]byte("cmap"), be32(0, 4096, 1<<30)...)...),
		"format 12: all of Unicode to one glyph each": sfntOf(map[string][]byte{"maxp": maxp,
			"cmap": append(cmapHeader(3, 10), append(be16(12, 0), be32(28, 0, 1, 0, 0x10FFFF, 1)...)...)}),
		"format 12: a billion groups claimed": sfntOf(map[string][]byte{"maxp": maxp,
			"cmap": append(cmapHeader(3, 10), append(be16(12, 0), be32(28, 0, 0xFFFFFFFF, 0x20, 0x30, 5)...)...)}),
		"format 4: 32767 segments claimed": sfntOf(map[string][]byte{"maxp": maxp,
			"cmap": append(cmapHeader(3, 1), be16(4, 0xFFFF, 0, 0xFFFE, 0, 0, 0, 0xFFFF)...)}),
		"format 4: range offsets past the end": sfntOf(map[string][]byte{"maxp": maxp,
			"cmap": append(cmapHeader(3, 1), be16(4, 32, 0, 4, 0, 0, 0, 0x7F, 0xFFFF, 0, 0x20, 0xFFFF, 0, 1, 0xFFF0, 0)...)}),
		"post: 65535 names, none there": sfntOf(map[string][]byte{"maxp": maxp,
			"post": append(be32(0x00020000), append(make([]byte, 28), be16(0xFFFF, 300, 301)...)...)}),
		"post: names longer than the table": sfntOf(map[string][]byte{
			"post": append(be32(0x00020000), append(make([]byte, 28), append(be16(1, 258), 255, 'a')...)...)}),
		"cff: index of 65535 entries with offsets past the end": {1, 0, 4, 4, 0xFF, 0xFF, 4, 0, 0, 0, 1, 0x7F, 0xFF, 0xFF, 0xFF},
		"cff: charset past the end": patchCFF(func(b []byte, c *cffFont) {
			i := bytes.Index(b, []byte{29, byte(c.charset >> 24), byte(c.charset >> 16), byte(c.charset >> 8), byte(c.charset), 15})
			b[i+1], b[i+2] = 0x7F, 0xFF
		}),
		"cff: a charset range of 65535 glyphs": patchCFF(func(b []byte, c *cffFont) {
			copy(b[c.charset:], []byte{2, 0, 1, 0xFF, 0xFF})
		}),
		"cff: encoding ranges past the end": patchCFF(func(b []byte, c *cffFont) {
			copy(b[c.enc:], []byte{1, 200, 0x20, 0xFF})
		}),
		"cff: offset size 0":       {1, 0, 4, 1, 0, 1, 0},
		"cff: header past the end": {1, 0, 200, 1},
	}
	return m
}

// TestHostileFontPrograms: programs whose counts and offsets lie are read
// without a panic, within a small memory budget, and give no glyphs they
// do not have.
func TestHostileFontPrograms(t *testing.T) {
	for name, data := range hostileFontPrograms() {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			readFontProgram(data)
			runtime.ReadMemStats(&after)
			// 65535 glyphs' strings and names at most.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("%d MB allocated", alloc>>20)
			}
			if f, err := parseSfnt(data); err == nil {
				if g := f.glyphText(); len(g) > 0xFFFF {
					t.Errorf("%d glyphs", len(g))
				}
			}
		})
	}
}

// readFontProgram does with data all the reader does with a program.
func readFontProgram(data []byte) {
	if f, err := parseSfnt(data); err == nil {
		f.glyphText()
		for i := range f.cmaps {
			for _, code := range []uint32{0, 0x41, 0xF041, 0xFFFF, 0x1F600, 0xFFFFFFFF} {
				f.cmaps[i].glyph(code)
			}
		}
	}
	if c, ok := parseCFF(data); ok {
		c.encoding()
		c.glyphNames()
	}
	cffGlyphText(data)
}

// FuzzFontPrograms: whatever the bytes of a TrueType, OpenType or CFF
// program, reading its glyphs' text answers, never panics.
func FuzzFontPrograms(f *testing.F) {
	t := &testing.T{}
	small := sfntTables(t, goregular.TTF)
	for _, k := range []string{"glyf", "loca", "hmtx", "GPOS", "GSUB", "kern", "fpgm", "prep", "cvt "} {
		delete(small, k)
	}
	f.Add(buildSfnt(small))
	f.Add(buildSfnt(map[string][]byte{"cmap": cmapBytes(3, 0, map[uint16]uint16{0xF041: 3, 0xF042: 4}), "maxp": be16(0, 0, 8)}))
	f.Add(tinyCFF())
	for _, b := range hostileFontPrograms() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readFontProgram(data)
		if g, err := parseSfnt(data); err == nil {
			if n := g.glyphText(); len(n) > 0xFFFF {
				t.Fatalf("%d glyphs", len(n))
			}
		}
	})
}
