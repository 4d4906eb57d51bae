package pdf

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// layoutPDF is a one-page document in Helvetica whose page dictionary
// has extra entries (a /Rotate) and whose content is as given.
func layoutPDF(content, pageExtra string) []byte {
	w := doctexttest.NewPDF(false)
	cat, tree, pg, c, font := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	w.Obj(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	w.Stream(c, "", []byte(content))
	w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] %s /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>",
		tree, pageExtra, c, font))
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", pg))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

// column is the text of one column of n lines, every line as wide as
// the others in 9-point Helvetica (about 190 points): its words name the
// column and the line, so that any line out of place shows. Line 4 ends
// in a word broken by a hyphen.
func column(name string, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("%s%02d quick brown foxes jump over dogs", name, i)
	}
	if n > 5 {
		lines[4] += " hyph-"
		lines[5] = "enated " + lines[5]
	}
	return lines
}

// show draws s at (x, y) with text matrix a b c d.
func show(b *strings.Builder, a, bb, c, d, x, y float64, s string) {
	fmt.Fprintf(b, "%g %g %g %g %g %g Tm (%s) Tj\n", a, bb, c, d, x, y, s)
}

// expected is how the columns read: left, then right, the broken word
// made whole.
func expected(cols ...[]string) string {
	var all []string
	for _, c := range cols {
		all = append(all, c...)
	}
	return strings.ReplaceAll(strings.Join(all, "\n"), "hyph-\nenated", "hyphenated")
}

