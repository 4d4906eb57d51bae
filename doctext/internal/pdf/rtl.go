package pdf

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// Arabic, Hebrew and Persian are drawn right to left, and a PDF draws
// glyphs left to right: the strings of a page hold such words backwards
// (visual order), often as presentation forms (the joined shapes of
// Arabic letters, U+FB50…U+FEFF), so no word matches what was written.
// A line with right-to-left letters is put back in logical order: the
// bidi algorithm finds its runs, the runs of a right-to-left line are
// taken in reverse, the letters of each right-to-left run too; then the
// presentation forms become the letters they show (NFKC).

// isRTL is whether r is a right-to-left letter (Hebrew, Arabic, Syriac,
// Thaana, NKo… and their presentation forms).
func isRTL(r rune) bool {
	return r >= 0x0590 && r <= 0x08FF || r >= 0xFB1D && r <= 0xFDFF || r >= 0xFE70 && r <= 0xFEFF
}

func isPresentationForm(r rune) bool {
	return r >= 0xFB1D && r <= 0xFDFF || r >= 0xFE70 && r <= 0xFEFF
}

// logicalOrder puts the lines of a page drawn in visual order into
// logical order. keep[i] marks line i as drawn in logical order already
// (its glyphs placed right to left one by one).
func logicalOrder(text string, keep func(line int) bool) string {
	if !strings.ContainsFunc(text, isRTL) {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.ContainsFunc(l, isRTL) {
			continue
		}
		if !keep(i) {
			l = visualToLogical(l)
		}
		if strings.ContainsFunc(l, isPresentationForm) {
			l = presentationForms(l)
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// visualToLogical reorders one line. For the two levels real documents
// use (right-to-left words with left-to-right words and numbers among
// them), the reordering from visual to logical order is the one from
// logical to visual.
func visualToLogical(line string) string {
	var rtl, ltr int
	for _, r := range line {
		switch p, _ := bidi.LookupRune(r); p.Class() {
		case bidi.R, bidi.AL:
			rtl++
		case bidi.L:
			ltr++
		}
	}
	var p bidi.Paragraph
	var opts []bidi.Option
	if rtl >= ltr {
		opts = append(opts, bidi.DefaultDirection(bidi.RightToLeft))
	}
	if _, err := p.SetString(line, opts...); err != nil {
		return line
	}
	o, err := p.Order()
	if err != nil {
		return line
	}
	runs := make([]string, 0, o.NumRuns())
	for i := range o.NumRuns() {
		r := o.Run(i)
		s := r.String()
		if r.Direction() == bidi.RightToLeft {
			s = reverseRunes(s)
		}
		runs = append(runs, s)
	}
	if rtl >= ltr {
		for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
			runs[i], runs[j] = runs[j], runs[i]
		}
	}
	return strings.Join(runs, "")
}

// reverseRunes reverses s, keeping combining marks (Arabic vowels, Hebrew
// points) after the letter they belong to.
func reverseRunes(s string) string {
	rs := []rune(s)
	out := make([]rune, 0, len(rs))
	for i := len(rs) - 1; i >= 0; {
		// Marks drawn after their letter in visual order stay after it.
		j := i
		for j > 0 && isMark(rs[j]) {
			j--
		}
		out = append(out, rs[j:i+1]...)
		i = j - 1
	}
	return string(out)
}

func isMark(r rune) bool {
	p, _ := bidi.LookupRune(r)
	return p.Class() == bidi.NSM
}

// presentationForms replaces presentation forms by their letters, leaving
// everything else (full-width CJK punctuation, ligatures of Latin) as
// it is.
func presentationForms(s string) string {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isPresentationForm(r) {
			b = norm.NFKC.AppendString(b, s[i:i+n])
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
