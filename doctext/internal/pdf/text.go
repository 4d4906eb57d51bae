package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	maxPageBytes  = 64 << 20 // decoded content (with forms) one page may run
	maxFormDepth  = 8
	maxFormRuns   = 4096 // forms drawn on one page: nested forms can fan out
	maxAnnots     = 1000
	maxOperands   = 64 // no operator takes more; more is junk
	maxGStack     = 64
	checkCtxEvery = 4096 // operators between looks at the context
)

// PageInfo is what one page gave.
type PageInfo struct {
	Text     string
	Cut      bool // the page has more text than was asked for
	Glyphs   int  // glyphs shown
	Unmapped int  // of those, glyphs whose font gives no text
	Images   int  // images drawn
}

type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul is m × n in PDF's row-vector convention: apply m, then n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

var errFull = errors.New("page text budget reached")

// wordGap is the gap between glyphs, in ems, that separates words: a
// tenth, as pdftotext has it (justified lines shrink spaces to a sixth of
// an em; kerning moves glyphs by a few hundredths).
const wordGap = 0.1

// PageText reads the text of page n (1-based), at most maxRunes runes.
func (d *Doc) PageText(ctx context.Context, n, maxRunes int) (PageInfo, error) {
	if n < 1 || n > len(d.pages) {
		return PageInfo{}, fmt.Errorf("no page %d", n)
	}
	d.ctx = ctx
	if err := d.stopped(); err != nil {
		return PageInfo{}, err
	}
	p := d.pages[n-1]
	in := &interp{d: d, ctx: ctx, out: textOut{max: maxRunes}, budget: maxPageBytes}
	var rs []io.Reader
	switch c := d.resolve(p.d["Contents"]).(type) {
	case *stream:
		rs = append(rs, in.open(c))
	case array:
		for i, s := range c {
			if i >= 4096 {
				break
			}
			if s, ok := d.resolve(s).(*stream); ok {
				// Content may be split anywhere between tokens: a space keeps
				// the last token of one part from running into the next.
				rs = append(rs, in.open(s), strings.NewReader("\n"))
			}
		}
	}
	err := in.run(io.MultiReader(rs...), p.res, identity, 0)
	if err == nil {
		err = in.annotations(p)
	}
	text := in.out.String()
	if in.out.reorderedDone {
		d.reorderedPages++
	}
	info := PageInfo{Text: text, Cut: in.out.full, Glyphs: in.glyphs,
		Unmapped: in.unmapped, Images: in.images}
	if errors.Is(err, errFull) {
		err = nil
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	// The budget ran out on this page: what it gave is kept, but a page
	// that gave nothing is not "a page without text".
	if d.fatal != nil && info.Text == "" {
		return info, d.fatal
	}
	// A broken content stream loses the rest of the page, not the page.
	if err != nil && info.Text == "" && info.Glyphs == 0 {
		return info, err
	}
	return info, nil
}

type interp struct {
	d        *Doc
	ctx      context.Context
	out      textOut
	budget   int64 // decoded content bytes left
	ops      int
	glyphs   int
	unmapped int
	images   int
	forms    []*stream // forms being run, against cycles
	formRuns int
}

// open decodes s, counting against the page's budget.
func (in *interp) open(s *stream) io.Reader {
	r, err := in.d.streamReader(s)
	if err != nil {
		return &errReader{err}
	}
	return &budgetReader{r: r, left: &in.budget}
}

type budgetReader struct {
	r    io.Reader
	left *int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		return 0, io.EOF // enough of this page: keep what it said so far
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	return n, err
}

type textState struct {
	font                     *font
	size, tc, tw, th, tl, ts float64
	tm, tlm                  matrix
}

// kern is the move of a number in a TJ array: back along the line, or
// down a column in vertical writing.
func (ts *textState) kern(v float64) matrix {
	if ts.font != nil && ts.font.vertical {
		return translate(0, -v/1000*ts.size)
	}
	return translate(-v/1000*ts.size*ts.th, 0)
}

func (in *interp) run(r io.Reader, res dict, ctm matrix, depth int) error {
	d := in.d
	l := newLexer(r, 0, false)
	fonts := d.dictOf(res["Font"])
	xobjs := d.dictOf(res["XObject"])
	ts := textState{th: 1, tm: identity, tlm: identity}
	var gstack []matrix
	var args []object
	bad := 0
	num := func(i int) float64 {
		if i < len(args) {
			switch v := args[i].(type) {
			case int64:
				return float64(v)
			case float64:
				return v
			}
		}
		return 0
	}
	for {
		t, err := l.object(0)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			// A bad token loses itself, not the rest of the page.
			if bad++; errors.Is(err, ErrMalformed) && bad < 1000 && l.readErr() == nil {
				args = args[:0]
				continue
			}
			return err
		}
		op, isOp := t.(keyword)
		if !isOp {
			if len(args) >= maxOperands {
				args = args[:0]
			}
			args = append(args, t)
			continue
		}
		if in.ops++; in.ops%checkCtxEvery == 0 {
			if err := in.ctx.Err(); err != nil {
				return err
			}
		}
		switch op {
		case "q":
			if len(gstack) < maxGStack {
				gstack = append(gstack, ctm)
			}
		case "Q":
			if n := len(gstack); n > 0 {
				ctm, gstack = gstack[n-1], gstack[:n-1]
			}
		case "cm":
			if len(args) == 6 {
				ctm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}.mul(ctm)
			}
		case "BT":
			ts.tm, ts.tlm = identity, identity
		case "Tf":
			if len(args) == 2 {
				n, _ := args[0].(name)
				ts.font = d.loadFont(fonts[n])
				ts.size = num(1)
			}
		case "Tc":
			ts.tc = num(0)
		case "Tw":
			ts.tw = num(0)
		case "Tz":
			ts.th = num(0) / 100
		case "TL":
			ts.tl = num(0)
		case "Ts":
			ts.ts = num(0)
		case "Td":
			ts.tlm = translate(num(0), num(1)).mul(ts.tlm)
			ts.tm = ts.tlm
		case "TD":
			ts.tl = -num(1)
			ts.tlm = translate(num(0), num(1)).mul(ts.tlm)
			ts.tm = ts.tlm
		case "Tm":
			if len(args) == 6 {
				ts.tm = matrix{num(0), num(1), num(2), num(3), num(4), num(5)}
				ts.tlm = ts.tm
			}
		case "T*":
			ts.tlm = translate(0, -ts.tl).mul(ts.tlm)
			ts.tm = ts.tlm
		case "Tj", "'", "\"":
			if op != "Tj" {
				if op == "\"" && len(args) == 3 {
					ts.tw, ts.tc = num(0), num(1)
				}
				ts.tlm = translate(0, -ts.tl).mul(ts.tlm)
				ts.tm = ts.tlm
			}
			if len(args) > 0 {
				if s, ok := args[len(args)-1].(string); ok {
					if err := in.show(&ts, ctm, s); err != nil {
						return err
					}
				}
			}
		case "TJ":
			if len(args) > 0 {
				a, _ := args[0].(array)
				for _, e := range a {
					switch v := e.(type) {
					case string:
						if err := in.show(&ts, ctm, v); err != nil {
							return err
						}
					case int64:
						ts.tm = ts.kern(float64(v)).mul(ts.tm)
					case float64:
						ts.tm = ts.kern(v).mul(ts.tm)
					}
				}
			}
		case "Do":
			if len(args) == 1 {
				n, _ := args[0].(name)
				if err := in.do(xobjs[n], res, ctm, depth); err != nil {
					return err
				}
			}
		case "BI":
			if err := skipInlineImage(l); err != nil {
				return err
			}
			in.images++
		}
		args = args[:0]
	}
}

