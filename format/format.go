// Package format shows a model's markdown answer the way each network
// shows text: Telegram's HTML parse mode, Slack mrkdwn, WhatsApp markup,
// sanitised HTML for the web room, and plain text for a channel that had
// to fall back. The markdown is parsed once by goldmark and its tree is
// walked; nothing here matches markdown with regular expressions, so what
// the model typed by mistake (an unbalanced "**", a "<b>" or "<script>")
// is text, escaped for the network, never markup.
//
// Render also cuts the answer into pieces a network accepts, never inside
// a formatting entity: the entities open at a cut are closed at the end of
// one piece and reopened at the start of the next.
package format

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Network names a way of showing text.
type Network string

// The networks Render knows. Any other value renders as Plain.
const (
	Telegram Network = "telegram"
	Slack    Network = "slack"
	WhatsApp Network = "whatsapp"
	Web      Network = "web"
	// WebDraft is Web for an answer still being written: code blocks are
	// not coloured yet.
	WebDraft Network = "web-draft"
	Plain    Network = "plain"
)

// The networks' own limits on one message, in their own counting, for
// callers to pass to Render.
const (
	TelegramLimit = 4096  // UTF-16 code units of the text after entity parsing
	SlackLimit    = 40000 // characters of the mrkdwn text
	WhatsAppLimit = 65536 // characters
)

// md parses CommonMark with GFM's strikethrough, tables and bare links;
// goldmark parsers are safe for concurrent use.
var md = goldmark.New(goldmark.WithExtensions(extension.Strikethrough, extension.Table, extension.Linkify))

// defsParser reads blocks only, for the link reference definitions a
// chunk holds: they apply to the whole answer.
var defsParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithParagraphTransformers(append(parser.DefaultParagraphTransformers(),
		util.Prioritized(extension.NewTableParagraphTransformer(), 200))...),
)

// maxDefs is the most link reference definitions that apply to a whole
// answer; more apply only inside their own chunk. Each new one makes a
// growing answer's formatted chunks render again.
const maxDefs = 64

// Render formats markdown for a network and cuts it into pieces whose
// visible text is at most limit characters as the network counts them
// (0: no cut), never inside a formatting entity. Text with nothing
// visible renders as no pieces. What would cost goldmark more than its
// budget (see chunk.go) shows as typed.
//
// A live answer is rendered again and again as it grows (a channel shows
// the whole text so far each time): Render keeps the Renderers of the
// last few long answers, and a text that extends one of them is read on
// from where that one stopped.
func Render(markdown string, network Network, limit int) []string {
	if len(markdown) < recentMin {
		return NewRenderer(network, limit).Render(markdown)
	}
	r := takeRecent(markdown, networkFor(network), limit)
	if r == nil {
		r = NewRenderer(network, limit)
	}
	pieces := r.Render(markdown)
	putRecent(r)
	return pieces
}

// recent holds the Renderers of the last answers Render rendered that
// were long enough to be worth going on from. A Renderer in use is out
// of the list, so two goroutines never share one.
var recent struct {
	sync.Mutex
	rs []*Renderer // the most recent last
}

const (
	recentMin = 2 << 10 // the shortest answer whose Renderer is kept
	recentMax = 8       // how many are kept
)