func TestReadingOrder(t *testing.T) {
	left, right := column("left", 20), column("right", 20)
	// two columns in the page frame, drawn by draw(line, column, x, y)
	twoCols := func(interleaved, rightFirst bool, top float64, draw func(b *strings.Builder, x, y float64, s string)) string {
		var b strings.Builder
		b.WriteString("BT /F1 9 Tf\n")
		switch {
		case interleaved:
			for i := range left {
				draw(&b, 72, top-11*float64(i), left[i])
				draw(&b, 320, top-11*float64(i), right[i])
			}
		case rightFirst:
			for i := range right {
				draw(&b, 320, top-11*float64(i), right[i])
			}
			for i := range left {
				draw(&b, 72, top-11*float64(i), left[i])
			}
		}
		b.WriteString("ET\n")
		return b.String()
	}
	upright := func(b *strings.Builder, x, y float64, s string) { show(b, 1, 0, 0, 1, x, y, s) }
	title := "A title set across the whole width of the page above both columns"
	footer := "The footer, centred under both columns - page 1"
	table := [][]string{{"Name", "Age", "City"}, {"Alice", "30", "London"}, {"Bob", "41", "Paris"}, {"Carol", "27", "Berlin"},
		{"Dave", "35", "Madrid"}, {"Eve", "52", "Rome"}, {"Frank", "19", "Oslo"}}
	var tableText []string
	var tableDraw strings.Builder
	tableDraw.WriteString("BT /F1 10 Tf\n")
	for i, row := range table {
		for j, cell := range row {
			show(&tableDraw, 1, 0, 0, 1, 72+float64(j)*150, 700-14*float64(i), cell)
		}
		tableText = append(tableText, strings.Join(row, " "))
	}
	tableDraw.WriteString("ET\n")
	// A table of commands and what they do, cells wrapped, drawn row by
	// row (as debian-reference draws its tables).
	wrapped := [][2][]string{
		{{"apt-get install package"}, {"install a package and what it depends on"}},
		{{"dpkg -L package"}, {"list the files a package installed"}},
		{{"apt-cache policy binary", "package name"}, {"show which version would be installed", "and from where"}},
		{{"dpkg --audit"}, {"find packages half installed"}},
		{{"apt-get source package"}, {"fetch the source of a package"}},
		{{"dpkg-source -x package_version", "debian revision.dsc"}, {"unpack a source package"}},
		{{"debuild binary"}, {"build the binary packages"}},
		{{"echo package hold | dpkg", "--set-selections"}, {"hold a package at its version"}},
	}
	var wrappedText []string
	var wrappedDraw strings.Builder
	wrappedDraw.WriteString("BT /F1 10 Tf\n")
	y := 700.0
	for _, row := range wrapped {
		for j, cell := range row {
			for k, l := range cell {
				show(&wrappedDraw, 1, 0, 0, 1, 72+float64(j)*200, y-12*float64(k), l)
			}
		}
		// Drawn in this order, a cell of one line shares its line with
		// the next cell's first.
		lines := slices.Concat(row[0], row[1])
		if len(row[0]) == 1 {
			lines = slices.Concat([]string{row[0][0] + " " + row[1][0]}, row[1][1:])
		}
		wrappedText = append(wrappedText, lines...)
		y -= 12*float64(max(len(row[0]), len(row[1]))) + 6
	}
	wrappedDraw.WriteString("ET\n")
	// Text turned a quarter (the page turned back by /Rotate 90 or not):
	// the baseline goes up the page, lines follow each other rightwards,
	// the second column is higher up.
	quarter := func(b *strings.Builder, x, y float64, s string) { show(b, 0, 1, -1, 0, 792-y, x, s) }
	// Turned three quarters (/Rotate 270): the baseline goes down the
	// page, lines follow each other leftwards.
	threeQuarters := func(b *strings.Builder, x, y float64, s string) { show(b, 0, -1, 1, 0, y, 792-x, s) }
	// Upside down, as on a page turned by /Rotate 180.
	half := func(b *strings.Builder, x, y float64, s string) { show(b, -1, 0, 0, -1, 612-x, 792-y, s) }

	cases := []struct {
		name, content, page string
		want                string
		pdftotext           bool // compare with pdftotext too
	}{
		{"two columns drawn line by line across", twoCols(true, false, 700, upright), "", expected(left, right), true},
		{"right column drawn first", twoCols(false, true, 700, upright), "", expected(left, right), true},
		{"title over two columns and a footer under them",
			"BT /F1 14 Tf 1 0 0 1 72 740 Tm (" + title + ") Tj ET\n" + twoCols(true, false, 700, upright) +
				"BT /F1 9 Tf 1 0 0 1 210 440 Tm (" + footer + ") Tj ET\n",
			"", title + "\n" + expected(left, right) + "\n" + footer, true},
		{"footer drawn first, then the columns, then the title",
			"BT /F1 9 Tf 1 0 0 1 210 440 Tm (" + footer + ") Tj ET\n" + twoCols(false, true, 700, upright) +
				"BT /F1 14 Tf 1 0 0 1 72 740 Tm (" + title + ") Tj ET\n",
			"", title + "\n" + expected(left, right) + "\n" + footer, true},
		{"a running header over the right column, drawn last",
			twoCols(false, true, 700, upright) + "BT /F1 9 Tf 1 0 0 1 500 760 Tm (Chapter 3 page 33) Tj ET\n",
			"", "Chapter 3 page 33\n" + expected(left, right), true},
		{"page turned by /Rotate 90, columns drawn line by line", twoCols(true, false, 700, quarter), "/Rotate 90", expected(left, right), true},
		{"text turned a quarter on an upright page", twoCols(false, true, 700, quarter), "", expected(left, right), true},
		{"page turned by /Rotate 270", twoCols(false, true, 700, threeQuarters), "/Rotate 270", expected(left, right), true},
		{"a stamp up the margin, then columns drawn across",
			"BT /F1 8 Tf 0 1 -1 0 30 300 Tm (arXiv:2611.01234v1 [cs.CL] 28 Nov 2026) Tj ET\n" + twoCols(true, false, 700, upright),
			"", "arXiv:2611.01234v1 [cs.CL] 28 Nov 2026\n" + expected(left, right), true},
		{"page turned by /Rotate 180", twoCols(true, false, 700, half), "/Rotate 180", expected(left, right), true},
		// pdftotext reads this table column by column (Name Alice Bob …
		// Age 30 41 …); a reader of a table wants its rows.
		{"a table keeps its rows", tableDraw.String(), "", strings.Join(tableText, "\n"), false},
		{"a table of wrapped cells keeps its rows", wrappedDraw.String(), "", strings.Join(wrappedText, "\n"), false},
		{"one column keeps its order",
			twoCols(false, true, 700, func(b *strings.Builder, x, y float64, s string) {
				if x < 100 {
					upright(b, x, y, s)
				}
			}), "", expected(left), true},
	}
	pdftotext, _ := exec.LookPath("pdftotext")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := layoutPDF(tc.content, tc.page)
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			info, err := d.PageText(context.Background(), 1, 100000)
			if err != nil {
				t.Fatal(err)
			}
			if info.Text != tc.want {
				t.Errorf("read\n%s\nwant\n%s", info.Text, tc.want)
			}
			if !tc.pdftotext || pdftotext == "" {
				return
			}
			ref := runPdftotext(t, pdftotext, data)
			if sim := orderSimilarity(ref, info.Text); sim < 0.95 {
				t.Errorf("word order similarity with pdftotext %.3f < 0.95; pdftotext reads\n%s", sim, ref)
			}
		})
	}
}

