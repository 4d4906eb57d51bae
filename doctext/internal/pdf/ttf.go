package pdf

import (
	"encoding/binary"
	"errors"
	"slices"
	"unicode/utf8"
)

// A reader of the tables of an embedded TrueType or OpenType program that
// tell the text of its glyphs: cmap (character codes to glyphs) and post
// (glyph names). The bytes are the document's, so every count and offset
// is checked against the table it lies in, and nothing is allocated by a
// count the bytes give beyond what those bytes can hold.

var errBadFont = errors.New("malformed font program")

const (
	maxSfntTables = 256
	maxCmaps      = 64
	// maxCmapCodes bounds the codes one cmap subtable is walked over
	// (a format 12 group may claim all of Unicode).
	maxCmapCodes = 1 << 20
)

type sfntFont struct {
	data      []byte
	tables    map[string][]byte
	cmaps     []sfntCmap
	numGlyphs int
}

type sfntCmap struct {
	pid, eid uint16
	format   uint16
	b        []byte // the subtable
}

func u16(b []byte, off int) (int, bool) {
	if off < 0 || off+2 > len(b) {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(b[off:])), true
}

func u32(b []byte, off int) (uint32, bool) {
	if off < 0 || off+4 > len(b) {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[off:]), true
}

// parseSfnt reads the table directory of a TrueType or OpenType program
// (the first font of a collection).
func parseSfnt(data []byte) (*sfntFont, error) {
	if tag, ok := u32(data, 0); ok && tag == 0x74746366 { // "ttcf"
		off, ok := u32(data, 12)
		if !ok || int64(off) >= int64(len(data)) {
			return nil, errBadFont
		}
		data = data[off:]
	}
	n, ok := u16(data, 4)
	if !ok || n == 0 || n > maxSfntTables {
		return nil, errBadFont
	}
	f := &sfntFont{data: data, tables: map[string][]byte{}}
	for i := range n {
		rec := 12 + 16*i
		if rec+16 > len(data) {
			return nil, errBadFont
		}
		tag := string(data[rec : rec+4])
		off, _ := u32(data, rec+8)
		length, _ := u32(data, rec+12)
		if int64(off)+int64(length) > int64(len(data)) {
			// A table cut off: keep what there is (subset fonts are
			// often sloppy), as long as it starts inside.
			if int64(off) >= int64(len(data)) {
				continue
			}
			length = uint32(len(data)) - off
		}
		f.tables[tag] = data[off : off+length]
	}
	if m := f.tables["maxp"]; m != nil {
		f.numGlyphs, _ = u16(m, 4)
	}
	if c := f.tables["cmap"]; c != nil {
		nc, _ := u16(c, 2)
		for i := range min(nc, maxCmaps) {
			pid, ok1 := u16(c, 4+8*i)
			eid, ok2 := u16(c, 6+8*i)
			off, ok3 := u32(c, 8+8*i)
			if !ok1 || !ok2 || !ok3 || int64(off) >= int64(len(c)) {
				continue
			}
			sub := c[off:]
			format, ok := u16(sub, 0)
			if !ok {
				continue
			}
			// The subtable's own length, where it has one that fits.
			switch format {
			case 0, 4, 6:
				if l, ok := u16(sub, 2); ok && l >= 6 && l <= len(sub) {
					sub = sub[:l]
				}
			case 12:
				if l, ok := u32(sub, 4); ok && l >= 16 && int64(l) <= int64(len(sub)) {
					sub = sub[:l]
				}
			default:
				continue
			}
			f.cmaps = append(f.cmaps, sfntCmap{pid: uint16(pid), eid: uint16(eid), format: uint16(format), b: sub})
		}
	}
	return f, nil
}

// cmap is the subtable of that platform and encoding, or nil.
func (f *sfntFont) cmap(pid, eid uint16) *sfntCmap {
	for i := range f.cmaps {
		if c := &f.cmaps[i]; c.pid == pid && c.eid == eid {
			return c
		}
	}
	return nil
}

// unicodeCmap is a subtable by Unicode: Windows UCS-4 or UCS-2, or the
// Unicode platform's.
func (f *sfntFont) unicodeCmap() *sfntCmap {
	if c := f.cmap(3, 10); c != nil {
		return c
	}
	if c := f.cmap(3, 1); c != nil {
		return c
	}
	for i := range f.cmaps {
		if f.cmaps[i].pid == 0 {
			return &f.cmaps[i]
		}
	}
	return nil
}

// glyph is the glyph of code, 0 if none.
func (c *sfntCmap) glyph(code uint32) int {
	gid := 0
	c.walk(func(lo, hi uint32, at func(uint32) int) bool {
		if code >= lo && code <= hi {
			gid = at(code)
			return false
		}
		return true
	}, code)
	return gid
}

// each calls fn for the codes the subtable maps to a glyph, in order,
// over at most maxCmapCodes codes.
func (c *sfntCmap) each(fn func(code uint32, gid int)) {
	budget := maxCmapCodes
	c.walk(func(lo, hi uint32, at func(uint32) int) bool {
		for code := lo; code <= hi && budget > 0; code++ {
			budget--
			if g := at(code); g != 0 {
				fn(code, g)
			}
			if code == hi {
				break
			}
		}
		return budget > 0
	}, ^uint32(0))
}

