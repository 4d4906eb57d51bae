package pdf

import (
	"bytes"
	"context"
	"testing"
)

func TestLayout(t *testing.T) {
	helv := "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
	cases := []struct {
		name, font, content string
		want                string
		images              int
	}{
		{"a line per Td", helv, "BT /F1 10 Tf 12 TL 72 700 Td (one) Tj 0 -12 Td (two) Tj T* (three) Tj ET", "one\ntwo\nthree", 0},
		{"TJ: kerning stays in the word, a wide gap is a space", helv, "BT /F1 10 Tf [(Wo) 80 (rld) -400 (again)] TJ ET", "World again", 0},
		{"strings placed apart on one line", helv, "BT /F1 10 Tf 1 0 0 1 72 700 Tm (left) Tj 1 0 0 1 300 700 Tm (right) Tj ET", "left right", 0},
		{"strings placed next to each other", helv, "BT /F1 10 Tf 72 700 Td (to) Tj 11.12 0 Td (gether) Tj ET", "together", 0},
		{"character spacing opens a word gap", helv, "BT /F1 10 Tf 3.2 Tc (ab) Tj ET", "a b", 0},
		{"word spacing takes a space back", helv, "BT /F1 10 Tf -5.5 Tw (Typ es) Tj ET", "Types", 0},
		{"spacing after the last glyph moves the pen only", helv,
			"BT /F1 10 Tf 72 700 Td 300 Tc (5) Tj 0 Tc 5.56 0 Td (1) Tj ET", "51", 0},
		{"rotated text reads along its baseline", helv, "BT /F1 10 Tf 0 1 -1 0 100 100 Tm (up) Tj (wards) Tj ET", "upwards", 0},
		{"scaled by cm", helv, "q 0.1 0 0 0.1 0 0 cm BT /F1 100 Tf 720 7000 Td (big) Tj 0 -120 Td (next) Tj ET Q", "big\nnext", 0},
		{"an inline image is skipped, EI inside its data too", helv,
			"BT /F1 10 Tf 72 700 Td (before) Tj ET BI /W 4 /H 1 /BPC 8 /CS /G ID abEIcd EI BT /F1 10 Tf 72 680 Td (after) Tj ET",
			"before\nafter", 1},
		{"Differences by glyph names", "<< /Type /Font /Subtype /Type1 /BaseFont /X /Encoding << /BaseEncoding /WinAnsiEncoding " +
			"/Differences [65 /fi /uni00E9 /eacute.sc /f_f_l /quoteright] >> >>", "BT /F1 10 Tf (ABCDE) Tj ET", "fiééffl’", 0},
		{"MacRoman", "<< /Type /Font /Subtype /Type1 /BaseFont /X /Encoding /MacRomanEncoding >>", "BT /F1 10 Tf (caf\\216) Tj ET", "café", 0},
		{"WinAnsi by default", helv, "BT /F1 10 Tf (caf\\351 \\200) Tj ET", "café €", 0},
		{"control characters dropped", helv, "BT /F1 10 Tf (a\\001b) Tj ET", "ab", 0},
		{"a justified line's narrow spaces are spaces", helv, "BT /F1 10 Tf [(If) -166 (you) -166 (are)] TJ ET", "If you are", 0},
		{"a word broken at the end of a line is one word", helv,
			"BT /F1 10 Tf 12 TL 72 700 Td (a sec-) Tj T* (tion and a well-) Tj T* (Known) Tj ET", "a section and a well-\nKnown", 0},
		{"a bad token loses itself only", helv, "BT /F1 10 Tf (one) Tj ) > 0 -12 Td (two) Tj ET", "one\ntwo", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := onePageFont([]byte(tc.content), "", tc.font, nil)
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			info, err := d.PageText(context.Background(), 1, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if info.Text != tc.want || info.Images != tc.images {
				t.Errorf("%q (%d images), want %q (%d)", info.Text, info.Images, tc.want, tc.images)
			}
		})
	}
}

func TestGlyphText(t *testing.T) {
	cases := map[string]string{
		"A": "A", "eacute": "é", "uni20AC": "€", "uni00660069": "fi", "u1F600": "😀", "a.sc": "a",
		"f_f_i": "ffi", "nosuchglyph": "", "g123": "", "Euro": "€", "quotedblleft": "“",
	}
	for n, want := range cases {
		if got := glyphText(n); got != want {
			t.Errorf("glyphText(%q) = %q, want %q", n, got, want)
		}
	}
}

func TestBudget(t *testing.T) {
	data := onePage([]byte("BT /F1 10 Tf (0123456789) Tj ET"), "", nil)
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.PageText(context.Background(), 1, 4)
	if err != nil || info.Text != "0123" || !info.Cut {
		t.Errorf("%+v %v", info, err)
	}
	if _, err := d.PageText(context.Background(), 2, 4); err == nil {
		t.Error("page 2 of 1")
	}
}
