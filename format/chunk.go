package format

import (
	"slices"
	"strings"
)

// Goldmark's inline parser is quadratic on some inputs (issue 38): every
// "](" scans the rest of its line for the link's end, every unmatched
// backtick run, "][" or link title scans the rest of its block, and every
// emphasis closer looks back over all the delimiters before it. Nothing
// interrupts a parse, so Render bounds what it gives goldmark instead: the
// answer is cut into chunks (groups of top-level blocks between blank
// lines, cut only where parsing each chunk alone gives the blocks parsing
// the whole gives), the cost of parsing each chunk is bounded from above by
// one pass over it, and a chunk over its budget (or past the answer's) is
// shown as the text it is, escaped, instead of as markdown.
const (
	// maxMarkdown is how much of an answer is formatted: the chunks that
	// start past it show as typed.
	maxMarkdown = 128 << 10
	// maxChunk is the longest chunk formatted.
	maxChunk = 32 << 10
	// chunkBudget and answerBudget bound the steps goldmark may take for
	// one chunk and for all of an answer, as cost counts them.
	chunkBudget  = 1 << 24
	answerBudget = 1 << 26
	// maxNesting is the most container markers (">", list items) one line
	// may open: deeper nesting costs goldmark (and a reader) more than it
	// shows.
	maxNesting = 16
	// tableCell weighs one table cell in steps: a cell is a few nodes.
	tableCell = 1 << 10
)

// minChunk is the shortest chunk: each parse costs goldmark a few
// microseconds of setup, so small blocks are parsed together. A variable
// so tests can cut at every place a chunk may end.
var minChunk = 1 << 10

// chunk is a byte range of an answer that parses alone as it parses with
// the rest. A chunk shown as typed may come in parts (first … last), so
// that a growing answer's long plain text is not read again and again.
type chunk struct {
	start, end  int
	plain       bool // shown as typed, not parsed
	first, last bool // plain: the first and the last part of the text shown as typed
	defs        bool // may hold link reference definitions
}

// segLen is how often a chunk's cost is checked, in bytes, and how long
// the parts of a plain chunk are.
const segLen = 4 << 10

// cost adds up, byte by byte, what bounds goldmark's steps on a chunk.
type cost struct {
	lineSteps int // Σ per line: link destinations opened × the line's length
	far       int // scans that may run to the end of the chunk
	delims    int // emphasis delimiter runs
	closers   int // "]": each walks its label (at most 999 bytes) and the delimiters
	lines     int
	maxPipes  int // most "|" on one line: a table's cells per row
	maxDepth  int // deepest line, in container markers and indentation
	nested    bool
	defs      bool

	line lineCost // the line being read
}

// lineCost is what one line adds to a cost, read byte by byte.
type lineCost struct {
	n       int  // bytes read
	prev    byte // the byte before
	prefix  int  // reading the line's container markers: 0 in them, 1 after
	pend    byte // a list marker read, waiting for its space: '-' or '.'
	markers int
	indent  int
	pipes   int
	dests   int // "](" read
	title   int // after the last "](": 1 in its destination, 2 in the spaces after
}

func (l *lineCost) feed(c *cost, b byte) {
	if l.prefix == 0 {
		switch {
		case (l.pend == '-' || l.pend == ':') && (b == ' ' || b == '\t'):
			l.markers++
			l.pend = 0
		case l.pend == '.' && b >= '0' && b <= '9':
			// more digits of an ordered marker
		case l.pend == '.' && (b == '.' || b == ')'):
			l.pend = ':'
		case l.pend != 0:
			l.prefix = 1
		case b == ' ':
			l.indent++
		case b == '\t':
			l.indent += 4
		case b == '>':
			l.markers++
		case b == '-' || b == '+' || b == '*':
			l.pend = '-'
		case b >= '0' && b <= '9':
			l.pend = '.'
		default:
			l.prefix = 1
		}
		if l.markers > maxNesting {
			c.nested = true
		}
	}
	switch l.title {
	case 1:
		if b == ' ' || b == '\t' {
			l.title = 2
		} else if b == ')' {
			l.title = 0
		}
	case 2:
		if b == '"' || b == '\'' || b == '(' {
			c.far++ // a title looks for its closing quote to the block's end
			l.title = 0
		} else if b != ' ' && b != '\t' {
			l.title = 0
		}
	}
	switch b {
	case '|':
		l.pipes++
	case '*', '_', '~':
		if l.n == 0 || l.prev != b {
			c.delims++
		}
	case '`':
		if l.n == 0 || l.prev != '`' {
			c.far++ // a code span looks for its closing run to the block's end
		}
	case '<':
		c.far++ // raw HTML (a comment) may run to the block's end
	case ']':
		c.closers++
	case '[':
		if l.prev == ']' {
			c.far++ // a full reference looks for its "]" to the block's end
		}
	case '(':
		if l.prev == ']' {
			l.dests++
			l.title = 1
		}
	case ':':
		if l.prev == ']' {
			c.defs = true
		}
	}
	l.prev = b
	l.n++
}