// walk hands the subtable's ranges to fn, with how to find the glyph of
// a code in each, until fn returns false. For a lookup, want is the code
// sought: ranges that cannot hold it may be passed over.
func (c *sfntCmap) walk(fn func(lo, hi uint32, at func(uint32) int) bool, want uint32) {
	b := c.b
	switch c.format {
	case 0:
		if len(b) < 6+256 {
			return
		}
		fn(0, 255, func(code uint32) int { return int(b[6+code]) })
	case 6:
		first, ok1 := u16(b, 6)
		count, ok2 := u16(b, 8)
		if !ok1 || !ok2 || count == 0 {
			return
		}
		count = min(count, (len(b)-10)/2)
		if count <= 0 {
			return
		}
		fn(uint32(first), uint32(first+count-1), func(code uint32) int {
			g, _ := u16(b, 10+2*int(code-uint32(first)))
			return g
		})
	case 4:
		segX2, ok := u16(b, 6)
		if !ok || segX2 < 2 {
			return
		}
		segs := segX2 / 2
		if 16+8*segs > len(b) {
			return
		}
		ends, starts, deltas, offs := 14, 16+segX2, 16+2*segX2, 16+3*segX2
		for i := range segs {
			end, _ := u16(b, ends+2*i)
			start, _ := u16(b, starts+2*i)
			delta, _ := u16(b, deltas+2*i)
			ro, _ := u16(b, offs+2*i)
			if start > end || (want != ^uint32(0) && (want < uint32(start) || want > uint32(end))) {
				continue
			}
			roAt := offs + 2*i
			at := func(code uint32) int {
				if ro == 0 {
					return (int(code) + delta) & 0xFFFF
				}
				g, ok := u16(b, roAt+ro+2*int(code-uint32(start)))
				if !ok || g == 0 {
					return 0
				}
				return (g + delta) & 0xFFFF
			}
			if !fn(uint32(start), uint32(end), at) {
				return
			}
		}
	case 12:
		n, ok := u32(b, 12)
		if !ok || len(b) < 16 {
			return
		}
		n = min(n, uint32((len(b)-16)/12))
		for i := range int(n) {
			g := 16 + 12*i
			lo, _ := u32(b, g)
			hi, _ := u32(b, g+4)
			first, _ := u32(b, g+8)
			if lo > hi || hi > 0x10FFFF || (want != ^uint32(0) && (want < lo || want > hi)) {
				continue
			}
			at := func(code uint32) int {
				gid := uint64(first) + uint64(code-lo)
				if gid > 0xFFFF {
					return 0
				}
				return int(gid)
			}
			if !fn(lo, hi, at) {
				return
			}
		}
	}
}

// glyphNames are the names of the glyphs by the post table (formats 1
// and 2), or an OpenType program's CFF charset; nil if neither has them.
func (f *sfntFont) glyphNames() []string {
	p := f.tables["post"]
	v, _ := u32(p, 0)
	switch v {
	case 0x00010000:
		return macGlyphs()
	case 0x00020000:
	default:
		if c, ok := parseCFF(f.tables["CFF "]); ok {
			return c.glyphNames()
		}
		return nil
	}
	n, ok := u16(p, 32)
	if !ok || 34+2*n > len(p) {
		return nil
	}
	// The names beyond the standard ones: Pascal strings after the
	// indexes, no more than the bytes hold.
	ps := string(p) // the names slice it: one allocation
	var extra []string
	for at := 34 + 2*n; at < len(p) && len(extra) < 0xFFFF; {
		l := int(p[at])
		if at+1+l > len(p) {
			break
		}
		extra = append(extra, ps[at+1:at+1+l])
		at += 1 + l
	}
	mac := macGlyphs()
	names := make([]string, n)
	for i := range n {
		x, _ := u16(p, 34+2*i)
		switch {
		case x < len(mac):
			names[i] = mac[x]
		case x-len(mac) < len(extra):
			names[i] = extra[x-len(mac)]
		}
	}
	return names
}

// glyphText gives the text of each glyph: the first character the
// Unicode cmap maps to it (from U+0020), or the text its post name
// stands for.
func (f *sfntFont) glyphText() []string {
	n := f.numGlyphs
	var names []string
	if n == 0 {
		names = f.glyphNames()
		n = len(names)
	}
	if n == 0 {
		return nil
	}
	text := make([]string, n)
	found := false
	if c := f.unicodeCmap(); c != nil {
		// The characters go into one string, which each glyph's text
		// slices: one allocation, not one a glyph.
		chars := make([]rune, n)
		size := 0
		c.each(func(code uint32, gid int) {
			if code < 0x20 || gid >= n || chars[gid] != 0 || (code >= 0xD800 && code < 0xE000) {
				return
			}
			chars[gid] = rune(code)
			size += utf8.RuneLen(rune(code))
		})
		buf := make([]byte, 0, size)
		for _, r := range chars {
			if r != 0 {
				buf = utf8.AppendRune(buf, r)
			}
		}
		all := string(buf)
		at := 0
		for gid, r := range chars {
			if r != 0 {
				l := utf8.RuneLen(r)
				text[gid] = all[at : at+l]
				at += l
				found = true
			}
		}
	}
	// The glyphs the cmap leaves without text, by their names.
	if names == nil && slices.Contains(text, "") {
		names = f.glyphNames()
	}
	for gid, name := range names {
		if gid < n && text[gid] == "" && name != "" && name != ".notdef" {
			if t := glyphText(name); t != "" {
				text[gid] = t
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return text
}