// takeRecent takes out the kept Renderer whose text markdown extends the
// furthest, if one does.
func takeRecent(markdown string, nw *network, limit int) *Renderer {
	recent.Lock()
	defer recent.Unlock()
	best := -1
	for i, r := range recent.rs {
		if r.nw == nw && r.limit == limit && len(r.src) <= len(markdown) && strings.HasPrefix(markdown, r.src) &&
			(best < 0 || len(r.src) > len(recent.rs[best].src)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	r := recent.rs[best]
	recent.rs = slices.Delete(recent.rs, best, best+1)
	return r
}

func putRecent(r *Renderer) {
	recent.Lock()
	defer recent.Unlock()
	if len(recent.rs) >= recentMax {
		recent.rs = slices.Delete(recent.rs, 0, 1)
	}
	recent.rs = append(recent.rs, r)
}

// Renderer renders one answer as it grows (a live answer): each call
// gives what Render gives for the text, but reads again only what
// changed since the call before when the text extends the text before,
// so an answer rendered every few kilobytes up to its end costs time
// linear in its length. A Renderer is not safe for concurrent use.
type Renderer struct {
	nw    *network
	limit int

	src      string // the text rendered last
	k        chunker
	w        walker
	done     int      // chunks whose units are in w.units up to mark
	defsRead int      // chunks whose definitions are in defs
	mark     snapshot // the walker after them
	defs     []parser.Reference
	defKey   string // defs as they were when the done chunks rendered

	split    splitter // after the final pieces
	pieces   []string // the final pieces: their units are all done
	window   int      // units to wait for before trying to cut again
	whole    []byte   // without a limit: the start of the one piece, from the units done
	wholeVis int      // its visible length
}

// snapshot is the walker between two chunks.
type snapshot struct {
	units       int
	opens       []closing
	pending     kind
	pendPrefix  string
	atLineStart bool
	wrote       bool
}

// NewRenderer renders answers for network cut at limit, as Render does.
func NewRenderer(network Network, limit int) *Renderer {
	r := &Renderer{nw: networkFor(network), limit: limit}
	r.reset()
	return r
}

func (r *Renderer) reset() {
	nw := r.nw
	r.src = ""
	r.k = chunker{}
	r.w = walker{nw: nw, atLineStart: true}
	r.done, r.mark = 0, snapshot{atLineStart: true}
	r.defs, r.defKey = nil, ""
	r.resetSplit()
}

func (r *Renderer) resetSplit() {
	r.split = splitter{nw: r.nw, limit: r.limit}
	r.pieces, r.window, r.whole, r.wholeVis = nil, 0, nil, 0
}

// Render renders markdown, the answer so far.
func (r *Renderer) Render(markdown string) []string {
	if !strings.HasPrefix(markdown, r.src) {
		r.reset()
	}
	r.src = markdown
	r.k.scan(markdown)
	tail, hasTail := r.k.tail(markdown)

	// Definitions anywhere apply everywhere: a new one renders the done
	// chunks again.
	for ; r.defsRead < len(r.k.chunks); r.defsRead++ {
		c := r.k.chunks[r.defsRead]
		r.defs = addDefs(r.defs, markdown[c.start:c.end], c)
	}
	all := r.defs
	if hasTail {
		all = addDefs(slices.Clip(all), markdown[tail.start:tail.end], tail)
	}
	if key := defsKey(all); key != r.defKey {
		r.defKey = key
		r.w = walker{nw: r.nw, atLineStart: true}
		r.done, r.mark = 0, snapshot{atLineStart: true}
		r.resetSplit()
	}

	r.restore()
	if cap(r.w.units) == 0 {
		// about a unit per three bytes; the units held are those after
		// the last final piece, so a few thousand at most for long ones
		r.w.units = make([]unit, 0, min(len(markdown)/3+8, 4096))
	}
	for r.done < len(r.k.chunks) {
		c := r.k.chunks[r.done]
		r.w.chunk(markdown[c.start:c.end], c, all)
		r.done++
		r.mark = r.w.snapshot()
		if len(r.w.units)-r.split.i >= max(1<<12, r.window) {
			r.cutFinal()
		}
	}
	r.cutFinal()
	if hasTail {
		r.w.chunk(markdown[tail.start:tail.end], tail, all)
	}
	if r.limit <= 0 {
		return r.wholePiece()
	}
	pieces := slices.Clip(r.pieces)
	s := r.split
	for {
		p, vis, _, ok := s.next(r.w.units)
		if !ok {
			break
		}
		if vis {
			pieces = append(pieces, p)
		}
	}
	return slices.Clone(pieces)
}

// wholePiece is the answer as one piece: the units done, then the tail's.
func (r *Renderer) wholePiece() []string {
	units := r.w.units
	i, vis := r.split.i, r.wholeVis
	if !r.split.started {
		i = skipBreaks(units, 0)
	}
	b := make([]byte, len(r.whole), len(r.whole)+256)
	copy(b, r.whole)
	for _, u := range units[i:] {
		b = append(b, u.out...)
		if u.kind == kText || u.kind == kAtom {
			vis += u.n
		}
	}
	if vis == 0 {
		return nil
	}
	return []string{string(b)}
}

// cutFinal cuts the pieces whose units are all done (a piece's cut
// depends on the units it holds and the one after), and lets go of the
// units before the next piece: only the last few thousand are held.
func (r *Renderer) cutFinal() {
	if r.limit <= 0 {
		r.cutWhole()
		return
	}
	if len(r.w.units)-r.split.i < r.window {
		return // the last try found no final piece in fewer units
	}
	s := r.split
	for {
		p, vis, reached, ok := s.next(r.w.units)
		if !ok || reached >= r.mark.units {
			// try again only when twice as many units wait
			r.window = 2 * (len(r.w.units) - r.split.i)
			break
		}
		r.window = 0
		if vis {
			r.pieces = append(r.pieces, p)
		}
		r.split = s
	}
	r.compact()
}

// cutWhole is cutFinal without a limit: the answer is one piece, the
// units done are written into its start at once.
func (r *Renderer) cutWhole() {
	s := &r.split
	if !s.started {
		i := skipBreaks(r.w.units, 0)
		if i >= r.mark.units {
			return // only breaks yet: the piece may start later still
		}
		s.started, s.i = true, i
	}
	for _, u := range r.w.units[s.i:r.mark.units] {
		r.whole = append(r.whole, u.out...)
		if u.kind == kText || u.kind == kAtom {
			r.wholeVis += u.n
		}
	}
	s.i = r.mark.units
	r.compact()
}

// compact lets go of the units before the next piece's start.
func (r *Renderer) compact() {
	d := r.split.i
	if d < 1<<10 || d*2 < r.mark.units {
		return
	}
	r.w.units = r.w.units[:copy(r.w.units, r.w.units[d:r.mark.units])]
	r.split.i -= d
	r.mark.units -= d
}

func (r *Renderer) restore() {
	m := r.mark
	w := &r.w
	w.units = w.units[:m.units]
	w.opens = append(w.opens[:0], m.opens...)
	w.pending, w.pendPrefix, w.atLineStart, w.wrote = m.pending, m.pendPrefix, m.atLineStart, m.wrote
}

func (w *walker) snapshot() snapshot {
	return snapshot{units: len(w.units), opens: slices.Clone(w.opens), pending: w.pending,
		pendPrefix: w.pendPrefix, atLineStart: w.atLineStart, wrote: w.wrote}
}

// addDefs adds the link reference definitions of chunk c (text src) to
// defs, the first definition of a label winning as in CommonMark.
func addDefs(defs []parser.Reference, src string, c chunk) []parser.Reference {
	if !c.defs || len(defs) >= maxDefs {
		return defs
	}
	ctx := parser.NewContext()
	defsParser.Parse(text.NewReader([]byte(src)), parser.WithContext(ctx))
	found := ctx.References()
	// the map's order is random: keep the order of the text
	slices.SortFunc(found, func(a, b parser.Reference) int {
		return strings.Index(src, string(a.Label())) - strings.Index(src, string(b.Label()))
	})
	for _, ref := range found {
		if len(defs) >= maxDefs {
			break
		}
		key := util.ToLinkReference(ref.Label())
		if !slices.ContainsFunc(defs, func(d parser.Reference) bool { return util.ToLinkReference(d.Label()) == key }) {
			defs = append(defs, ref)
		}
	}
	return defs
}

// defsKey is defs as one comparable value.
func defsKey(defs []parser.Reference) string {
	var b strings.Builder
	for _, d := range defs {
		b.Write(d.Label())
		b.WriteByte(0)
		b.Write(d.Destination())
		b.WriteByte(0)
		b.Write(d.Title())
		b.WriteByte(0)
	}
	return b.String()
}

// chunk renders one chunk of the answer (src) after the ones before it.
func (w *walker) chunk(src string, c chunk, defs []parser.Reference) {
	if c.plain {
		w.plain(src, c)
		return
	}
	ctx := parser.NewContext()
	for _, d := range defs {
		ctx.AddReference(d)
	}
	w.src = []byte(src)
	w.block(md.Parser().Parse(text.NewReader(w.src), parser.WithContext(ctx)))
}

// plain writes a part of a chunk shown as the text it is.
func (w *walker) plain(s string, c chunk) {
	if c.first {
		s = strings.TrimLeft(s, " \t\r\n")
	}
	if c.last {
		s = strings.TrimRight(s, " \t\r\n")
	}
	if c.first && c.last && s == "" {
		return
	}
	if c.first && w.nw.html {
		w.open("<p>", "</p>")
	}
	w.plainText(s)
	if c.last {
		if w.nw.html {
			w.close()
		}
		w.pendPrefix = ""
		w.pending = kPara
	}
}

// closing is the markup that closes an open unit.
type closing struct {
	out string
	n   int
}

// walker turns the goldmark tree into units for one network.
type walker struct {
	nw  *network
	src []byte

	units       []unit
	opens       []closing // what closes the open units, innermost last
	prefix      []string  // line prefixes (quotes, list indents) on networks without block tags
	pending     kind      // the break owed before the next content: 0, kLine or kPara
	pendPrefix  string    // the line prefix where the owed break began
	atLineStart bool
	wrote       bool // anything written yet (no break before the first block)

	bold, italic, strike, code, link, quote int // how deep each is open
}

func (w *walker) curPrefix() string { return strings.Join(w.prefix, "") }

// flush writes the break owed since the last block and the line prefix.
func (w *walker) flush() {
	if w.pending != 0 && w.wrote {
		out := "\n"
		if w.nw.html {
			w.units = append(w.units, unit{kind: w.pending, out: out})
		} else {
			if w.pending == kPara {
				// the blank line belongs to what both sides share (a quote
				// going on is still quoted; one just begun is not yet)
				out = "\n" + strings.TrimRight(commonPrefix(w.pendPrefix, w.curPrefix()), " ") + "\n"
			}
			w.units = append(w.units, unit{kind: w.pending, out: out, n: w.nw.count(out)})
		}
		w.atLineStart = true
	}
	w.pending = 0
	if w.atLineStart {
		w.atLineStart = false
		if p := w.curPrefix(); p != "" && !w.nw.html {
			// a prefix is visible text (an indent) or counted markup ("> "): its runes either way
			w.units = append(w.units, unit{kind: kAtom, out: p, n: runes(p)})
		}
	}
	w.wrote = true
}

// text writes visible text: words, spaces between them, line breaks.
func (w *walker) text(s string) {
	for s != "" {
		switch s[0] {
		case '\n':
			w.flush()
			w.newline()
			s = s[1:]
		case ' ':
			k := 1
			for k < len(s) && s[k] == ' ' {
				k++
			}
			w.flush()
			w.units = append(w.units, unit{kind: kSpace, out: s[:k], n: w.nw.count(s[:k])})
			s = s[k:]
		default:
			k := strings.IndexAny(s, " \n")
			if k < 0 {
				k = len(s)
			}
			w.flush()
			w.word(s[:k])
			s = s[k:]
		}
	}
}

// plainRun is the shortest run of text shown as typed that is one unit:
// the text is cut at a space or a line break after it, so a text of tiny
// words ("1. 1. 1. ") is not a unit per word and per space.
const plainRun = 64

// plainText writes text shown as typed in runs of plainRun bytes or more,
// each followed by the spaces or the line break that may end a piece.
func (w *walker) plainText(s string) {
	for s != "" {
		k := 0
		for k < len(s) {
			j := strings.IndexAny(s[k:], " \n")
			if j < 0 {
				k = len(s)
				break
			}
			if k+j >= plainRun || k+j == 0 {
				k += j
				break
			}
			k += j + 1 // the space or line break stays inside the run
		}
		if k > 0 {
			w.flush()
			w.word(s[:k])
			s = s[k:]
		}
		switch {
		case s == "":
		case s[0] == '\n':
			w.flush()
			w.newline()
			s = s[1:]
		default:
			n := len(s) - len(strings.TrimLeft(s, " "))
			w.flush()
			w.units = append(w.units, unit{kind: kSpace, out: s[:n], n: w.nw.count(s[:n])})
			s = s[n:]
		}
	}
}

// maxUnit is the longest text unit: a cut inside a unit escapes its rest
// again, so a long word is several units (which cut and show as one).
const maxUnit = 512

func (w *walker) word(s string) {
	for len(s) > maxUnit {
		k := maxUnit
		for k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		if k == 0 {
			k = maxUnit
		}
		w.units = append(w.units, w.nw.textUnit(s[:k]))
		s = s[k:]
	}
	w.units = append(w.units, w.nw.textUnit(s))
}

func (w *walker) newline() {
	u := unit{kind: kLine, out: "\n"}
	if !w.nw.html {
		u.n = w.nw.count("\n")
	}
	w.units = append(w.units, u)
	w.atLineStart = true
}

// code writes preformatted text: whole lines, cut inside only when a line
// alone is longer than a piece, and then without losing a character.
func (w *walker) codeLines(s string) {
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			w.newline()
		}
		w.flush()
		if line != "" {
			w.word(line)
		}
	}
}

