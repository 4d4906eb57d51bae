package pdf

import (
	"strings"
	"testing"
)

// BenchmarkFontNames: 20 pages in a simple font without ToUnicode whose
// Differences name its glyphs by the glyph list, uniXXXX, ligatures,
// variants and names nobody knows (read as the codes themselves).
func BenchmarkFontNames(b *testing.B) {
	var diffs strings.Builder
	diffs.WriteString("[65")
	for c := 'A'; c <= 'Z'; c++ {
		switch {
		case c%4 == 0:
			diffs.WriteString(" /uni00" + strings.ToUpper(string("0123456789abcdef"[(c+32)>>4])) + strings.ToUpper(string("0123456789abcdef"[(c+32)&15])))
		case c%4 == 1:
			diffs.WriteString(" /" + string(c+32) + ".sc")
		case c%4 == 2:
			diffs.WriteString(" /glyph" + string(c))
		default:
			diffs.WriteString(" /" + string(c+32))
		}
	}
	diffs.WriteString(" 1 /f_f_i /fi /eacute]")
	font := "<< /Type /Font /Subtype /Type1 /BaseFont /Unknown /Encoding << /Differences " + diffs.String() + " >> >>"
	line := "(THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG \\001\\002\\003)"
	benchRead(b, bookPDF(20, font, func(int) string { return line }))
}
