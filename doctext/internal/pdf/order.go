package pdf

import (
	"bytes"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reading order. Text is read in the order the page draws it, which is
// the reading order for what TeX, LibreOffice and most writers make. Some
// writers draw a page row by row across its columns, or a column before
// the one left of it: read in drawing order, the lines of two columns
// alternate. Such a page is put back in reading order as pdftotext does
// it: the pieces of text (lines, and parts of lines set apart by a gap as
// wide as a gutter) are looked at in the frame of the page's main
// direction of writing (so rotated pages and text read as their reader
// reads them); a gutter is a band of white running down the page between
// columns of text; the columns are read left to right, each top to bottom,
// and a piece that crosses a gutter (a title, a footer) is read where it
// stands, before the columns under it. Anything that does not look like
// columns of text (a table, a page of one column, text in several
// directions) keeps its drawing order.

const (
	// pieceGap is the gap on a line, in line heights, that may be a
	// gutter: wider than any space between words.
	pieceGap = 1.0
	// maxOrderPieces bounds the work: a page of more pieces keeps its
	// drawing order.
	maxOrderPieces = 4000
)

// piece is a run of text written on one line, in b[start:] up to the
// next piece's sep; b[sep:start] is what separated it from the piece
// before (a space, a new line, nothing when hyph was taken back from the
// end of that piece).
type piece struct {
	sep, start     int
	hyph           string
	x0, y0, x1, y1 float64 // its box on the page
	dx, dy, h      float64 // its direction, its height
	placed         bool
}

func (o *textOut) startPiece() {
	o.pendingPiece = false
	if o.tooMany {
		return
	}
	if len(o.pieces) >= maxOrderPieces {
		o.tooMany, o.pieces = true, nil
		return
	}
	o.pieces = append(o.pieces, piece{sep: o.sepAt, start: len(o.b), hyph: o.hyph})
	o.hyph = ""
}

// place grows the box of the piece being written by a string drawn from
// (x0, y0) to (x1, y1) in direction (dx, dy), h high.
func (o *textOut) place(x0, y0, x1, y1, h, dx, dy float64) {
	if len(o.pieces) == 0 {
		return
	}
	p := &o.pieces[len(o.pieces)-1]
	ux, uy := -dy*h, dx*h // up from the baseline
	xs := [4]float64{x0, x1, x0 + ux, x1 + ux}
	ys := [4]float64{y0, y1, y0 + uy, y1 + uy}
	if !p.placed {
		p.placed = true
		p.x0, p.x1, p.y0, p.y1 = xs[0], xs[0], ys[0], ys[0]
		p.dx, p.dy, p.h = dx, dy, h
	}
	for i := range xs {
		p.x0, p.x1 = min(p.x0, xs[i]), max(p.x1, xs[i])
		p.y0, p.y1 = min(p.y0, ys[i]), max(p.y1, ys[i])
	}
	p.h = max(p.h, h)
}

// reordered is the page's text in reading order when its drawing order
// is not that; ok is false when the drawing order stands.
func (o *textOut) reordered() (string, bool) {
	if o.tooMany || len(o.pieces) < 4 {
		return "", false
	}
	// Right-to-left text: each piece is put in logical order as its
	// line would be; on a page mostly right to left, columns and pieces
	// on a line are read right to left.
	rtl, rtlPage := bytes.ContainsFunc(o.b, isRTL), false
	var lineOf []int
	if rtl {
		var r2l, l2r int
		for _, r := range string(o.b) {
			switch {
			case isRTL(r):
				r2l++
			case unicode.IsLetter(r):
				l2r++
			}
		}
		rtlPage = r2l > l2r
		lineOf = make([]int, len(o.pieces))
		line, at := 0, 0
		for i, p := range o.pieces {
			line += bytes.Count(o.b[at:p.start], []byte{'\n'})
			at = p.start
			lineOf[i] = line
		}
	}
	lines := append(o.logical, o.back > o.fwd)
	for _, p := range o.pieces {
		if math.IsNaN(p.x0+p.x1+p.y0+p.y1) || math.IsInf(p.x0+p.x1+p.y0+p.y1, 0) {
			return "", false
		}
	}
	order, sameLine := readingOrder(o.pieces, func(i int) int { return o.end(i) - o.pieces[i].start }, rtlPage)
	if order == nil {
		return "", false
	}
	var b strings.Builder
	for k, i := range order {
		t := o.text(i)
		// The hyphen taken back when the next piece drawn continued the
		// word belongs to this piece unless that piece still follows.
		if i+1 < len(o.pieces) && o.pieces[i+1].hyph != "" && (k+1 >= len(order) || order[k+1] != i+1) {
			t += o.pieces[i+1].hyph
		}
		if rtl {
			keep := lineOf[i] < len(lines) && lines[lineOf[i]]
			t = logicalOrder(t, func(int) bool { return keep })
		}
		switch {
		case k == 0:
			t = strings.TrimLeftFunc(t, unicode.IsSpace)
		case order[k-1] == i-1:
			b.Write(o.b[o.pieces[i].sep:o.pieces[i].start])
		case sameLine[k]:
			b.WriteByte(' ')
		default:
			if r, _ := utf8.DecodeRuneInString(t); !unicode.IsLower(r) || !dehyphenated(&b) {
				b.WriteByte('\n')
			}
		}
		b.WriteString(t)
	}
	return strings.TrimSpace(b.String()), true
}

// text is piece i's text, without the spaces and new lines around it.
func (o *textOut) text(i int) string {
	end := o.end(i)
	start := min(o.pieces[i].start, end)
	return strings.TrimRightFunc(string(o.b[start:end]), unicode.IsSpace)
}

// end is where piece i's text ends in b.
func (o *textOut) end(i int) int {
	if i+1 < len(o.pieces) {
		return max(o.pieces[i+1].sep, o.pieces[i].start)
	}
	return len(o.b)
}

// dehyphenated takes back the hyphen ending b after a letter, as
// textOut.dehyphenate does for lines drawn one after the other.
func dehyphenated(b *strings.Builder) bool {
	s := b.String()
	last, n := utf8.DecodeLastRuneInString(s)
	if last != '-' && last != '\u00ad' {
		return false
	}
	if before, _ := utf8.DecodeLastRuneInString(s[:len(s)-n]); !unicode.IsLetter(before) {
		return false
	}
	s = s[:len(s)-n]
	b.Reset()
	b.WriteString(s)
	return true
}

// frameBox is a piece's box in the frame of the page's main direction of
// writing: u along it, v up from it.
type frameBox struct {
	u0, u1, v0, v1, h float64
	i                 int
	sameLine          bool // on the line of the box read before it
}

// readingOrder is the order to read the pieces in, or nil when drawing
// order is reading order or the page does not look like columns of text;
// sameLine[k] says the k-th piece read is on the line of the one before.
// size(i) weighs piece i; rtl reads columns and lines right to left. The
// cost is O(n log n) in pieces.
func readingOrder(ps []piece, size func(i int) int, rtl bool) (order []int, sameLine []bool) {
	// The main direction: the one most of the text is written in, of the
	// four a page can be turned to.
	var weight [4]int
	total := 0
	dirOf := make([]int, len(ps))
	for i, p := range ps {
		dirOf[i] = -1
		w := size(i)
		total += w
		if !p.placed {
			continue
		}
		for k, d := range rotations {
			if math.Abs(p.dx-d[0]) < 0.02 && math.Abs(p.dy-d[1]) < 0.02 {
				dirOf[i] = k
				weight[k] += w
			}
		}
	}
	dom := 0
	for k := range weight {
		if weight[k] > weight[dom] {
			dom = k
		}
	}
	if total == 0 || weight[dom]*10 < total*9 {
		return nil, nil // text in several directions: leave it be
	}
	cx, cy := rotations[dom][0], rotations[dom][1]
	boxes := make([]frameBox, 0, len(ps))
	for i, p := range ps {
		if dirOf[i] != dom {
			continue
		}
		b := frameBox{u0: math.Inf(1), u1: math.Inf(-1), v0: math.Inf(1), v1: math.Inf(-1), h: p.h, i: i}
		for _, x := range [2]float64{p.x0, p.x1} {
			for _, y := range [2]float64{p.y0, p.y1} {
				u, v := x*cx+y*cy, -x*cy+y*cx
				b.u0, b.u1 = min(b.u0, u), max(b.u1, u)
				b.v0, b.v1 = min(b.v0, v), max(b.v1, v)
			}
		}
		boxes = append(boxes, b)
	}
	sorted := columnOrder(boxes, rtl)
	if sorted == nil {
		return nil, nil
	}
	// Pieces in another direction (a word set sideways in a margin) stay
	// after the piece they were drawn after.
	after := make([][]int, len(ps)+1) // after[i+1]: pieces drawn after piece i; after[0]: before any
	last := -1
	for i := range ps {
		if dirOf[i] == dom {
			last = i
			continue
		}
		after[last+1] = append(after[last+1], i)
	}
	order = make([]int, 0, len(ps))
	sameLine = make([]bool, 0, len(ps))
	add := func(is []int) {
		order = append(order, is...)
		for range is {
			sameLine = append(sameLine, false)
		}
	}
	add(after[0])
	for _, b := range sorted {
		order, sameLine = append(order, b.i), append(sameLine, b.sameLine)
		add(after[b.i+1])
	}
	for k, i := range order {
		if k != i {
			return order, sameLine
		}
	}
	return nil, nil // drawn in reading order already
}

// rotations are the directions of writing on a page turned by 0, 90, 180
// and 270 degrees.
var rotations = [4][2]float64{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}

// columnOrder sorts the boxes of a page in the reading order of its
// columns, or answers nil when it has no columns of text.
func columnOrder(boxes []frameBox, rtl bool) []frameBox {
	n := len(boxes)
	if n < 4 {
		return nil
	}
	hs := make([]float64, n)
	for i, b := range boxes {
		hs[i] = b.h
	}
	slices.Sort(hs)
	medH := hs[n/2]
	if medH <= 0 {
		return nil
	}
	// Gutters: bands of u where at most a few pieces (titles, footers)
	// cross, at least a line height wide, with text on either side.
	type event struct {
		u     float64
		delta int
	}
	evs := make([]event, 0, 2*n)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range boxes {
		evs = append(evs, event{b.u0, 1}, event{b.u1, -1})
		lo, hi = min(lo, b.u0), max(hi, b.u1)
	}
	slices.SortFunc(evs, func(a, b event) int {
		switch {
		case a.u < b.u:
			return -1
		case a.u > b.u:
			return 1
		}
		return b.delta - a.delta // touching boxes leave no gap
	})
	crossing := max(1, n/10)
	type band struct{ u0, u1 float64 }
	var gutters []band
	count := 0
	openAt := math.NaN()
	for _, e := range evs {
		before := count
		count += e.delta
		switch {
		case before > crossing && count <= crossing:
			openAt = e.u
		case before <= crossing && count > crossing && !math.IsNaN(openAt):
			if e.u-openAt >= pieceGap*medH && openAt > lo && e.u < hi {
				gutters = append(gutters, band{openAt, e.u})
			}
			openAt = math.NaN()
		}
	}
	if len(gutters) == 0 || len(gutters) > 8 {
		return nil
	}
	// Each piece is in the column its middle is in, or crosses a gutter
	// or stands in one (a page number centred under the columns), or is
	// a running header or footer.
	margins := headerFooter(boxes, medH)
	cols := make([][]frameBox, len(gutters)+1)
	var spans []frameBox
	for k, b := range boxes {
		c, crosses := 0, margins[k]
		mid := (b.u0 + b.u1) / 2
		for _, g := range gutters {
			if b.u0 < g.u0 && b.u1 > g.u1 || mid >= g.u0 && mid <= g.u1 {
				crosses = true
			}
			if mid > g.u1 {
				c++
			}
		}
		if crosses {
			spans = append(spans, b)
			continue
		}
		cols[c] = append(cols[c], b)
	}
	if len(spans)*3 > n {
		return nil
	}
	// Columns of text: several lines each, wide, most lines filling
	// them (ragged text fills nine tenths and more, justified text all);
	// columns side by side, not one under the other. A table's columns
	// are narrow or its cells of many lengths: it keeps its rows.
	var top, bottom float64 = math.Inf(-1), math.Inf(1)
	for _, c := range cols {
		if len(c) < 2 {
			return nil
		}
		ws := make([]float64, len(c))
		c0, c1 := math.Inf(1), math.Inf(-1)
		v0, v1 := math.Inf(1), math.Inf(-1)
		for i, b := range c {
			ws[i] = b.u1 - b.u0
			c0, c1 = min(c0, b.u0), max(c1, b.u1)
			v0, v1 = min(v0, b.v0), max(v1, b.v1)
		}
		slices.Sort(ws)
		if c1-c0 < 8*medH || ws[len(ws)/2] < 0.8*(c1-c0) {
			return nil
		}
		top, bottom = max(top, v0), min(bottom, v1)
	}
	if bottom-top < 2*medH {
		return nil // the columns share fewer than two lines' height
	}
	// Pieces crossing gutters cut the page into sections read one after
	// the other; in each, the columns left to right.
	byTop := func(a, b frameBox) int {
		if a.v1 != b.v1 {
			if a.v1 > b.v1 {
				return -1
			}
			return 1
		}
		return a.i - b.i
	}
	slices.SortStableFunc(spans, byTop)
	section := func(b frameBox) int {
		mid := (b.v0 + b.v1) / 2
		return sort.Search(len(spans), func(k int) bool { return (spans[k].v0+spans[k].v1)/2 < mid })
	}
	groups := make([][][]frameBox, len(spans)+1)
	for c, col := range cols {
		for _, b := range col {
			s := section(b)
			if groups[s] == nil {
				groups[s] = make([][]frameBox, len(cols))
			}
			groups[s][c] = append(groups[s][c], b)
		}
	}
	out := make([]frameBox, 0, n)
	for s := range groups {
		if rtl {
			slices.Reverse(groups[s])
		}
		for _, col := range groups[s] {
			out = append(out, linesDown(col, rtl)...)
		}
		if s < len(spans) {
			out = append(out, spans[s])
		}
	}
	return out
}

// linesDown sorts the pieces of a column top to bottom, those on one
// line left to right (right to left if rtl).
func linesDown(bs []frameBox, rtl bool) []frameBox {
	slices.SortStableFunc(bs, func(a, b frameBox) int {
		switch {
		case a.v0 > b.v0:
			return -1
		case a.v0 < b.v0:
			return 1
		}
		return 0
	})
	for i := 0; i < len(bs); {
		j := i + 1
		for j < len(bs) && bs[i].v0-bs[j].v0 < 0.3*max(bs[i].h, bs[j].h) {
			j++
		}
		slices.SortStableFunc(bs[i:j], func(a, b frameBox) int {
			switch {
			case a.u0 < b.u0 != rtl && a.u0 != b.u0:
				return -1
			case a.u0 != b.u0:
				return 1
			}
			return 0
		})
		for k := i + 1; k < j; k++ {
			bs[k].sameLine = true
		}
		i = j
	}
	return bs
}

// headerFooter marks the pieces of a running header and footer: at most
// three pieces above (below) the rest of the page, set apart from it by
// a blank line's height.
func headerFooter(boxes []frameBox, medH float64) []bool {
	marks := make([]bool, len(boxes))
	idx := make([]int, len(boxes))
	for i := range idx {
		idx[i] = i
	}
	for _, down := range []bool{true, false} {
		// down: from the top, by tops; else from the bottom, by bottoms.
		slices.SortFunc(idx, func(a, b int) int {
			x, y := boxes[a].v1, boxes[b].v1
			if !down {
				x, y = -boxes[a].v0, -boxes[b].v0
			}
			switch {
			case x > y:
				return -1
			case x < y:
				return 1
			}
			return 0
		})
		edge := math.Inf(1)
		for k, i := range idx {
			if k > 3 {
				break
			}
			b := boxes[i]
			if k > 0 && (down && b.v1 < edge-0.8*medH || !down && b.v0 > -edge+0.8*medH) {
				for _, j := range idx[:k] {
					marks[j] = true
				}
				break
			}
			if down {
				edge = min(edge, b.v0)
			} else {
				edge = min(edge, -b.v1)
			}
		}
	}
	return marks
}