func (in *interp) do(o object, res dict, ctm matrix, depth int) error {
	s, ok := in.d.resolve(o).(*stream)
	if !ok {
		return nil
	}
	switch sub, _ := in.d.resolve(s.d["Subtype"]).(name); sub {
	case "Image":
		in.images++
		return nil
	case "Form":
		return in.form(s, res, ctm, depth)
	}
	return nil
}

// annotations draws what the page's annotations show: filled-in form
// fields, stamps, free-text notes. Each is a form drawn at its place.
func (in *interp) annotations(p page) error {
	annots, _ := in.d.resolve(p.d["Annots"]).(array)
	for i, a := range annots {
		if i >= maxAnnots {
			break
		}
		ad := in.d.dictOf(a)
		flags, _ := in.d.intOf(ad["F"])
		if sub, _ := in.d.resolve(ad["Subtype"]).(name); ad == nil || flags&2 != 0 || sub == "Popup" || sub == "Link" {
			continue
		}
		var s *stream
		switch n := in.d.resolve(in.d.dictOf(ad["AP"])["N"]).(type) {
		case *stream:
			s = n
		case dict:
			state, _ := in.d.resolve(ad["AS"]).(name)
			s, _ = in.d.resolve(n[state]).(*stream)
		}
		if s == nil {
			continue
		}
		ctm := identity
		if r, _ := in.d.resolve(ad["Rect"]).(array); len(r) == 4 {
			ctm = translate(in.d.numOf(r[0], 0), in.d.numOf(r[1], 0))
		}
		in.out.pendingNewline = in.out.have
		if err := in.form(s, p.res, ctm, 0); err != nil {
			return err
		}
	}
	return nil
}

