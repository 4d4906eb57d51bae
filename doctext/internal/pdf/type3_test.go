package pdf

import (
	"fmt"
	"strings"
	"testing"
)

// type3Font is a Type3 font whose glyphs are drawn in a space of 100
// units per em (as TeX's bitmap fonts are, in pixels): its widths say
// how large it really is, the size given to Tf does not.
func type3Font(matrix string) string {
	var widths, diffs []string
	for c := 'a'; c <= 'z'; c++ {
		w := 50
		if c == 'm' {
			w = 80
		}
		widths = append(widths, fmt.Sprint(w))
		diffs = append(diffs, "/"+string(c))
	}
	return fmt.Sprintf("<< /Type /Font /Subtype /Type3 /FontBBox [0 0 100 100] /FontMatrix %s /Resources << >> "+
		"/CharProcs << >> /Encoding << /Type /Encoding /Differences [45 /hyphen 84 /T 97 %s] >> /FirstChar 45 "+
		"/LastChar 122 /Widths [30 %s] >>", matrix, strings.Join(diffs, " "), strings.Join(widthsFrom46(widths), " "))
}

// widthsFrom46 lays the widths out from code 46 to 122: 'T' (84) is 60
// wide, a…z as given, the rest 0.
func widthsFrom46(letters []string) []string {
	var out []string
	for c := 46; c <= 122; c++ {
		switch {
		case c == 84:
			out = append(out, "60")
		case c >= 97:
			out = append(out, letters[c-97])
		default:
			out = append(out, "0")
		}
	}
	return out
}

// TestType3Spacing: the words of a Type3 font are told apart by the gaps
// between them measured against the font's real size (from its glyph
// widths through its FontMatrix), not against the size Tf gives.
func TestType3Spacing(t *testing.T) {
	cases := []struct {
		name, matrix, content, want string
	}{
		{"TJ gaps", "[0.001 0 0 0.001 0 0]",
			"BT /F1 100 Tf 72 700 Td [(T) 10 (ransfer) -40 (high-rate) -40 (balances)] TJ ET", "Transfer high-rate balances"},
		{"strings placed apart", "[0.001 0 0 0.001 0 0]",
			"BT /F1 100 Tf 1 0 0 1 72 700 Tm (Transfer) Tj 1 0 0 1 118 700 Tm (high) Tj ET", "Transfer high"},
		{"a flipped matrix, as dvips writes", "[0.001 0 0 -0.001 0 0]",
			"BT /F1 100 Tf 1 0 0 -1 72 700 Tm [(Transfer) -40 (high-rate) -40 (balances)] TJ ET", "Transfer high-rate balances"},
		{"glyphs in thousandths, as other fonts", "[0.0001 0 0 0.0001 0 0]",
			"BT /F1 1000 Tf 72 700 Td [(Transfer) -40 (high-rate)] TJ 0 -1200 Td (next) Tj ET", "Transfer high-rate\nnext"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := pageText(t, onePageFont([]byte(tc.content), "", type3Font(tc.matrix), nil))
			if info.Text != tc.want {
				t.Errorf("%q, want %q", info.Text, tc.want)
			}
		})
	}
}

// TestType1BuiltinEncoding: a Type1 font that names no encoding is read
// by the one its program declares (TeX's fonts: "fi" at 12, the en dash
// at 123), not by WinAnsi.
func TestType1BuiltinEncoding(t *testing.T) {
	program := "%!PS-AdobeFont-1.0: CMR10 003.002\n/FontName /CMR10 def\n/Encoding 256 array\n" +
		"0 1 255 {1 index exch /.notdef put} for\ndup 12 /fi put\ndup 65 /A put\ndup 66 /B put\ndup 100 /d put\n" +
		"dup 110 /n put\ndup 123 /endash put\nreadonly def\ncurrentfile eexec\n\x8a\x01\xff binary"
	cases := []struct{ name, font, want string }{
		{"no encoding", "<< /Type /Font /Subtype /Type1 /BaseFont /CMR10 /FontDescriptor 9 0 R >>", "find A – B"},
		{"Differences over the program's", "<< /Type /Font /Subtype /Type1 /BaseFont /CMR10 /FontDescriptor 9 0 R " +
			"/Encoding << /Differences [66 /C] >> >>", "find A – C"},
		{"a named encoding wins", "<< /Type /Font /Subtype /Type1 /BaseFont /CMR10 /FontDescriptor 9 0 R " +
			"/Encoding /WinAnsiEncoding >>", "nd A { B"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := onePageFont([]byte("BT /F1 10 Tf 72 700 Td [(\\014nd) -333 (A) -333 (\\173) -333 (B)] TJ ET"), "", tc.font, nil)
			data = appendObject(t, data, 9, fmt.Sprintf("<< /Type /FontDescriptor /FontName /CMR10 /FontFile 10 0 R >>"))
			data = appendObject(t, data, 10, fmt.Sprintf("<< /Length1 %d /Length %d >>\nstream\n%s\nendstream",
				strings.Index(program, "\x8a"), len(program), program))
			if info := pageText(t, data); info.Text != tc.want {
				t.Errorf("%q, want %q", info.Text, tc.want)
			}
		})
	}
}