// atom writes visible text that is never cut inside (a bullet, a rule).
func (w *walker) atom(s string, out string) {
	w.flush()
	w.units = append(w.units, unit{kind: kAtom, out: out, n: w.nw.count(s)})
}

func (w *walker) open(out, close string) {
	w.flush()
	u := unit{kind: kOpen, out: out, n: w.nw.markup(out), close: close, nc: w.nw.markup(close)}
	w.opens = append(w.opens, closing{u.close, u.nc})
	w.units = append(w.units, u)
}

func (w *walker) close() {
	o := w.opens[len(w.opens)-1]
	w.opens = w.opens[:len(w.opens)-1]
	w.units = append(w.units, unit{kind: kClose, out: o.out, n: o.n})
}

// sep owes the break that follows a block: a line inside a tight list,
// a blank line elsewhere.
func (w *walker) sep(n ast.Node) {
	w.pendPrefix = w.curPrefix()
	w.pending = kPara
	if tightItem(n) {
		w.pending = kLine
	}
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

func tightItem(n ast.Node) bool {
	item := n
	if _, ok := n.(*ast.ListItem); !ok {
		item = n.Parent()
	}
	if _, ok := item.(*ast.ListItem); !ok {
		return false
	}
	l, ok := item.Parent().(*ast.List)
	return ok && l.IsTight
}

func (w *walker) children(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Type() == ast.TypeBlock {
			w.block(c)
		} else {
			w.inline(c)
		}
	}
}

