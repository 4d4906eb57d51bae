package doctext

import (
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
)

// Numbered lists: Word keeps a list's numbers in numbering.xml and
// PowerPoint in each paragraph's bullet (buAutoNum); the text has no
// numbers of its own, so a reader that leaves them out loses "step 3"
// and every reference to it.

const (
	maxListLevels   = 9 // Word's and PowerPoint's
	maxAbstractNums = 4096
	maxNums         = 16384
	bullet          = "•"
)

// listLabel writes n in a numbering scheme: Word's numFmt values
// (decimal, lowerLetter, upperRoman…), which PowerPoint's buAutoNum
// types start with too (arabic, alphaLc, romanUc…).
func listLabel(scheme string, n int) string {
	switch scheme {
	case "lowerLetter", "alphaLc":
		return letters(n, 'a')
	case "upperLetter", "alphaUc":
		return letters(n, 'A')
	case "lowerRoman", "romanLc":
		return strings.ToLower(roman(n))
	case "upperRoman", "romanUc":
		return roman(n)
	case "decimalZero":
		if n >= 0 && n < 10 {
			return "0" + strconv.Itoa(n)
		}
	case "ordinal":
		return strconv.Itoa(n) + ordinalSuffix(n)
	case "bullet":
		return bullet
	case "none":
		return ""
	}
	return strconv.Itoa(n)
}

// letters: a … z, then aa … zz, as Word and PowerPoint count.
func letters(n int, a byte) string {
	if n < 1 || n > 26*20 {
		return strconv.Itoa(n)
	}
	return strings.Repeat(string(rune(a+byte((n-1)%26))), (n-1)/26+1)
}

func roman(n int) string {
	if n < 1 || n > 3999 {
		return strconv.Itoa(n)
	}
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var b strings.Builder
	for i, v := range vals {
		for n >= v {
			b.WriteString(syms[i])
			n -= v
		}
	}
	return b.String()
}

func ordinalSuffix(n int) string {
	if n%100 >= 11 && n%100 <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// autoNumLabel is the label of PowerPoint's buAutoNum type for n:
// arabicPeriod "3.", alphaLcParenR "c)", romanUcParenBoth "(III)".
func autoNumLabel(typ string, n int) string {
	scheme := "arabic"
	for _, s := range []string{"alphaLc", "alphaUc", "romanLc", "romanUc"} {
		if strings.HasPrefix(typ, s) {
			scheme = s
		}
	}
	num := listLabel(scheme, n)
	switch {
	case strings.HasSuffix(typ, "ParenBoth"):
		return "(" + num + ")"
	case strings.HasSuffix(typ, "ParenR"):
		return num + ")"
	case strings.HasSuffix(typ, "Plain"):
		return num
	case strings.HasSuffix(typ, "Minus"):
		return "- " + num + " -"
	}
	return num + "."
}

// slideLists counts PowerPoint's auto-numbered paragraphs within one text
// body: a run of paragraphs at a level with the same scheme counts on;
// another paragraph at that level, or one at a level above, starts it
// again.
type slideLists struct {
	levels [maxListLevels]struct {
		typ    string
		n      int
		active bool
	}
}

// label counts a paragraph at lvl: kind is "auto" (with typ and start),
// "char" (a bullet) or "" (none); it returns the paragraph's prefix.
func (l *slideLists) label(lvl int, kind, typ string, start int) string {
	lvl = min(max(lvl, 0), maxListLevels-1)
	for j := lvl + 1; j < maxListLevels; j++ {
		l.levels[j].active = false
	}
	st := &l.levels[lvl]
	switch kind {
	case "auto":
		if st.active && st.typ == typ {
			st.n++
		} else {
			st.typ, st.n, st.active = typ, start, true
		}
		return autoNumLabel(typ, st.n) + " "
	case "char":
		st.active = false
		return bullet + " "
	}
	st.active = false
	return ""
}

// wordLists is numbering.xml: the list definitions (abstractNum), the
// lists that use them (num), and the counters as the document is read.
type wordLists struct {
	abs  map[string]*[maxListLevels]wordLevel
	nums map[string]wordNum
	// Counters are the definition's: lists that share one count on
	// together unless a list restarts (startOverride).
	counts  map[string]*wordCount
	started map[string]bool // lists whose overrides were applied
}

type wordLevel struct {
	format, text string
	start        int
	set          bool
}

type wordNum struct {
	abs    string
	starts map[int]int // level → startOverride
}

type wordCount struct {
	val [maxListLevels]int
	set [maxListLevels]bool
}

func (d *doc) wordLists() (*wordLists, error) {
	l := &wordLists{abs: map[string]*[maxListLevels]wordLevel{}, nums: map[string]wordNum{},
		counts: map[string]*wordCount{}, started: map[string]bool{}}
	var curAbs *[maxListLevels]wordLevel
	curNum, lvl := "", -1
	override := -1
	err := d.z.walk("word/numbering.xml", func(t xml.Token) error {
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "abstractNum":
				if len(l.abs) < maxAbstractNums {
					curAbs = &[maxListLevels]wordLevel{}
					l.abs[attr(e, "abstractNumId")] = curAbs
				}
			case "num":
				if len(l.nums) < maxNums {
					curNum = attr(e, "numId")
					l.nums[curNum] = wordNum{starts: map[int]int{}}
				}
			case "lvl":
				lvl = -1
				if curAbs != nil && curNum == "" {
					if n, err := strconv.Atoi(attr(e, "ilvl")); err == nil && n >= 0 && n < maxListLevels {
						lvl = n
						curAbs[lvl] = wordLevel{format: "decimal", start: 1, set: true}
					}
				}
			case "start":
				if curAbs != nil && lvl >= 0 && curNum == "" {
					if n, err := strconv.Atoi(attr(e, "val")); err == nil && n >= 0 && n < 1<<20 {
						curAbs[lvl].start = n
					}
				}
			case "numFmt":
				if curAbs != nil && lvl >= 0 && curNum == "" {
					curAbs[lvl].format = attr(e, "val")
				}
			case "lvlText":
				if curAbs != nil && lvl >= 0 && curNum == "" {
					curAbs[lvl].text = attr(e, "val")
				}
			case "abstractNumId":
				if curNum != "" {
					n := l.nums[curNum]
					n.abs = attr(e, "val")
					l.nums[curNum] = n
				}
			case "lvlOverride":
				override = -1
				if n, err := strconv.Atoi(attr(e, "ilvl")); err == nil && n >= 0 && n < maxListLevels {
					override = n
				}
			case "startOverride":
				if curNum != "" && override >= 0 {
					if n, err := strconv.Atoi(attr(e, "val")); err == nil && n >= 0 && n < 1<<20 {
						l.nums[curNum].starts[override] = n
					}
				}
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "abstractNum":
				curAbs = nil
			case "num":
				curNum = ""
			case "lvl":
				lvl = -1
			case "lvlOverride":
				override = -1
			}
		}
		return nil
	})
	if errors.Is(err, errNoEntry) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// label counts a paragraph of list numID at level ilvl and returns its