// endLine adds the line read to c.
func (c *cost) endLine() {
	l := &c.line
	c.lines++
	c.lineSteps += l.dests * l.n
	c.maxPipes = max(c.maxPipes, l.pipes)
	c.maxDepth = max(c.maxDepth, l.markers+l.indent/2)
	c.line = lineCost{}
}

// steps is c's bound for a chunk of n bytes, the line being read included.
func (c cost) steps(n int) int {
	if c.line.n > 0 {
		c.endLine()
	}
	if c.nested {
		return answerBudget + 1
	}
	s := c.lineSteps + c.far*n + c.delims*c.delims + c.closers*(c.delims+1000) +
		c.maxPipes*c.lines*tableCell + c.maxDepth*c.lines
	if s < 0 || c.far > n || c.delims > n { // overflow: no budget holds it
		return answerBudget + 1
	}
	return s
}

// chunker finds an answer's chunks as the answer grows. Where a chunk
// ends and whether it is formatted depends only on the bytes before (and
// the first byte after) the place it is decided, so reading an answer at
// once or as it grows gives the same chunks.
type chunker struct {
	fed       int // bytes read
	pos       int // start of the line being read
	start     int // start of the chunk being read
	sub       int // plain: start of its part being read
	checked   int // where the cost was last checked
	plain     bool
	prevBlank bool
	// what may be open at the top level: a line is read every way it may
	// be read (a line starting with "<" may begin an HTML block or go on
	// a paragraph), and a chunk ends only where every way agrees.
	open  []openBlocks
	spare []openBlocks // the ways before the last line, reused for the next
	stuck bool         // too many ways: no chunk ends any more
	cost  cost         // of the chunk being read

	chunks  []chunk // the finished chunks and parts
	mdBytes int     // the finished chunks formatted, in bytes
	mdSteps int     // and in steps
}

// scan reads md (which extends what it read before) and finishes the
// chunks and parts that end in it.
func (k *chunker) scan(md string) {
	for k.fed < len(md) {
		p := k.fed
		b := md[p]
		if p == k.pos && p-k.start >= minChunk && k.prevBlank && k.closed() && safeStart(b) {
			k.finish(p)
		} else if p-k.checked >= segLen && b&0xC0 != 0x80 && !space(b) && b != '\n' {
			k.check(p)
		}
		k.cost.line.feed(&k.cost, b)
		k.fed++
		if b == '\n' {
			k.endLine(md[k.pos:p])
			k.pos = k.fed
		}
	}
}

func space(b byte) bool { return b == ' ' || b == '\t' || b == '\r' }

// check is a place where a part may end: a chunk found too costly here is
// shown as typed from its start, in parts.
func (k *chunker) check(p int) {
	k.checked = p
	if !k.plain {
		if !k.decide(k.cost, k.start, p).plain {
			return
		}
		k.plain = true
	}
	k.chunks = append(k.chunks, chunk{start: k.sub, end: p, plain: true, first: k.sub == k.start})
	k.sub = p
}

// tail is the chunk (or plain part) from the last one finished to the end
// of md.
func (k *chunker) tail(md string) (chunk, bool) {
	if k.plain {
		return chunk{start: k.sub, end: len(md), plain: true, first: k.sub == k.start, last: true}, true
	}
	if k.start >= len(md) {
		return chunk{}, false
	}
	return k.decide(k.cost, k.start, len(md)), true
}

func (k *chunker) finish(end int) {
	if k.plain {
		k.chunks = append(k.chunks, chunk{start: k.sub, end: end, plain: true, first: k.sub == k.start, last: true})
	} else {
		c := k.decide(k.cost, k.start, end)
		if !c.plain {
			k.mdBytes += end - k.start
			k.mdSteps += k.cost.steps(end - k.start)
		}
		k.chunks = append(k.chunks, c)
	}
	k.start, k.sub, k.checked, k.plain = end, end, end, false
	k.cost = cost{}
}