func (w *walker) block(n ast.Node) {
	nw := w.nw
	switch n := n.(type) {
	case *ast.Document:
		w.children(n)
		return
	case *ast.Paragraph:
		if nw.html {
			w.open("<p>", "</p>")
			w.children(n)
			w.close()
		} else {
			w.children(n)
		}
	case *ast.TextBlock:
		w.children(n)
	case *ast.Heading:
		w.heading(n)
	case *ast.ThematicBreak:
		if nw.html {
			w.atom("─", "<hr>") // counted as one character, so a piece of only a rule is kept
		} else {
			const rule = "──────────"
			w.atom(rule, nw.escape(rule))
		}
	case *ast.CodeBlock:
		w.codeBlock("", n.Lines())
	case *ast.FencedCodeBlock:
		lang := ""
		if n.Info != nil {
			lang = string(n.Language(w.src))
		}
		w.codeBlock(lang, n.Lines())
	case *ast.Blockquote:
		w.blockquote(n)
	case *ast.List:
		w.list(n)
	case *ast.ListItem:
		// reached only through list
		w.children(n)
	case *ast.HTMLBlock:
		// Raw HTML from the model is shown as the text it is.
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(w.src))
		}
		if n.HasClosure() {
			b.Write(n.ClosureLine.Value(w.src))
		}
		s := strings.TrimRight(b.String(), "\n")
		if nw.html {
			w.open("<p>", "</p>")
			w.text(s)
			w.close()
		} else {
			w.text(s)
		}
	case *east.Table:
		w.table(n)
	default:
		w.children(n)
	}
	w.sep(n)
}

