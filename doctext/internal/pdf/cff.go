package pdf

// A reader of what a CFF font program (FontFile3 /Type1C, Adobe TN 5176)
// says of its glyphs' names: its charset (glyph to name) and its built-in
// encoding (code to glyph). The bytes are the document's: every INDEX,
// offset and count is checked against them, and nothing is allocated by a
// count beyond what the bytes can hold.

const maxCFFGlyphs = 1 << 16

type cffFont struct {
	data    []byte
	strings [][]byte // the String INDEX
	nGlyphs int
	cid     bool // CID-keyed: the charset gives CIDs, not names
	charset int  // offset, or 0…2 for the predefined ones
	enc     int  // offset, or 0 (Standard) or 1 (Expert)
}

// cffIndex reads an INDEX at off: its entries and where it ends.
func cffIndex(b []byte, off int) ([][]byte, int, bool) {
	count, ok := u16(b, off)
	if !ok {
		return nil, 0, false
	}
	if count == 0 {
		return nil, off + 2, true
	}
	if off+3 > len(b) {
		return nil, 0, false
	}
	osz := int(b[off+2])
	if osz < 1 || osz > 4 {
		return nil, 0, false
	}
	offs := off + 3
	data := offs + (count+1)*osz - 1 // offsets count from the byte before the data
	if data >= len(b) || data < 0 {
		return nil, 0, false
	}
	offAt := func(i int) int {
		v := 0
		for j := range osz {
			v = v<<8 | int(b[offs+i*osz+j])
		}
		return v
	}
	items := make([][]byte, 0, min(count, (len(b)-data)+1))
	prev := offAt(0)
	for i := 1; i <= count; i++ {
		cur := offAt(i)
		if prev < 1 || cur < prev || data+cur > len(b) {
			return nil, 0, false
		}
		items = append(items, b[data+prev:data+cur])
		prev = cur
	}
	return items, data + prev, true
}

// parseCFF reads the header, the first font's Top DICT and the strings.
func parseCFF(b []byte) (*cffFont, bool) {
	if len(b) < 4 || b[0] != 1 {
		return nil, false
	}
	_, next, ok := cffIndex(b, int(b[2])) // Name INDEX
	if !ok {
		return nil, false
	}
	tops, next, ok := cffIndex(b, next)
	if !ok || len(tops) == 0 {
		return nil, false
	}
	strs, _, ok := cffIndex(b, next)
	if !ok {
		return nil, false
	}
	f := &cffFont{data: b, strings: strs}
	charStrings := -1
	var ops []int
	top := tops[0]
	for i := 0; i < len(top); {
		c := top[i]
		switch {
		case c == 12: // two-byte operator
			if i+1 < len(top) && top[i+1] == 30 {
				f.cid = true
			}
			i += 2
			ops = ops[:0]
			continue
		case c <= 21:
			last := 0
			if len(ops) > 0 {
				last = ops[len(ops)-1]
			}
			switch c {
			case 15:
				f.charset = last
			case 16:
				f.enc = last
			case 17:
				charStrings = last
			}
			ops = ops[:0]
			i++
			continue
		case c == 28:
			if i+3 > len(top) {
				return nil, false
			}
			ops = append(ops, int(int16(uint16(top[i+1])<<8|uint16(top[i+2]))))
			i += 3
		case c == 29:
			if i+5 > len(top) {
				return nil, false
			}
			ops = append(ops, int(int32(uint32(top[i+1])<<24|uint32(top[i+2])<<16|uint32(top[i+3])<<8|uint32(top[i+4]))))
			i += 5
		case c == 30: // a real: nibbles up to 0xf
			i++
			for i < len(top) && top[i]&0x0f != 0x0f && top[i]&0xf0 != 0xf0 {
				i++
			}
			i++
			ops = append(ops, 0)
		case c >= 32 && c <= 246:
			ops = append(ops, int(c)-139)
			i++
		case c >= 247 && c <= 250:
			if i+2 > len(top) {
				return nil, false
			}
			ops = append(ops, (int(c)-247)*256+int(top[i+1])+108)
			i += 2
		case c >= 251 && c <= 254:
			if i+2 > len(top) {
				return nil, false
			}
			ops = append(ops, -(int(c)-251)*256-int(top[i+1])-108)
			i += 2
		default:
			i++
		}
		if len(ops) > 48 {
			return nil, false
		}
	}
	if charStrings <= 0 {
		return nil, false
	}
	cs, ok := u16(b, charStrings)
	if !ok {
		return nil, false
	}
	f.nGlyphs = min(cs, maxCFFGlyphs)
	return f, true
}

