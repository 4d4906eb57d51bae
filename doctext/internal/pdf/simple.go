package pdf

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The text of a simple font (Type1, TrueType, Type3) without a ToUnicode
// map, as pdftotext reads it (poppler's Gfx8BitFont): each code has a
// glyph name, from the font's /Encoding (a predefined encoding, then its
// Differences), else from the encoding its program declares (a Type1 or
// CFF program), else from the default (Symbol's and ZapfDingbats' own;
// WinAnsi for TrueType and fonts not embedded; Standard for the rest,
// Type1 and Type3); the name's text comes
// from the Adobe Glyph List and its conventions. Where that leaves a code
// without text, a TrueType program's cmap and post table say which glyph
// it draws and what that glyph is; and where some name was unknown,
// pdftotext takes the code as the character itself, and so does botd.

// maxFontProgram bounds what is read of an embedded Type1 program for its
// encoding, which comes first, in its clear-text part.
const maxFontProgram = 64 << 10

// fontProgram is the embedded program of a font descriptor: its kind
// ("Type1", "TrueType", "Type1C", "OpenType", "CIDFontType0C") and stream.
func (d *Doc) fontProgram(fdesc dict) (string, *stream) {
	if s, ok := d.resolve(fdesc["FontFile"]).(*stream); ok {
		return "Type1", s
	}
	if s, ok := d.resolve(fdesc["FontFile2"]).(*stream); ok {
		return "TrueType", s
	}
	if s, ok := d.resolve(fdesc["FontFile3"]).(*stream); ok {
		sub, _ := d.resolve(s.d["Subtype"]).(name)
		return string(sub), s
	}
	return "", nil
}

// base14 tells whether a font not embedded is one of the standard 14
// (or a name producers use for one), and which encoding it has of its
// own: Symbol, ZapfDingbats, or Standard.
func base14(base string) (string, bool) {
	b := strings.ReplaceAll(base, " ", "")
	switch {
	case strings.HasPrefix(b, "Symbol"):
		return "Symbol", true
	case strings.HasPrefix(b, "ZapfDingbats"):
		return "ZapfDingbats", true
	}
	for _, fam := range []string{"Arial", "Courier", "Helvetica", "Times"} {
		if strings.HasPrefix(b, fam) {
			return "Standard", true
		}
	}
	return "", false
}

// simpleEncoding is the text of each code of a simple font, and what
// fills in the codes it leaves without text (nil: nothing can).
func (d *Doc) simpleEncoding(fd dict, sub, base name) (*[256]string, func(*[256]string)) {
	fdesc := d.dictOf(fd["FontDescriptor"])
	kind, prog := d.fontProgram(fdesc)
	zapf := strings.HasSuffix(string(base), "ZapfDingbats")
	var names *[256]string
	var diffs array
	if zapf {
		names = encodingByName("ZapfDingbats")
	}
	switch e := d.resolve(fd["Encoding"]).(type) {
	case name:
		if names == nil {
			names = predefinedSimple(e)
		}
	case dict:
		if b, ok := d.resolve(e["BaseEncoding"]).(name); ok && names == nil {
			names = predefinedSimple(b)
		}
		diffs, _ = d.resolve(e["Differences"]).(array)
	}
	if names == nil && prog != nil {
		// The program's own: TeX's fonts put "fi" at 12 and dashes at 123.
		switch kind {
		case "Type1":
			names = d.type1Encoding(prog)
		case "Type1C":
			if d.trueTypeMaps >= maxTrueTypeMaps {
				break
			}
			d.trueTypeMaps++
			if data, err := d.streamBytes(prog, maxFontFile); err == nil {
				if c, ok := parseCFF(data); ok {
					names = c.encoding()
				}
			}
		}
	}
	if names == nil {
		b14, ok := base14(string(base))
		switch {
		case ok && prog == nil && b14 != "Standard":
			names = encodingByName(b14)
		case sub == "TrueType" || (prog == nil && sub != "Type3"):
			// A font not embedded is read by WinAnsi, where pdftotext
			// reads the standard fonts by StandardEncoding: the two agree
			// on letters and digits, and the bytes over 127 of the files
			// that name no encoding are meant as Windows' (é, not Ø).
			names = encodingByName("WinAnsi")
		default:
			names = encodingByName("Standard")
		}
	}
	if len(diffs) > 0 {
		t := *names
		names = &t
		code := -1
		for _, v := range diffs {
			switch v := d.resolve(v).(type) {
			case int64:
				code = int(v)
			case float64:
				code = int(v)
			case name:
				if code >= 0 && code < 256 {
					t[code] = string(v)
					code++
				}
			}
		}
	}
	var text *[256]string
	missing, numeric, hex := false, false, false
	for n, t := range encodingNames() {
		if t == names {
			text = encodingTexts()[n] // a predefined encoding as it is: shared
		}
	}
	if text == nil {
		hex = hexNames(names)
		numeric = d.numericNames(diffs, hex)
		text, missing = namesText(names, zapf)
	}
	trueType := kind == "TrueType" || kind == "OpenType"
	if !missing && (!trueType || !holes(text)) {
		return text, nil
	}
	// The rest is done when a code without text is first shown: most
	// fonts never show one, and reading their program costs.
	return text, func(text *[256]string) {
		// The glyph a TrueType program draws, when it says what it is,
		// before guesses from the names ("g42" is not "*").
		if trueType {
			d.trueTypeFill(text, names, prog)
		}
		if !missing {
			return
		}
		if numeric {
			for code, n := range names {
				if text[code] == "" && n != "" && n != ".notdef" {
					text[code] = parseCharName(n, false, true, true, hex, true, 0)
				}
			}
		}
		// pdftotext's pass-through: an unknown name's code is taken as
		// the character (control codes aside, which show nothing).
		for code := 0x20; code < 256; code++ {
			if text[code] == "" && code != 0x7f {
				text[code] = latin1()[code]
			}
		}
	}
}

