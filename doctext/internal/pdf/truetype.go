package pdf

// A CID font in an Identity collection with no ToUnicode map (older
// Office, some PDF libraries) still carries its font program, which says
// what each glyph is: a TrueType program's cmap read backwards (or its
// glyphs' names in the post table), a CFF program's glyph names (its
// charset, when it is not CID-keyed). pdftotext reads such TrueType fonts
// by their cmap too.

const (
	// maxFontFile bounds an embedded font program read for its cmap or
	// charset (decoding counts against the document's budget as well).
	maxFontFile = 16 << 20
	// maxCIDToGID bounds a CIDToGIDMap stream: two bytes a CID.
	maxCIDToGID = 2 << 16
	// maxTrueTypeMaps bounds the programs one document reads for the
	// text of their glyphs (each a pass over up to a million codes of a
	// cmap, a few milliseconds).
	maxTrueTypeMaps = 64
)

// glyphMap is a font program's text by glyph.
type glyphMap struct {
	text   []string // by glyph
	cidGID []byte   // CIDToGIDMap: glyph of each CID, two bytes each; nil: the CID is the glyph
}

func (g *glyphMap) textOf(cid uint32) string {
	gid := cid
	if g.cidGID != nil {
		if int(2*cid+1) >= len(g.cidGID) {
			return ""
		}
		gid = uint32(g.cidGID[2*cid])<<8 | uint32(g.cidGID[2*cid+1])
	}
	if gid >= uint32(len(g.text)) {
		return ""
	}
	return g.text[gid]
}

// programText reads the glyph map of a descendant CIDFontType2 font (or a
// CIDFontType0 one with a CFF program that names its glyphs), or nil.
func (d *Doc) programText(df dict) *glyphMap {
	sub, _ := d.resolve(df["Subtype"]).(name)
	kind, prog := d.fontProgram(d.dictOf(df["FontDescriptor"]))
	if prog == nil || d.trueTypeMaps >= maxTrueTypeMaps {
		return nil
	}
	var text []string
	switch {
	case sub == "CIDFontType2" && kind == "TrueType", kind == "OpenType":
		d.trueTypeMaps++
		data, err := d.streamBytes(prog, maxFontFile)
		if err != nil {
			return nil
		}
		f, err := parseSfnt(data)
		if err != nil {
			return nil
		}
		text = f.glyphText()
	case sub == "CIDFontType0" && (kind == "CIDFontType0C" || kind == "Type1C"):
		d.trueTypeMaps++
		data, err := d.streamBytes(prog, maxFontFile)
		if err != nil {
			return nil
		}
		text = cffGlyphText(data)
	}
	if text == nil {
		return nil
	}
	g := &glyphMap{text: text}
	if m, ok := d.resolve(df["CIDToGIDMap"]).(*stream); ok && sub == "CIDFontType2" {
		var err error
		if g.cidGID, err = d.streamBytes(m, maxCIDToGID); err != nil {
			return nil
		}
	}
	return g
}

// cffGlyphText is the text of a CFF program's glyphs by their names, or
// nil (a CID-keyed program names none).
func cffGlyphText(data []byte) []string {
	c, ok := parseCFF(data)
	if !ok {
		return nil
	}
	names := c.glyphNames()
	text := make([]string, len(names))
	found := false
	for i, n := range names {
		if n != "" && n != ".notdef" {
			if text[i] = glyphText(n); text[i] != "" {
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return text
}