// decide is whether the chunk start:end with cost c is formatted, after
// the finished chunks.
func (k *chunker) decide(c cost, start, end int) chunk {
	n := end - start
	steps := c.steps(n)
	plain := n > maxChunk || k.mdBytes+n > maxMarkdown || steps > chunkBudget || k.mdSteps+steps > answerBudget
	return chunk{start: start, end: end, plain: plain, first: true, last: true, defs: c.defs && !plain}
}

// openBlocks is one way of reading the lines so far: the top-level
// blocks that a blank line does not end.
type openBlocks struct {
	fence    byte   // an open code fence's character, 0 if none
	fenceLen int    // its length
	htmlEnd  string // what ends an open HTML block of kinds 1 to 5
	html     bool   // an HTML block of kinds 6 and 7, ended by a blank line
}

// maxWays bounds the ways of reading an answer's lines kept at once.
const maxWays = 8

func (k *chunker) closed() bool {
	if k.stuck {
		return false
	}
	for _, o := range k.open {
		if o.fence != 0 || o.htmlEnd != "" {
			return false
		}
	}
	return true
}

func (k *chunker) endLine(l string) {
	k.cost.endLine()
	blank := strings.TrimLeft(l, " \t\r") == ""
	k.prevBlank = blank
	if k.stuck {
		return
	}
	if len(k.open) == 0 {
		k.open = append(k.open, openBlocks{})
	}
	next := k.spare[:0]
	add := func(o openBlocks) {
		if !slices.Contains(next, o) {
			next = append(next, o)
		}
	}
	for _, o := range k.open {
		switch {
		case o.htmlEnd != "":
			if strings.Contains(strings.ToLower(l), o.htmlEnd) {
				o.htmlEnd = ""
			}
			add(o)
		case o.fence != 0:
			if ch, n, rest := fenceOf(l); ch == o.fence && n >= o.fenceLen && strings.TrimSpace(rest) == "" {
				o.fence = 0
			}
			add(o)
		case o.html:
			o.html = !blank
			add(o)
		default:
			if ch, n, rest := fenceOf(l); ch != 0 && !(ch == '`' && strings.Contains(rest, "`")) {
				o.fence, o.fenceLen = ch, n
				add(o)
				continue
			}
			add(o) // the line goes on a paragraph or stands alone
			if t := strings.TrimLeft(l, " "); len(l)-len(t) <= 3 && strings.HasPrefix(t, "<") {
				add(openBlocks{html: true}) // it begins an HTML block a blank line ends
				if end := htmlBlockEnd(t); end != "" && !strings.Contains(strings.ToLower(t)[1:], end) {
					add(openBlocks{htmlEnd: end}) // or one only its end tag ends
				}
			}
		}
	}
	if len(next) > maxWays {
		k.stuck = true
		return
	}
	k.open, k.spare = next, k.open
}

// fenceOf reads a code fence at the start of l (after at most three
// spaces): its character and length and what follows it.
func fenceOf(l string) (ch byte, n int, rest string) {
	i := 0
	for i < 3 && i < len(l) && l[i] == ' ' {
		i++
	}
	if i >= len(l) || l[i] != '`' && l[i] != '~' {
		return 0, 0, ""
	}
	ch = l[i]
	j := i
	for j < len(l) && l[j] == ch {
		j++
	}
	if j-i < 3 {
		return 0, 0, ""
	}
	return ch, j - i, l[j:]
}

// htmlBlockEnd is what ends an HTML block of CommonMark's kinds 1 to 5
// (the ones blank lines do not end) starting at l, "" if none starts.
// It errs towards seeing one: that only joins chunks.
func htmlBlockEnd(s string) string {
	s = strings.ToLower(s)
	for _, tag := range []string{"pre", "script", "style", "textarea"} {
		if strings.HasPrefix(s[1:], tag) {
			return "</" + tag + ">"
		}
	}
	switch {
	case strings.HasPrefix(s, "<!--"):
		return "-->"
	case strings.HasPrefix(s, "<?"):
		return "?>"
	case strings.HasPrefix(s, "<![cdata["):
		return "]]>"
	case strings.HasPrefix(s, "<!"):
		return ">"
	}
	return ""
}

// safeStart is whether a line starting with c after a blank line, at the
// top level, begins a block that continues nothing before it: not
// indented (a list item's or a code block's continuation), not a list
// marker, a quote or a fence.
func safeStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || strings.IndexByte("#[!(\"'_<", c) >= 0
}