// form runs a form XObject's content with its own matrix and resources.
func (in *interp) form(s *stream, res dict, ctm matrix, depth int) error {
	if depth >= maxFormDepth || in.formRuns >= maxFormRuns {
		return nil
	}
	in.formRuns++
	for _, f := range in.forms {
		if f == s {
			return nil // a form that draws itself
		}
	}
	if m, _ := in.d.resolve(s.d["Matrix"]).(array); len(m) == 6 {
		var fm matrix
		for i := range fm {
			fm[i] = in.d.numOf(m[i], identity[i])
		}
		ctm = fm.mul(ctm)
	}
	if r := in.d.dictOf(s.d["Resources"]); r != nil {
		res = r
	}
	in.forms = append(in.forms, s)
	defer func() { in.forms = in.forms[:len(in.forms)-1] }()
	return in.run(in.open(s), res, ctm, depth+1)
}

// skipInlineImage passes over "BI … ID <data> EI": the data is binary and
// ends at the first "EI" that stands alone.
func skipInlineImage(l *lexer) error {
	for {
		t, err := l.object(0)
		if err != nil {
			return nil
		}
		if t == keyword("ID") {
			break
		}
	}
	l.next() // the one white-space byte after ID
	var p3, p2, p1 byte = ' ', 0, 0
	for {
		c, ok := l.next()
		end := !ok
		if isSpace(p3) && p2 == 'E' && p1 == 'I' && (end || isSpace(c) || isDelim(c)) {
			return nil
		}
		if end {
			return l.readErr()
		}
		p3, p2, p1 = p2, p1, c
	}
}

func (in *interp) show(ts *textState, ctm matrix, s string) error {
	if ts.font == nil {
		ts.font = in.d.parseFont(nil)
	}
	f := ts.font
	trm := ts.tm.mul(ctm)
	x0, y0 := trm[4], trm[5]
	// The direction of writing and the height of a line on the page:
	// along the baseline, or down for vertical writing, where a "line" is
	// a column as wide as the font's size.
	dx, dy := trm[0], trm[1]
	hx, hy := trm[2], trm[3]
	if f.vertical {
		dx, dy, hx, hy = -trm[2], -trm[3], trm[0], trm[1]
	}
	norm := math.Hypot(dx, dy)
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		dx, dy, norm = 1, 0, 1
	}
	dx, dy = dx/norm, dy/norm
	h := math.Abs(ts.size) * math.Hypot(hx, hy) * f.em
	var text strings.Builder
	var gaps []int // where spacing opens a word gap
	visible := ts.tm
	f.glyphs(s, func(g glyph) {
		in.glyphs++
		if g.text == "" {
			in.unmapped++
		}
		extra := ts.tc
		if g.n == 1 && g.code == ' ' {
			extra += ts.tw
		}
		w := g.width
		if f.vertical {
			w = -f.vadv * f.scale
		}
		adv := w*ts.size + extra
		// A space whose advance word spacing takes back is no space
		// (some producers kern that way); a gap opened inside a string by
		// character spacing alone is one.
		if g.text == " " && adv < 0.1*math.Abs(ts.size)*f.em {
			g.text = ""
		}
		text.WriteString(g.text)
		if extra > wordGap*math.Abs(ts.size)*f.em && g.text != " " {
			gaps = append(gaps, text.Len())
		}
		// Where the glyph ends on the page: spacing after the last one
		// moves the pen, not the text.
		if f.vertical {
			visible = translate(0, -w*ts.size).mul(ts.tm)
			ts.tm = translate(0, -adv).mul(ts.tm)
			return
		}
		visible = translate(w*ts.size*ts.th, 0).mul(ts.tm)
		ts.tm = translate(adv*ts.th, 0).mul(ts.tm)
	})
	str := text.String()
	if len(gaps) > 0 {
		var b strings.Builder
		last := 0
		for _, at := range gaps {
			if at < len(str) {
				b.WriteString(str[last:at])
				b.WriteString(" ")
				last = at
			}
		}
		b.WriteString(str[last:])
		str = b.String()
	}
	end := visible.mul(ctm)
	return in.out.emit(str, x0, y0, end[4], end[5], h, dx, dy)
}