func (w *walker) heading(n *ast.Heading) {
	nw := w.nw
	switch {
	case nw.html:
		lv := min(n.Level+2, 6)
		w.open("<h"+strconv.Itoa(lv)+">", "</h"+strconv.Itoa(lv)+">")
		w.children(n)
		w.close()
	case nw.name == Plain:
		w.children(n)
	default:
		w.bold++
		w.open(nw.boldOpen, nw.boldClose)
		w.children(n)
		w.close()
		w.bold--
	}
}

func (w *walker) codeBlock(lang string, lines *text.Segments) {
	var b bytes.Buffer
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(w.src))
	}
	w.pre(lang, strings.TrimRight(b.String(), "\n"))
}

// pre writes a block of monospace text (code, a table).
func (w *walker) pre(lang, s string) {
	nw := w.nw
	lang = cleanLang(lang)
	switch nw.name {
	case Telegram, Web:
		if lang != "" {
			w.open(`<pre><code class="language-`+lang+`">`, "</code></pre>")
		} else if nw.html {
			w.open("<pre><code>", "</code></pre>")
		} else {
			w.open("<pre>", "</pre>")
		}
	case Slack:
		// The fence's own line break carries the prefix, so a block in a
		// quote or a list item stays inside it.
		p := w.curPrefix()
		w.open("```\n"+p, "\n"+p+"```")
	case WhatsApp:
		w.open("```", "```")
	default:
		w.codeLines(s)
		return
	}
	// The web rooms colour code whose language is named; elsewhere the
	// network shows it plain.
	if !nw.highlight || lang == "" || !w.highlighted(lang, s) {
		w.codeLines(s)
	}
	w.close()
}