// prefix: "3. ", "b) ", "• ", or "" for a list without a number. (Lines
// keep no indentation: the labels tell the levels apart.)
func (l *wordLists) label(numID string, ilvl int) string {
	ilvl = min(max(ilvl, 0), maxListLevels-1)
	num, ok := l.nums[numID]
	levels := l.abs[num.abs]
	if !ok || levels == nil || !levels[ilvl].set {
		return bullet + " " // a list this reader cannot resolve: a list still
	}
	lv := levels[ilvl]
	if lv.format == "bullet" {
		return bullet + " "
	}
	if lv.format == "none" && !strings.Contains(lv.text, "%") {
		if t := strings.TrimSpace(lv.text); t != "" {
			return t + " "
		}
		return ""
	}
	c := l.counts[num.abs]
	if c == nil {
		c = &wordCount{}
		l.counts[num.abs] = c
	}
	switch v, over := num.starts[ilvl]; {
	case over && !l.started[numID]:
		c.val[ilvl], c.set[ilvl] = v, true
	case !c.set[ilvl]:
		c.val[ilvl], c.set[ilvl] = lv.start, true
	default:
		c.val[ilvl]++
	}
	if len(num.starts) > 0 {
		l.started[numID] = true
	}
	for j := ilvl + 1; j < maxListLevels; j++ {
		c.set[j] = false
	}
	text := lv.text
	if text == "" {
		text = "%" + strconv.Itoa(ilvl+1) + "."
	}
	var b strings.Builder
	for i := 0; i < len(text) && b.Len() < 256; i++ {
		if text[i] == '%' && i+1 < len(text) && text[i+1] >= '1' && text[i+1] <= '9' {
			k := int(text[i+1] - '1')
			i++
			v := levels[k].start
			if c.set[k] {
				v = c.val[k]
			}
			f := levels[k].format
			if f == "bullet" || f == "none" || k != ilvl && f == "" {
				f = "decimal"
			}
			b.WriteString(listLabel(f, v))
			continue
		}
		b.WriteByte(text[i])
	}
	label := strings.TrimSpace(b.String())
	if label == "" {
		return ""
	}
	return label + " "
}
