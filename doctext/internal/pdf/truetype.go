package pdf

import (
	"golang.org/x/image/font/sfnt"
)

// A CID font in an Identity collection with no ToUnicode map (older
// Office, some PDF libraries) still carries its TrueType program, whose
// cmap says which glyph draws which character: read backwards, it gives
// the text of each glyph, as pdftotext reads such fonts.

const (
	// maxFontFile bounds an embedded TrueType program read for its cmap
	// (decoding counts against the document's budget as well).
	maxFontFile = 16 << 20
	// maxCIDToGID bounds a CIDToGIDMap stream: two bytes a CID.
	maxCIDToGID = 2 << 16
	// maxTrueTypeMaps bounds the programs one document has read
	// backwards (each a pass over 64 Ki characters, a few milliseconds).
	maxTrueTypeMaps = 64
)

// glyphMap is a TrueType program's characters by glyph.
type glyphMap struct {
	text   map[uint16]rune
	cidGID []byte // CIDToGIDMap: glyph of each CID, two bytes each; nil: the CID is the glyph
}

func (g *glyphMap) textOf(cid uint32) string {
	gid := cid
	if g.cidGID != nil {
		if int(2*cid+1) >= len(g.cidGID) {
			return ""
		}
		gid = uint32(g.cidGID[2*cid])<<8 | uint32(g.cidGID[2*cid+1])
	}
	if gid > 0xFFFF {
		return ""
	}
	if r, ok := g.text[uint16(gid)]; ok {
		return string(r)
	}
	return ""
}

// trueTypeText reads the glyph map of a descendant CIDFontType2 font, or
// nil.
func (d *Doc) trueTypeText(df dict) *glyphMap {
	if sub, _ := d.resolve(df["Subtype"]).(name); sub != "CIDFontType2" {
		return nil
	}
	s, ok := d.resolve(d.dictOf(df["FontDescriptor"])["FontFile2"]).(*stream)
	if !ok || d.trueTypeMaps >= maxTrueTypeMaps {
		return nil
	}
	d.trueTypeMaps++
	data, err := d.streamBytes(s, maxFontFile)
	if err != nil {
		return nil
	}
	f, err := sfnt.Parse(data)
	if err != nil {
		return nil
	}
	g := &glyphMap{text: map[uint16]rune{}}
	var buf sfnt.Buffer
	// The Basic Multilingual Plane, backwards; the first character a
	// glyph draws wins (the cmap maps some glyphs from several).
	for r := rune(0x20); r <= 0xFFFF; r++ {
		if r >= 0xD800 && r < 0xE000 {
			continue
		}
		if r&0xFFF == 0 && d.stopped() != nil {
			return nil
		}
		gid, err := f.GlyphIndex(&buf, r)
		if err != nil || gid == 0 {
			continue
		}
		if _, ok := g.text[uint16(gid)]; !ok {
			g.text[uint16(gid)] = r
		}
	}
	if len(g.text) == 0 {
		return nil
	}
	if m, ok := d.resolve(df["CIDToGIDMap"]).(*stream); ok {
		if g.cidGID, err = d.streamBytes(m, maxCIDToGID); err != nil {
			return nil
		}
	}
	return g
}
