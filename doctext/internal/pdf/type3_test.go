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
