package format

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// kind tells the splitter what a unit is: markup it may close and reopen
// across a cut, text it may cut only when nothing better is in reach, or a
// break where a reader expects a cut (and which the cut then drops).
type kind uint8

const (
	kText  kind = iota // visible text; cut inside only as a last resort
	kAtom              // visible text never cut inside (a bullet, a line prefix)
	kOpen              // markup opening an entity
	kClose             // markup closing the innermost open entity
	kSpace             // a space between words
	kLine              // a line break
	kPara              // a blank line between blocks
)

// unit is one indivisible step of a rendered answer. n is what it adds to
// the piece's length as its network counts.
type unit struct {
	kind  kind
	out   string // the bytes written
	vis   string // kText: the visible text out was made from (to re-escape halves)
	n     int
	close string // kOpen: the markup that closes it
	nc    int    // kOpen: the length the closing markup adds
}

// frame is one open entity; frames form an immutable stack so the
// splitter can remember the stack at every cut candidate for free.
type frame struct {
	open   unit // a copy: the units before a final piece are let go of
	parent *frame
	closeN int // the length of closing this frame and all below it
}

func (f *frame) closes() string {
	var b strings.Builder
	for ; f != nil; f = f.parent {
		b.WriteString(f.open.close)
	}
	return b.String()
}

func (f *frame) reopen(b *strings.Builder) int {
	if f == nil {
		return 0
	}
	n := f.parent.reopen(b)
	b.WriteString(f.open.out)
	return n + f.open.n
}

func (f *frame) closeLen() int {
	if f == nil {
		return 0
	}
	return f.closeN
}

func push(f *frame, u *unit) *frame {
	return &frame{open: *u, parent: f, closeN: f.closeLen() + u.nc}
}

func (f *frame) pop() *frame {
	if f == nil {
		return nil
	}
	return f.parent
}

// counter measures text the way a network measures a message.
type counter func(s string) int

func runes(s string) int { return utf8.RuneCountInString(s) }

func zero(string) int { return 0 }

// utf16Len is how Telegram counts: UTF-16 code units, so an emoji outside
// the Basic Multilingual Plane is two.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++ // invalid UTF-8 becomes U+FFFD, one unit
		}
	}
	return n
}

// split cuts units into pieces of at most limit (0: one piece), at the
// best break in the second half of a piece, never inside an entity: the
// entities open at a cut are closed at the end of one piece and reopened at
// the start of the next. Pieces without visible text are left out.
func (nw *network) split(units []unit, limit int) []string {
	s := splitter{nw: nw, limit: limit}
	var pieces []string
	for {
		p, vis, _, ok := s.next(units)
		if !ok {
			return pieces
		}
		if vis {
			pieces = append(pieces, p)
		}
	}
}

// splitter cuts pieces one at a time and can go on later from where it
// stopped, so a growing answer's finished pieces are cut once.
type splitter struct {
	nw      *network
	limit   int
	started bool
	i       int    // the unit the next piece starts at
	head    *unit  // what is left of units[i] after a cut inside it, if one was
	carry   *frame // the entities the next piece reopens
}

// next cuts the next piece from units: its text, whether it has visible
// text, and the last unit its cut depended on (ok false: none is left).
func (s *splitter) next(units []unit) (piece string, visible bool, reached int, ok bool) {
	nw := s.nw
	limit := s.limit
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	if !s.started {
		s.started = true
		s.i = skipBreaks(units, 0)
	}
	i := s.i
	if i >= len(units) {
		return "", false, len(units), false
	}
	at := func(j int) *unit {
		if j == i && s.head != nil {
			return s.head
		}
		return &units[j]
	}
	var b strings.Builder
	length := s.carry.reopen(&b)
	stack := s.carry
	vis := 0
	// best cut per break kind: the unit index of the break, the stack
	// and the length before it, and the visible text so far.
	type cand struct {
		at, length, visible int
		stack               *frame
	}
	var best [kPara + 1]cand
	for k := range best {
		best[k].at = -1
	}
	write := func(from, to int) {
		for j := from; j < to; j++ {
			b.WriteString(at(j).out)
		}
	}
	j := i
	for ; j < len(units); j++ {
		u := at(j)
		need := length + u.n + stack.closeLen() // the piece with u, closed
		switch u.kind {
		case kSpace, kLine, kPara:
			best[u.kind] = cand{at: j, length: length, visible: vis, stack: stack}
		case kOpen:
			need += u.nc
		case kClose:
			need = 0 // closing only moves length from the reserve to the piece
		}
		// A piece always takes its first unit unless it is text to
		// cut, or a limit smaller than some markup would loop forever.
		if need > limit && (j > i || u.kind == kText) {
			break
		}
		length += u.n
		switch u.kind {
		case kOpen:
			stack = push(stack, u)
		case kClose:
			stack = stack.pop()
		case kText, kAtom:
			vis += u.n
		}
	}
	if j == len(units) {
		write(i, j)
		s.i, s.head = j, nil
		return b.String(), vis > 0, j, true
	}
	// Prefer the strongest break in the second half of the piece.
	var pick *cand
	for k := kPara; k >= kSpace; k-- {
		if c := &best[k]; c.at >= 0 && c.length*2 >= limit && c.visible > 0 {
			pick = c
			break
		}
	}
	// The next piece starts at next with the entities of cutStack
	// reopened.
	next, cutStack, head := j, stack, (*unit)(nil)
	switch {
	case pick != nil:
		write(i, pick.at)
		vis = pick.visible
		cutStack = pick.stack
		next = skipBreaks(units, pick.at+1)
	case at(j).kind == kText:
		u := at(j)
		h, rest := nw.cutText(u.vis, limit-length-stack.closeLen(), j == i)
		write(i, j)
		b.WriteString(nw.escape(h))
		vis += nw.count(h)
		// the rest of the cut text is where the next piece starts
		r := nw.textUnit(rest)
		head = &r
	default:
		write(i, j)
	}
	b.WriteString(cutStack.closes())
	s.i, s.head, s.carry = next, head, cutStack
	return b.String(), vis > 0, max(j, next), true
}

func writeUnits(b *strings.Builder, us []unit) {
	for k := range us {
		b.WriteString(us[k].out)
	}
}

func skipBreaks(units []unit, i int) int {
	for i < len(units) && (units[i].kind == kSpace || units[i].kind == kLine || units[i].kind == kPara) {
		i++
	}
	return i
}

// cutText splits visible text so the head measures at most max, never
// inside a rune (nor, for Telegram, inside a surrogate pair).
// With force the head is at least one rune, so a piece always advances.
func (nw *network) cutText(s string, max int, force bool) (head, rest string) {
	n := 0
	for k, r := range s {
		w := nw.count(string(r))
		if n+w > max && (k > 0 || !force) {
			return s[:k], s[k:]
		}
		n += w
	}
	return s, ""
}