// latin1 is each code as the character of that number.
var latin1 = sync.OnceValue(func() *[256]string {
	var t [256]string
	var b strings.Builder
	for c := range 256 {
		b.WriteRune(rune(c))
	}
	all := b.String()
	at := 0
	for c := range 256 {
		l := utf8.RuneLen(rune(c))
		t[c] = all[at : at+l]
		at += l
	}
	return &t
})

// holes tells whether a table leaves a printable code without text.
func holes(t *[256]string) bool {
	for code := 1; code < 256; code++ {
		if t[code] == "" {
			return true
		}
	}
	return false
}

func predefinedSimple(n name) *[256]string {
	switch n {
	case "WinAnsiEncoding":
		return encodingByName("WinAnsi")
	case "MacRomanEncoding":
		return encodingByName("MacRoman")
	case "MacExpertEncoding":
		return encodingByName("MacExpert")
	case "StandardEncoding":
		return encodingByName("Standard")
	}
	return nil
}

// trueTypeFill gives the codes still without text the text of the glyph
// a TrueType program draws for them, found as pdftotext finds the glyph
// (poppler's getCodeToGIDMap): by the glyph's name in the post table;
// by the code in the Microsoft Symbol cmap (also at 0xF000 on) or in the
// Macintosh one; then that glyph's character in the Unicode cmap, or its
// post name's.
func (d *Doc) trueTypeFill(text, names *[256]string, prog *stream) {
	if d.trueTypeMaps >= maxTrueTypeMaps {
		return
	}
	d.trueTypeMaps++
	data, err := d.streamBytes(prog, maxFontFile)
	if err != nil {
		return
	}
	f, err := parseSfnt(data)
	if err != nil {
		return
	}
	glyphs := f.glyphText()
	if glyphs == nil {
		return
	}
	var byName map[string]int
	post := f.glyphNames()
	sym, mac := f.cmap(3, 0), f.cmap(1, 0)
	for code := range 256 {
		if text[code] != "" {
			continue
		}
		gid := 0
		if n := names[code]; n != "" && n != ".notdef" && len(post) > 0 {
			if byName == nil {
				byName = make(map[string]int, len(post))
				for g, pn := range post {
					if _, ok := byName[pn]; !ok && pn != "" {
						byName[pn] = g
					}
				}
			}
			gid = byName[n]
		}
		if gid == 0 && sym != nil {
			if gid = sym.glyph(uint32(code)); gid == 0 {
				gid = sym.glyph(0xF000 + uint32(code))
			}
		}
		if gid == 0 && mac != nil {
			gid = mac.glyph(uint32(code))
		}
		if gid > 0 && gid < len(glyphs) {
			text[code] = glyphs[gid]
		}
	}
}

var type1Dup = regexp.MustCompile(`dup\s+(\d{1,3})\s*/([^\s/\[\]{}()<>%]+)\s+put`)

// type1Encoding is the encoding an embedded Type1 font program declares,
// by glyph names, or nil.
func (d *Doc) type1Encoding(s *stream) *[256]string {
	r, err := d.streamReader(s)
	if err != nil {
		return nil
	}
	n := int64(maxFontProgram)
	if l1, ok := d.intOf(s.d["Length1"]); ok && l1 > 0 && l1 < n {
		n = l1
	}
	text, _ := io.ReadAll(io.LimitReader(r, n))
	i := bytes.Index(text, []byte("/Encoding"))
	if i < 0 {
		return nil
	}
	text = text[i:]
	if bytes.HasPrefix(bytes.TrimSpace(text[len("/Encoding"):]), []byte("StandardEncoding")) {
		return encodingByName("Standard")
	}
	if end := bytes.Index(text, []byte("readonly def")); end > 0 {
		text = text[:end]
	} else if end := bytes.Index(text, []byte("currentfile eexec")); end > 0 {
		text = text[:end]
	}
	var t [256]string
	found := false
	for _, m := range type1Dup.FindAllSubmatch(text, 256) {
		code, err := strconv.Atoi(string(m[1]))
		if err != nil || code > 255 {
			continue
		}
		t[code] = string(m[2])
		found = true
	}
	if !found {
		return nil
	}
	return &t
}