// textOut lays shown strings out as lines and words from where they are
// drawn: a string further along the same baseline is a new word, one on
// another baseline a new line.
type textOut struct {
	b              []byte
	runes, max     int
	full           bool
	have           bool
	lx, ly, lh     float64 // where the last string ended, its height
	ldx, ldy       float64 // its direction
	lastSpace      bool
	pendingNewline bool
	// fwd and back count the strings of the line being written placed
	// after the last one and before it; logical marks the lines written
	// so far that went backwards (right-to-left text placed glyph by
	// glyph, already in logical order).
	fwd, back int
	logical   []bool
	// pieces are the runs of text the page was written in, with where
	// they stand, for putting columns drawn out of order back in reading
	// order (order.go). A new piece starts on a new line and after a gap
	// on a line wide enough to be a gutter.
	pieces        []piece
	sepAt         int    // where the separator before the next piece begins in b
	hyph          string // the hyphen taken back before the next piece
	pendingPiece  bool
	tooMany       bool // more pieces than are worth ordering
	reorderedDone bool // String put the pieces in another order
}

func (o *textOut) String() string {
	if s, ok := o.reordered(); ok {
		o.reorderedDone = true
		return s
	}
	lines := append(o.logical, o.back > o.fwd)
	return logicalOrder(strings.TrimSpace(string(o.b)), func(i int) bool { return i < len(lines) && lines[i] })
}

func (o *textOut) emit(s string, x0, y0, x1, y1, h, dx, dy float64) error {
	if o.full {
		return errFull
	}
	if h <= 0 || math.IsNaN(h) || math.IsInf(h, 0) {
		h = 1
	}
	if o.have {
		ex, ey := x0-o.lx, y0-o.ly
		along := ex*dx + ey*dy
		across := -ex*dy + ey*dx
		lh := max(h, o.lh)
		switch {
		case math.Abs(dx-o.ldx) > 0.01 || math.Abs(dy-o.ldy) > 0.01, math.Abs(across) > 0.6*lh,
			math.IsNaN(along+across) || math.IsInf(along+across, 0):
			// Another direction, another line, or drawn past where a
			// float reaches.
			o.pendingNewline = true
		case along > wordGap*lh, along < -lh:
			if along > pieceGap*lh || along < -lh {
				o.pendingPiece, o.sepAt, o.hyph = true, len(o.b), ""
			}
			if !o.lastSpace {
				o.write(" ")
			}
		}
		if along > 0.01*lh {
			o.fwd++
		} else if along < -0.01*lh && along > -3*lh {
			o.back++
		}
	}
	if s != "" || !o.have {
		o.have = true
	}
	o.lx, o.ly, o.lh, o.ldx, o.ldy = x1, y1, h, dx, dy
	if strings.TrimSpace(s) == "" && s != "" && o.pendingNewline {
		return nil
	}
	wrote := false
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\t') {
			continue
		}
		if o.pendingNewline {
			o.pendingNewline = false
			o.pendingPiece, o.sepAt, o.hyph = true, len(o.b), ""
			switch {
			case unicode.IsLower(r) && o.dehyphenate():
				// A word broken at the end of a line is one word.
				o.sepAt = len(o.b)
			case len(o.b) > 0:
				o.write("\n")
			}
			if unicode.IsSpace(r) {
				continue
			}
		}
		if unicode.IsSpace(r) {
			if o.lastSpace {
				continue
			}
			r = ' '
		} else if o.pendingPiece || len(o.pieces) == 0 && !o.tooMany {
			o.startPiece()
		}
		o.write(string(r))
		if o.full {
			return errFull
		}
		wrote = true
	}
	if wrote && strings.TrimSpace(s) != "" {
		o.place(x0, y0, x1, y1, h, dx, dy)
	}
	return nil
}

func (o *textOut) write(s string) {
	if o.runes >= o.max {
		o.full = true
		return
	}
	if s == "\n" {
		o.logical = append(o.logical, o.back > o.fwd)
		o.fwd, o.back = 0, 0
	}
	o.b = append(o.b, s...)
	o.runes += utf8.RuneCountInString(s)
	o.lastSpace = s == " " || s == "\n"
}

// dehyphenate takes back the hyphen that ends the text when a letter
// comes before it (a word broken across lines), as pdftotext does.
func (o *textOut) dehyphenate() bool {
	last, n := utf8.DecodeLastRune(o.b)
	if last != '-' && last != '\u00ad' {
		return false
	}
	before, _ := utf8.DecodeLastRune(o.b[:len(o.b)-n])
	if !unicode.IsLetter(before) {
		return false
	}
	o.hyph = string(o.b[len(o.b)-n:])
	o.b = o.b[:len(o.b)-n]
	o.runes--
	return true
}