// cleanLang keeps a code block's language only when it is a plain name.
func cleanLang(s string) string {
	if len(s) > 32 {
		return ""
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("+-_#.", r)) {
			return ""
		}
	}
	return s
}

func (w *walker) blockquote(n *ast.Blockquote) {
	nw := w.nw
	switch {
	case nw.html:
		w.open("<blockquote>", "</blockquote>")
		w.children(n)
		w.close()
	case nw.name == Telegram:
		// Telegram refuses a blockquote inside a blockquote.
		if w.quote > 0 {
			w.children(n)
			return
		}
		w.quote++
		w.open("<blockquote>", "</blockquote>")
		w.children(n)
		w.close()
		w.quote--
	default:
		w.prefix = append(w.prefix, "> ")
		w.children(n)
		w.prefix = w.prefix[:len(w.prefix)-1]
	}
}

func (w *walker) list(n *ast.List) {
	nw := w.nw
	num := n.Start
	if nw.html {
		switch {
		case !n.IsOrdered():
			w.open("<ul>", "</ul>")
		case num != 1:
			w.open(`<ol start="`+strconv.Itoa(num)+`">`, "</ol>")
		default:
			w.open("<ol>", "</ol>")
		}
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if nw.html {
			w.open("<li>", "</li>")
			w.children(c)
			w.close()
		} else {
			bullet := "• "
			if n.IsOrdered() {
				bullet = strconv.Itoa(num) + ". "
			}
			w.atom(bullet, nw.escape(bullet))
			w.prefix = append(w.prefix, strings.Repeat(" ", len([]rune(bullet))))
			w.children(c)
			w.prefix = w.prefix[:len(w.prefix)-1]
		}
		num++
		w.sep(c)
	}
	if nw.html {
		w.close()
	}
}

