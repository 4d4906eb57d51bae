package doctext

import (
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
)

// OpenDocument lists: like Word's, their numbers live in styles
// (text:list-style, in content.xml's automatic styles or styles.xml), not
// in the text, and a list item only says which list and level it is in.

const (
	maxODFLevels     = 10 // ODF's list levels
	maxODFListStyles = 4096
	maxODFParaStyles = 16384
	maxODFListIDs    = 4096
	maxODFAffix      = 64 // bytes of a level's num-prefix or num-suffix
	maxParentSteps   = 16 // paragraph style parents followed to a list style
)

// odfLevel is one level of a text:list-style.
type odfLevel struct {
	set            bool
	bullet         bool   // a bullet or an image: "•"
	format         string // listLabel's scheme; "none" for a number-less level
	prefix, suffix string
	start, display int
}

type odfListStyle [maxODFLevels]odfLevel

// odfParaStyle is what a paragraph style says about lists.
type odfParaStyle struct{ list, parent string }

// odfCounter holds one list's numbers as the document is read; lists that
// continue another share its counter.
type odfCounter struct {
	val [maxODFLevels]int
	set [maxODFLevels]bool
}

// odfLists follows the list styles as they are declared and the lists as
// they are read.
type odfLists struct {
	styles map[string]*odfListStyle
	paras  map[string]odfParaStyle
	cur    *odfListStyle // the text:list-style being declared
	level  int           // its level being declared, or -1
	// Paragraph styles being declared (style:style), by nesting.
	para string

	open []odfOpenList // the text:list elements open, outermost first
	// The counters of lists with an xml:id (for text:continue-list), and
	// of the last top-level list (for text:continue-numbering).
	ids  map[string]*odfCounter
	last *odfCounter
	// The list item waiting for its first paragraph: counted there, with
	// the paragraph's style when the list has none.
	itemPending bool
	itemStart   int // its text:start-value, or -1
	label       string
}

type odfOpenList struct {
	style string
	c     *odfCounter
}

func newODFLists() *odfLists {
	return &odfLists{styles: map[string]*odfListStyle{}, paras: map[string]odfParaStyle{},
		ids: map[string]*odfCounter{}, level: -1}
}

// styleToken takes in the style declarations: text:list-style and its
// levels, and paragraph styles that name a list style.
func (l *odfLists) styleToken(t xml.Token) {
	switch e := t.(type) {
	case xml.StartElement:
		switch e.Name.Local {
		case "list-style":
			l.cur, l.level = nil, -1
			if name := attr(e, "name"); len(l.styles) < maxODFListStyles {
				// A list style declared inside another style has no name
				// of its own; it is read and not kept.
				l.cur = &odfListStyle{}
				if name != "" {
					l.styles[name] = l.cur
				}
			}
		case "list-level-style-number", "list-level-style-bullet", "list-level-style-image":
			l.level = -1
			n, err := strconv.Atoi(attr(e, "level"))
			if l.cur == nil || err != nil || n < 1 || n > maxODFLevels {
				break
			}
			l.level = n - 1
			lv := odfLevel{set: true, start: 1, display: 1, bullet: e.Name.Local != "list-level-style-number"}
			if !lv.bullet {
				lv.format = odfNumFormat(attr(e, "num-format"))
				lv.prefix = bounded(attr(e, "num-prefix"), maxODFAffix)
				lv.suffix = bounded(attr(e, "num-suffix"), maxODFAffix)
				if v, err := strconv.Atoi(attr(e, "start-value")); err == nil && v >= 0 && v < 1<<20 {
					lv.start = v
				}
				if v, err := strconv.Atoi(attr(e, "display-levels")); err == nil && v >= 1 {
					lv.display = min(v, n)
				}
			}
			l.cur[l.level] = lv
		case "style":
			if name := attr(e, "name"); name != "" && len(l.paras) < maxODFParaStyles {
				if list, parent := attr(e, "list-style-name"), attr(e, "parent-style-name"); list != "" || parent != "" {
					l.paras[name] = odfParaStyle{list: list, parent: parent}
				}
			}
		}
	case xml.EndElement:
		switch e.Name.Local {
		case "list-style":
			l.cur, l.level = nil, -1
		case "list-level-style-number", "list-level-style-bullet", "list-level-style-image":
			l.level = -1
		}
	}
}