func runPdftotext(t *testing.T, bin string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "page.pdf")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-enc", "UTF-8", p, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

// orderSimilarity is the longest common subsequence of the words of a
// and b over the number of words of a: 1 when b reads a's words in a's
// order.
func orderSimilarity(a, b string) float64 {
	// pdftotext marks right-to-left lines with embedding controls.
	bidiMarks := func(r rune) rune {
		if r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 {
			return -1
		}
		return r
	}
	wa, wb := strings.Fields(strings.Map(bidiMarks, a)), strings.Fields(strings.Map(bidiMarks, b))
	if len(wa) == 0 {
		return 1
	}
	prev, cur := make([]int, len(wb)+1), make([]int, len(wb)+1)
	for i := range wa {
		for j := range wb {
			if wa[i] == wb[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(wb)]) / float64(len(wa))
}

func TestOrderSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"a b c d", "a b c d", 1},
		{"a b c d", "c d a b", 0.5},
		{"a b c d", "", 0},
		{"", "x", 1},
		{"\u202bשלום עולם\u202c", "שלום עולם", 1},
	}
	for _, tc := range cases {
		if got := orderSimilarity(tc.a, tc.b); got != tc.want {
			t.Errorf("orderSimilarity(%q, %q) = %g, want %g", tc.a, tc.b, got, tc.want)
		}
	}
}

