package doctext

import (
	"strings"
	"testing"
)

func TestNumFmt(t *testing.T) {
	cases := []struct {
		code string
		v    float64
		want string
	}{
		// General: 15 significant digits, no float noise.
		{"General", 1.0999999999999996, "1.1"},
		{"General", 0.1 + 0.2, "0.3"},
		{"General", 1200.5, "1200.5"},
		{"General", -42, "-42"},
		{"General", 123456789012345678, "1.23456789012346E+17"},
		{"General", 1e-12, "1E-12"},
		{"", 3, "3"},
		// Numbers, separators, scales.
		{"0", 2.5, "3"},
		{"0.00", 1.005, "1.01"},
		{"0.00", 0.004, "0.00"},
		{"0.00", 0.005, "0.01"},
		{"0", 0.4, "0"},
		{"0.0", 99.96, "100.0"},
		{"0.00", 1.0999999999999996, "1.10"},
		{"#,##0", 1234567.8, "1,234,568"},
		{"#,##0.00", -1234.5, "-1,234.50"},
		{"#,##0.00;(#,##0.00)", -1234.5, "(1,234.50)"},
		{"#,##0.00;[Red]-#,##0.00;\"zero\"", 0, "zero"},
		{"#,##0,", 1234567, "1,235"},
		{"0.0,,\" M\"", 12345678, "12.3 M"},
		{"#.##", 0.5, ".5"},
		{"0.##", 3, "3."},
		{"000-00-0000", 123456789, "123-45-6789"},
		{"00000", 123, "00123"},
		// Percentages, currencies.
		{"0%", 0.256, "26%"},
		{"0.00%", 0.0125, "1.25%"},
		{`"$"#,##0.00_);("$"#,##0.00)`, 1234.5, "$1,234.50"},
		{`"$"#,##0.00_);("$"#,##0.00)`, -1234.5, "($1,234.50)"},
		{`#,##0.00\ [$€-407]`, 99.5, "99.50 €"},
		{`[$£-809]#,##0.00`, 1000, "£1,000.00"},
		{`_-* #,##0.00\ "kr"_-;\-* #,##0.00\ "kr"_-;_-* "-"??\ "kr"_-;_-@_-`, -5, "-5.00 kr"},
		{`_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_);_(@_)`, 0, "$-"},
		// Scientific, fractions.
		{"0.00E+00", 12345, "1.23E+04"},
		{"0.00E+00", 0.000123, "1.23E-04"},
		{"##0.0E+0", 12345, "12.3E+3"},
		{"# ?/?", 1.5, "1 1/2"},
		{"# ??/??", 3.14159, "3 14/99"},
		{"?/4", 0.75, "3/4"},
		// Conditions.
		{`[<1000]0" g";0.0,\ "kg"`, 950, "950 g"},
		{`[<1000]0" g";0.0,\ "kg"`, 2500, "2.5 kg"},
		// Dates: 1900 system (17175 is 1947-01-08).
		{"yyyy-mm-dd", 17175, "1947-01-08"},
		{"d/m/yyyy", 45292, "1/1/2024"},
		{"dddd, mmmm d, yyyy", 45292, "Monday, January 1, 2024"},
		{"ddd d mmm yy", 45292, "Mon 1 Jan 24"},
		{"mmmmm", 45292, "J"},
		{"yyyy-mm-dd", 60, "1900-02-29"},
		{"yyyy-mm-dd", 61, "1900-03-01"},
		{"yyyy-mm-dd", 1, "1900-01-01"},
		// Times and date-times.
		{"h:mm", 0.5, "12:00"},
		{"hh:mm:ss", 0.75 + 1.0/86400, "18:00:01"},
		{"h:mm AM/PM", 0.75, "6:00 PM"},
		{"h:mm a/p", 0.25, "6:00 a"},
		{"yyyy-mm-dd hh:mm", 45292.5, "2024-01-01 12:00"},
		{"[h]:mm:ss", 1.5, "36:00:00"},
		{"mm:ss.0", 1.0 / 86400 * 61.25, "01:01.3"},
		{"m/d/yy h:mm", 45292.999999, "1/2/24 0:00"},
		// Text, hidden, literal only.
		{"@", 12.5, "12.5"},
		{";;;", 5, ""},
		{`"Total: "0`, 7, "Total: 7"},
		// Unknown or broken codes: General.
		{`"unclosed`, 1.0999999999999996, "1.1"},
		{"[h", 2, "2"},
		{"zzz0", 2, "2"},
		{strings.Repeat("0", 300), 2, "2"},
		{"yyyy-mm-dd", -1, "-1"},
		{"yyyy-mm-dd", 1e9, "1000000000"},
	}
	for _, tc := range cases {
		if got := parseNumFmt(tc.code).format(tc.v, false); got != tc.want {
			t.Errorf("%q of %v: got %q, want %q", tc.code, tc.v, got, tc.want)
		}
	}
}

func TestNumFmtDate1904(t *testing.T) {
	// The same day in the two systems: 1462 days apart.
	f := parseNumFmt("yyyy-mm-dd")
	if got := f.format(45292-1462, true); got != "2024-01-01" {
		t.Errorf("1904 system: %q", got)
	}
	if got := f.format(0, true); got != "1904-01-01" {
		t.Errorf("1904 day 0: %q", got)
	}
}

func TestBestFraction(t *testing.T) {
	cases := []struct {
		x        float64
		max      int
		num, den int
	}{
		{0.5, 9, 1, 2}, {0.14159, 99, 14, 99}, {0.14159265, 999, 16, 113}, {0.333, 9, 1, 3},
		{0.75, 4, 3, 4}, {0, 9, 0, 1}, {0.999, 9, 1, 1}, {0.3, 9, 2, 7},
	}
	for _, tc := range cases {
		// Against the search it replaces.
		bn, bd, best := 0, 1, tc.x
		for d := 1; d <= tc.max; d++ {
			n := int(tc.x*float64(d) + 0.5)
			if e := tc.x - float64(n)/float64(d); e*e < best*best-1e-18 {
				bn, bd, best = n, d, max(e, -e)
			}
		}
		n, d := bestFraction(tc.x, tc.max)
		if n*bd != bn*d || n*tc.den != tc.num*d {
			t.Errorf("%v (≤%d): got %d/%d, search %d/%d, want %d/%d", tc.x, tc.max, n, d, bn, bd, tc.num, tc.den)
		}
	}
}