// sidName is the name a string ID stands for.
func (f *cffFont) sidName(sid int) string {
	std := cffStandard()
	if sid < len(std) {
		return std[sid]
	}
	if i := sid - len(std); i < len(f.strings) {
		return string(f.strings[i])
	}
	return ""
}

// glyphSIDs are the string IDs of the glyphs (for a CID-keyed font,
// their CIDs), by the charset; nil if it cannot be read.
func (f *cffFont) glyphSIDs() []int {
	n := f.nGlyphs
	if n == 0 {
		return nil
	}
	sids := make([]int, n)
	switch f.charset {
	case 0: // ISOAdobe: glyph i is SID i
		for i := range min(n, 229) {
			sids[i] = i
		}
		return sids
	case 1, 2: // Expert charsets: no text of ours
		return nil
	}
	b := f.data
	at := f.charset
	if at < 0 || at >= len(b) {
		return nil
	}
	format := b[at]
	at++
	gid := 1
	switch format {
	case 0:
		for ; gid < n; gid++ {
			sid, ok := u16(b, at)
			if !ok {
				break
			}
			sids[gid] = sid
			at += 2
		}
	case 1, 2:
		for gid < n {
			first, ok := u16(b, at)
			if !ok {
				break
			}
			var left int
			if format == 1 {
				if at+2 >= len(b) {
					break
				}
				left = int(b[at+2])
				at += 3
			} else {
				if left, ok = u16(b, at+2); !ok {
					break
				}
				at += 4
			}
			for j := 0; j <= left && gid < n; j++ {
				sids[gid] = first + j
				gid++
			}
		}
	default:
		return nil
	}
	return sids
}

// encoding is the program's built-in encoding by glyph names (nil for a
// CID-keyed font or one that cannot be read); codes it leaves empty are
// StandardEncoding's, as pdftotext fills them in.
func (f *cffFont) encoding() *[256]string {
	if f.cid {
		return nil
	}
	std := encodingByName("Standard")
	t := *std
	switch f.enc {
	case 0:
		return &t
	case 1:
		return nil // Expert: not for text
	}
	sids := f.glyphSIDs()
	if sids == nil {
		return nil
	}
	var codeGID [256]int
	b := f.data
	at := f.enc
	if at < 0 || at >= len(b) {
		return nil
	}
	format := b[at]
	at++
	switch format & 0x7f {
	case 0:
		if at >= len(b) {
			return nil
		}
		n := int(b[at])
		at++
		for gid := 1; gid <= n && at < len(b); gid++ {
			codeGID[b[at]] = gid
			at++
		}
	case 1:
		if at >= len(b) {
			return nil
		}
		n := int(b[at])
		at++
		gid := 1
		for range n {
			if at+1 >= len(b) {
				break
			}
			first, left := int(b[at]), int(b[at+1])
			at += 2
			for j := 0; j <= left && first+j < 256; j++ {
				codeGID[first+j] = gid
				gid++
			}
		}
	default:
		return nil
	}
	for code, gid := range codeGID {
		if gid > 0 && gid < len(sids) {
			if n := f.sidName(sids[gid]); n != "" {
				t[code] = n
			}
		}
	}
	if format&0x80 != 0 && at < len(b) {
		n := int(b[at])
		at++
		for range n {
			sid, ok := u16(b, at+1)
			if !ok {
				break
			}
			if nm := f.sidName(sid); nm != "" {
				t[b[at]] = nm
			}
			at += 3
		}
	}
	return &t
}

// glyphNames are the names of the glyphs of a font that is not
// CID-keyed, by its charset.
func (f *cffFont) glyphNames() []string {
	if f.cid {
		return nil
	}
	sids := f.glyphSIDs()
	names := make([]string, len(sids))
	for i, sid := range sids {
		if i > 0 {
			names[i] = f.sidName(sid)
		}
	}
	return names
}