// BenchmarkTwoColumns: a page of two columns of 60 lines drawn line by
// line across, put back in reading order.
func BenchmarkTwoColumns(b *testing.B) {
	left, right := column("left", 60), column("right", 60)
	var c strings.Builder
	c.WriteString("BT /F1 9 Tf\n")
	for i := range left {
		show(&c, 1, 0, 0, 1, 72, 750-11*float64(i), left[i])
		show(&c, 1, 0, 0, 1, 320, 750-11*float64(i), right[i])
	}
	c.WriteString("ET\n")
	data := layoutPDF(c.String(), "")
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	if info, err := d.PageText(context.Background(), 1, 1<<20); err != nil || !strings.HasPrefix(info.Text, left[0]+"\n"+left[1]) {
		b.Fatalf("%v %.80q", err, info.Text)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.PageText(context.Background(), 1, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadingOrderCap: a page of more lines than are worth ordering
// keeps its drawing order (and holds no pieces for it).
func TestReadingOrderCap(t *testing.T) {
	n := maxOrderPieces/2 + 10
	var b strings.Builder
	b.WriteString("BT /F1 1 Tf\n")
	for i := range n {
		y := 780 - 1.2*float64(i)
		show(&b, 1, 0, 0, 1, 72, y, fmt.Sprintf("left%04d quick brown foxes jump over dogs", i))
		show(&b, 1, 0, 0, 1, 320, y, fmt.Sprintf("right%04d quick brown foxes jump over dogs", i))
	}
	b.WriteString("ET\n")
	data := layoutPDF(b.String(), "")
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.PageText(context.Background(), 1, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.Text, "left0000 quick brown foxes jump over dogs right0000") || d.reorderedPages != 0 {
		t.Errorf("%d pages reordered, text %.120q", d.reorderedPages, info.Text)
	}
}

// unicodePDF is a one-page document whose font F1 draws every rune of
// lines as one 500-unit glyph, its ToUnicode map saying which; draw
// places line i of the strings given at (x, y).
func unicodePDF(lines []string, at func(i int) (x, y float64)) []byte {
	codes := map[rune]int{}
	var cmap strings.Builder
	var content strings.Builder
	content.WriteString("BT /F1 9 Tf\n")
	for i, l := range lines {
		x, y := at(i)
		fmt.Fprintf(&content, "1 0 0 1 %g %g Tm <", x, y)
		for _, r := range l {
			c, ok := codes[r]
			if !ok {
				c = len(codes) + 1
				codes[r] = c
				fmt.Fprintf(&cmap, "<%04X> <%04X>\n", c, r)
			}
			fmt.Fprintf(&content, "%04X", c)
		}
		content.WriteString("> Tj\n")
	}
	content.WriteString("ET\n")
	w := doctexttest.NewPDF(false)
	cat, tree, pg, c, font, desc, tu := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	w.Obj(font, fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Test /Encoding /Identity-H /DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>", desc, tu))
	w.Obj(desc, "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Test /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 500 >>")
	w.Stream(tu, "", []byte(fmt.Sprintf("/CIDInit /ProcSet findresource begin 12 dict begin begincmap 1 begincodespacerange <0000> <FFFF> endcodespacerange\n"+
		"%d beginbfchar\n%sendbfchar endcmap", len(codes), cmap.String())))
	w.Stream(c, "", []byte(content.String()))
	w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>", tree, c, font))
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", pg))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

// TestReadingOrderRightToLeft: a Hebrew page of two columns drawn line
// by line across reads the right column first, each line in logical
// order.
func TestReadingOrderRightToLeft(t *testing.T) {
	labels := []string{"אלף", "בית", "גימל", "דלת", "הא", "וו", "זין", "חית", "טית", "יוד", "כף", "למד"}
	var right, left, drawn []string
	for _, l := range labels {
		right = append(right, "ימין "+l+" שורה של טקסט בעברית כאן")
		left = append(left, "שמאל "+l+" שורה של טקסט בעברית כאן")
	}
	for i := range labels {
		// Drawn left to right as the page shows it: visual order.
		drawn = append(drawn, reverseRunes(left[i]), reverseRunes(right[i]))
	}
	data := unicodePDF(drawn, func(i int) (float64, float64) {
		return 72 + 248*float64(i%2), 700 - 11*float64(i/2)
	})
	d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.PageText(context.Background(), 1, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(append(right, left...), "\n"); info.Text != want {
		t.Errorf("read\n%s\nwant\n%s", info.Text, want)
	}
	if pdftotext, _ := exec.LookPath("pdftotext"); pdftotext != "" {
		ref := runPdftotext(t, pdftotext, data)
		if sim := orderSimilarity(ref, info.Text); sim < 0.95 {
			t.Errorf("word order similarity with pdftotext %.3f < 0.95; pdftotext reads\n%s", sim, ref)
		}
	}
}

// TestReadingOrderHostileGeometry: pieces at infinite, vast or equal
// places, of no height, keep every word and the drawing order.
func TestReadingOrderHostileGeometry(t *testing.T) {
	// PDF writes numbers without exponents (and a token is at most 255
	// bytes): 10^200 times 10^200 is more than a float holds.
	e200 := "1" + strings.Repeat("0", 200)
	cases := map[string]string{
		"overflowing":  fmt.Sprintf("ET q %s 0 0 %s 0 0 cm BT /F1 9 Tf 1 0 0 1 %s %s Tm (%%s) Tj ET Q BT /F1 9 Tf", e200, e200, e200, e200),
		"vast":         fmt.Sprintf("1 0 0 1 %s -%s Tm (%%s) Tj", e200, e200),
		"no height":    "0 0 0 0 100 100 Tm (%s) Tj",
		"all in place": "1 0 0 1 72 700 Tm (%s) Tj",
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("BT /F1 9 Tf\n")
			var words []string
			for i := range 12 {
				w := fmt.Sprintf("w%02d", i)
				words = append(words, w)
				if i%3 == 0 {
					fmt.Fprintf(&b, m+"\n", w)
				} else {
					fmt.Fprintf(&b, "1 0 0 1 %d %d Tm (%s) Tj\n", 72+248*(i%2), 700-11*i, w)
				}
			}
			b.WriteString("ET\n")
			data := layoutPDF(b.String(), "")
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			info, err := d.PageText(context.Background(), 1, 10000)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Fields(info.Text); !slices.Equal(got, words) {
				t.Errorf("%q, want the words in drawing order", info.Text)
			}
		})
	}
}
