package pdf

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// identityTrueType is a page in a CIDFontType2 font of the Identity
// collection with no ToUnicode map: the Go font embedded, shown by glyph
// (CID = glyph, or through a CIDToGIDMap that shifts each CID by one).
func identityTrueType(t *testing.T, text string, shifted bool) []byte {
	t.Helper()
	f, err := sfnt.Parse(goregular.TTF)
	if err != nil {
		t.Fatal(err)
	}
	var hex strings.Builder
	gids := map[uint16]bool{}
	for _, r := range text {
		gid, err := f.GlyphIndex(nil, r)
		if err != nil || gid == 0 {
			t.Fatalf("%q: %v", r, err)
		}
		gids[uint16(gid)] = true
		cid := uint16(gid)
		if shifted {
			cid--
		}
		fmt.Fprintf(&hex, "%04X", cid)
	}
	font := "<< /Type /Font /Subtype /Type0 /BaseFont /GoRegular /Encoding /Identity-H /DescendantFonts [<< /Type /Font " +
		"/Subtype /CIDFontType2 /BaseFont /GoRegular /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> " +
		"/FontDescriptor 9 0 R /DW 600 %s >>] >>"
	cidToGID := ""
	if shifted {
		cidToGID = "/CIDToGIDMap 11 0 R"
	}
	data := onePageFont([]byte("BT /F1 12 Tf 72 700 Td <"+hex.String()+"> Tj ET"), "", fmt.Sprintf(font, cidToGID), nil)
	data = appendObject(t, data, 9, "<< /Type /FontDescriptor /FontName /GoRegular /FontFile2 10 0 R >>")
	z := doctexttest.Deflate(goregular.TTF)
	data = appendObject(t, data, 10, fmt.Sprintf("<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", len(z), z))
	if shifted {
		m := make([]byte, 2*2048)
		for cid := range 2047 {
			m[2*cid], m[2*cid+1] = byte((cid+1)>>8), byte(cid+1)
		}
		data = appendObject(t, data, 11, fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(m), m))
	}
	return data
}

// TestIdentityTrueTypeWithoutToUnicode: the glyphs of such a font read by
// its program's cmap, backwards.
func TestIdentityTrueTypeWithoutToUnicode(t *testing.T) {
	for _, shifted := range []bool{false, true} {
		info := pageText(t, identityTrueType(t, "Glyphs café", shifted))
		if info.Text != "Glyphs café" || info.Unmapped != 0 {
			t.Errorf("shifted %v: %q (%d unmapped)", shifted, info.Text, info.Unmapped)
		}
	}
}

func BenchmarkIdentityTrueType(b *testing.B) {
	t := &testing.T{}
	benchRead(b, identityTrueType(t, strings.Repeat("Glyphs café ", 20), false))
}