func (w *walker) table(n *east.Table) {
	if w.nw.html {
		w.open("<table>", "</table>")
		body := false
		for r := n.FirstChild(); r != nil; r = r.NextSibling() {
			cell := "<td>"
			if _, ok := r.(*east.TableHeader); ok {
				w.open("<thead>", "</thead>")
				cell = "<th>"
			} else if !body {
				body = true
				w.open("<tbody>", "</tbody>")
			}
			w.open("<tr>", "</tr>")
			for c := r.FirstChild(); c != nil; c = c.NextSibling() {
				w.open(cell, "</"+cell[1:])
				w.children(c)
				w.close()
			}
			w.close()
			if cell == "<th>" {
				w.close()
			}
		}
		if body {
			w.close()
		}
		w.close()
		return
	}
	// Elsewhere a table is monospace text with its columns aligned.
	var rows [][]string
	var widths []int
	for r := n.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			s := strings.Join(strings.Fields(plainText(c, w.src)), " ")
			if len(widths) <= len(row) {
				widths = append(widths, 0)
			}
			widths[len(row)] = max(widths[len(row)], runes(s), 3)
			row = append(row, s)
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	for i, row := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeRow(&b, row, widths)
		if i == 0 {
			sep := make([]string, len(widths))
			for k, wd := range widths {
				sep[k] = strings.Repeat("-", wd)
			}
			b.WriteByte('\n')
			writeRow(&b, sep, widths)
		}
	}
	w.pre("", b.String())
}