// odfNumFormat maps style:num-format to listLabel's schemes.
func odfNumFormat(f string) string {
	switch f {
	case "1":
		return "decimal"
	case "a":
		return "lowerLetter"
	case "A":
		return "upperLetter"
	case "i":
		return "lowerRoman"
	case "I":
		return "upperRoman"
	case "":
		return "none"
	}
	return "decimal" // a script's numbering this reader does not spell
}

func bounded(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// startList opens a text:list: a top-level one starts its numbers again
// unless it continues another; a nested one is the next level of its
// parent, with its parent's style unless it names one.
func (l *odfLists) startList(e xml.StartElement) {
	style := attr(e, "style-name")
	if len(l.open) > 0 {
		parent := l.open[len(l.open)-1]
		if style == "" {
			style = parent.style
		}
		l.open = append(l.open, odfOpenList{style: style, c: parent.c})
		return
	}
	var c *odfCounter
	if id := attr(e, "continue-list"); id != "" {
		c = l.ids[id]
	}
	if c == nil && attr(e, "continue-numbering") == "true" {
		c = l.last
	}
	if c == nil {
		c = &odfCounter{}
	}
	if id := attr(e, "id"); id != "" && len(l.ids) < maxODFListIDs {
		l.ids[id] = c
	}
	l.open = append(l.open, odfOpenList{style: style, c: c})
}

func (l *odfLists) endList() {
	if len(l.open) == 0 {
		return
	}
	if len(l.open) == 1 {
		l.last = l.open[0].c
	}
	l.open = l.open[:len(l.open)-1]
	l.itemPending = false
}

// startItem marks a text:list-item (header false) or text:list-header
// (header true: an item without a number) as waiting for its paragraph.
func (l *odfLists) startItem(e xml.StartElement, header bool) {
	l.itemPending = !header && len(l.open) > 0
	l.itemStart = -1
	if v, err := strconv.Atoi(attr(e, "start-value")); err == nil && v >= 0 && v < 1<<20 {
		l.itemStart = v
	}
}

// paragraph is told of each paragraph's start: the first of a list item
// counts the item and returns its label ("3. ", "• ", or "").
func (l *odfLists) paragraph(paraStyle string) string {
	if !l.itemPending || len(l.open) == 0 {
		return ""
	}
	l.itemPending = false
	lvl := min(len(l.open), maxODFLevels) - 1
	list := l.open[len(l.open)-1]
	style := l.styles[list.style]
	if style == nil {
		style = l.styles[l.paraList(paraStyle)]
	}
	if style == nil || !style[lvl].set {
		return bullet + " " // a list whose style is unknown: a list still
	}
	lv := style[lvl]
	if lv.bullet {
		return bullet + " "
	}
	c := list.c
	switch {
	case l.itemStart >= 0:
		c.val[lvl] = l.itemStart
	case c.set[lvl]:
		c.val[lvl]++
	default:
		c.val[lvl] = lv.start
	}
	c.set[lvl] = true
	for j := lvl + 1; j < maxODFLevels; j++ {
		c.set[j] = false
	}
	// Levels above it show their numbers too when display-levels says so:
	// "2.b." (without their own prefix and suffix, as LibreOffice shows).
	var nums []string
	for k := lvl - lv.display + 1; k <= lvl; k++ {
		f := style[k].format
		if !style[k].set || style[k].bullet || f == "none" {
			continue
		}
		v := style[k].start
		if c.set[k] {
			v = c.val[k]
		}
		nums = append(nums, listLabel(f, v))
	}
	label := strings.TrimSpace(lv.prefix + strings.Join(nums, ".") + lv.suffix)
	if label == "" {
		return ""
	}
	return label + " "
}

// paraList is the list style a paragraph style names, itself or through
// its parents (a bounded walk: a loop of parents ends it).
func (l *odfLists) paraList(name string) string {
	for i := 0; i < maxParentSteps && name != ""; i++ {
		s, ok := l.paras[name]
		if !ok {
			return ""
		}
		if s.list != "" {
			return s.list
		}
		name = s.parent
	}
	return ""
}

// readStyles takes in styles.xml's list and paragraph styles, if the
// package has one.
func (d *doc) odfStyles(l *odfLists) error {
	err := d.z.walk("styles.xml", func(t xml.Token) error {
		l.styleToken(t)
		return nil
	})
	if errors.Is(err, errNoEntry) {
		return nil
	}
	return err
}