func writeRow(b *strings.Builder, row []string, widths []int) {
	var line strings.Builder
	for k, s := range row {
		if k > 0 {
			line.WriteString(" | ")
		}
		line.WriteString(s)
		if k < len(widths) {
			line.WriteString(strings.Repeat(" ", widths[k]-runes(s)))
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
}

// plainText is the visible text of inline markdown, without markup.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.WriteString(textValue(c, src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.CodeSpan:
			b.WriteString(codeSpanText(c, src))
			return ast.WalkSkipChildren, nil
		case *ast.AutoLink:
			b.Write(c.Label(src))
		case *ast.RawHTML:
			b.WriteString(rawHTML(c, src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// textValue is a text node as it reads: backslash escapes and entity
// references resolved, as goldmark's own HTML writer does.
func textValue(n *ast.Text, src []byte) string {
	v := n.Segment.Value(src)
	if n.IsRaw() {
		return string(v)
	}
	if bytes.IndexByte(v, '\\') >= 0 {
		v = util.UnescapePunctuations(v)
	}
	if bytes.IndexByte(v, '&') >= 0 {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(v))
	}
	return string(v)
}

func codeSpanText(n *ast.CodeSpan, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			v := t.Segment.Value(src)
			if bytes.HasSuffix(v, []byte("\n")) {
				v = append(v[:len(v)-1:len(v)-1], ' ')
			}
			b.Write(v)
		} else if s, ok := c.(*ast.String); ok {
			b.Write(s.Value)
		}
	}
	return b.String()
}

func rawHTML(n *ast.RawHTML, src []byte) string {
	var b strings.Builder
	for i := 0; i < n.Segments.Len(); i++ {
		seg := n.Segments.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

func (w *walker) inline(n ast.Node) {
	nw := w.nw
	switch n := n.(type) {
	case *ast.Text:
		w.text(textValue(n, w.src))
		switch {
		case n.HardLineBreak() && nw.html:
			w.atom("", "<br>")
			w.newline()
		case n.HardLineBreak() || n.SoftLineBreak():
			w.newline()
		}
	case *ast.String:
		w.text(string(n.Value))
	case *ast.CodeSpan:
		s := codeSpanText(n, w.src)
		if w.code > 0 || w.link > 0 && nw.name == Slack || nw.codeOpen == "" {
			w.text(s)
			return
		}
		w.code++
		w.open(nw.codeOpen, nw.codeClose)
		w.text(s)
		w.close()
		w.code--
	case *ast.Emphasis:
		if n.Level >= 2 {
			w.styled(&w.bold, nw.boldOpen, nw.boldClose, n)
		} else {
			w.styled(&w.italic, nw.italicOpen, nw.italicClose, n)
		}
	case *east.Strikethrough:
		w.styled(&w.strike, nw.strikeOpen, nw.strikeClose, n)
	case *ast.Link:
		w.linkTo(string(util.URLEscape(n.Destination, true)), n, "")
	case *ast.Image:
		w.linkTo(string(util.URLEscape(n.Destination, true)), n, "image")
	case *ast.AutoLink:
		url := string(n.URL(w.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
			url = "mailto:" + url
		}
		w.linkTo(string(util.URLEscape([]byte(url), false)), nil, string(n.Label(w.src)))
	case *ast.RawHTML:
		w.text(rawHTML(n, w.src))
	default:
		w.children(n)
	}
}

// styled writes n's children inside a style's markup, unless the style is
// already open (markup inside the same markup shows as stray characters
// on Slack and WhatsApp) or the text is inside a Slack link label, where
// markup is not parsed.
func (w *walker) styled(depth *int, open, close string, n ast.Node) {
	if *depth > 0 || open == "" || w.code > 0 || w.link > 0 && w.nw.name == Slack {
		w.children(n)
		return
	}
	*depth++
	w.open(open, close)
	w.children(n)
	w.close()
	*depth--
}

// linkTo writes a link to url labelled by n's children (or label when n
// is nil, or fallback when n has none). A scheme the network should not
// open makes it plain text.
func (w *walker) linkTo(url string, n ast.Node, label string) {
	nw := w.nw
	labelOf := func() {
		if n != nil && n.FirstChild() != nil {
			w.children(n)
		} else if label != "" {
			w.text(label)
		} else {
			w.text(url)
		}
	}
	if n != nil && n.FirstChild() == nil && label == "" {
		label = url
	}
	if w.link > 0 || !nw.allowed(url) {
		labelOf()
		return
	}
	w.link++
	defer func() { w.link-- }()
	switch nw.name {
	case Telegram:
		w.open(`<a href="`+escapeAttr(url)+`">`, "</a>")
		labelOf()
		w.close()
	case Web:
		w.open(`<a href="`+escapeAttr(url)+`" rel="noopener noreferrer nofollow" target="_blank">`, "</a>")
		labelOf()
		w.close()
	case Slack:
		if n == nil && label == url {
			// a bare address shows as itself
			w.atom(url, "<"+slackURL(url)+">")
			return
		}
		w.open("<"+slackURL(url)+"|", ">")
		labelOf()
		w.close()
	default:
		start := len(w.units)
		labelOf()
		shown := visibleOf(w.units[start:])
		if bare := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(url, "mailto:"), "https://"), "http://"); shown != url && shown != bare {
			w.text(" (" + url + ")")
		}
	}
}

func visibleOf(us []unit) string {
	var b strings.Builder
	for _, u := range us {
		switch u.kind {
		case kText:
			b.WriteString(u.vis)
		case kSpace:
			b.WriteString(u.out)
		}
	}
	return b.String()
}

// slackURL escapes what would end Slack's <url|label> early.
func slackURL(u string) string { return slackURLEscaper.Replace(u) }

var slackURLEscaper = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C")

func escapeAttr(s string) string { return attrEscaper.Replace(s) }

var attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
