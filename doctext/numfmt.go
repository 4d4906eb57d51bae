package doctext

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Spreadsheet number formats: a cell of a workbook holds a number and a
// format code ("yyyy-mm-dd", "#,##0.00 €", "0%"); the text a person sees
// is the two together. A birth date is stored as 17175 and shown as
// 1947-01-08, so the reader applies the code as Excel does.
//
// Codes come from strangers: a code longer than maxFmtCode, or one this
// parser does not understand, falls back to the General format, and every
// loop is bounded by the code's length or a fixed count.

const (
	maxFmtCode     = 255 // Excel's own limit on a format code
	maxFmtDigits   = 30  // digit placeholders honoured on each side of the point
	maxSerialDay   = 2958465
	excelSigDigits = 15
)

// fmtTok is one piece of a format section.
type fmtTok struct {
	kind byte   // see the tk constants
	text string // a literal's text; a date/time code's letters, lower case
}

const (
	tkLit     = iota // literal text
	tkDigit          // 0 # ? (text holds which)
	tkPoint          // the decimal point
	tkPercent        // %
	tkExp            // E+ E- (text holds the sign)
	tkDate           // y m d h s e (text: the run, lower case), "m" may be minutes
	tkElapsed        // [h] [m] [s]
	tkAMPM           // AM/PM or A/P (text: as written)
	tkFrac           // fractional seconds (text: the zeros)
	tkText           // @
	tkGeneral        // General
	tkComma          // a thousands separator or a scale (decided in parse)
	tkSlash          // / between digit placeholders (a fraction)
)

type fmtSection struct {
	toks     []fmtTok
	cond     string // "", or an operator of a [>100] condition
	condVal  float64
	date     bool // has date or time codes
	ampm     bool
	fracSecs int // digits of fractional seconds shown
	// number formats
	percent   int
	scale     int  // thousands divided by (trailing commas)
	group     bool // thousands separators
	exp       bool
	fraction  bool
	text      bool // has @
	general   bool
	intDigits []byte // placeholders before the point (or the exponent)
	decDigits []byte // after the point
	hasPoint  bool
	expDigits int    // placeholders of the exponent
	expSign   string // "+" shows the sign of a positive exponent
}

// numFmt is a parsed format code.
type numFmt struct {
	secs    []fmtSection
	general bool // use the General format
}

var generalFmt = &numFmt{general: true}

// parseNumFmt parses a format code; anything it cannot read whole is the
// General format.
func parseNumFmt(code string) *numFmt {
	if code == "" || len(code) > maxFmtCode || strings.EqualFold(code, "general") {
		return generalFmt
	}
	f := &numFmt{}
	for _, part := range splitSections(code) {
		s, ok := parseSection(part)
		if !ok {
			return generalFmt
		}
		f.secs = append(f.secs, s)
		if len(f.secs) == 4 {
			break
		}
	}
	if len(f.secs) == 0 {
		return generalFmt
	}
	return f
}

// splitSections cuts a code at the semicolons outside quotes, brackets
// and escapes.
func splitSections(code string) []string {
	var out []string
	start, quote, bracket := 0, false, false
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case quote:
			quote = c != '"'
		case bracket:
			bracket = c != ']'
		case c == '"':
			quote = true
		case c == '[':
			bracket = true
		case c == '\\' || c == '_' || c == '*':
			i++
		case c == ';':
			out = append(out, code[start:i])
			start = i + 1
		}
	}
	return append(out, code[start:])
}

func parseSection(s string) (fmtSection, bool) {
	var sec fmtSection
	lit := func(t string) { sec.toks = append(sec.toks, fmtTok{kind: tkLit, text: t}) }
	for i := 0; i < len(s); i++ {
		c := s[i]
		lc := c | 0x20
		switch {
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return sec, false
			}
			lit(s[i+1 : i+1+j])
			i += j + 1
		case c == '\\':
			if i+1 < len(s) {
				_, n := decodeRune(s[i+1:])
				lit(s[i+1 : i+1+n])
				i += n
			}
		case c == '_':
			if i+1 < len(s) {
				_, n := decodeRune(s[i+1:])
				i += n
				lit(" ") // room for a character: a space is the nearest thing in text
			}
		case c == '*':
			if i+1 < len(s) {
				_, n := decodeRune(s[i+1:])
				i += n // a fill: padding to the column's width, nothing in text
			}
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return sec, false
			}
			if !sec.bracket(s[i+1:i+j], lit) {
				return sec, false
			}
			i += j
		case c == '0' || c == '#' || c == '?':
			if sec.date && c == '0' && len(sec.toks) > 0 && sec.toks[len(sec.toks)-1].kind == tkPoint {
				// ss.000: fractional seconds
				j := i
				for j < len(s) && s[j] == '0' {
					j++
				}
				sec.toks[len(sec.toks)-1] = fmtTok{kind: tkFrac, text: s[i:j]}
				sec.fracSecs = min(j-i, 3)
				i = j - 1
				continue
			}
			sec.toks = append(sec.toks, fmtTok{kind: tkDigit, text: string(c)})
			switch {
			case sec.exp:
				sec.expDigits++
			case sec.hasPoint:
				sec.decDigits = append(sec.decDigits, c)
			default:
				sec.intDigits = append(sec.intDigits, c)
			}
			if len(sec.intDigits) > maxFmtDigits || len(sec.decDigits) > maxFmtDigits {
				return sec, false
			}
		case c >= '1' && c <= '9' && sec.fraction:
			sec.toks = append(sec.toks, fmtTok{kind: tkDigit, text: string(c)}) // a fixed denominator
		case c == '.':
			if sec.hasPoint || sec.exp {
				lit(".")
				continue
			}
			sec.toks = append(sec.toks, fmtTok{kind: tkPoint})
			sec.hasPoint = true
		case c == ',':
			sec.toks = append(sec.toks, fmtTok{kind: tkComma})
		case c == '%':
			sec.toks = append(sec.toks, fmtTok{kind: tkPercent})
			sec.percent++
		case c == '/':
			if len(sec.toks) > 0 && sec.toks[len(sec.toks)-1].kind == tkDigit && !sec.date {
				sec.toks = append(sec.toks, fmtTok{kind: tkSlash})
				sec.fraction = true
			} else {
				lit("/")
			}
		case c == '@':
			sec.toks = append(sec.toks, fmtTok{kind: tkText})
			sec.text = true
		case (c == 'E' || c == 'e') && i+1 < len(s) && (s[i+1] == '+' || s[i+1] == '-') && !sec.date:
			sec.toks = append(sec.toks, fmtTok{kind: tkExp})
			sec.exp, sec.expSign = true, s[i+1:i+2]
			i++
		case lc == 'g' && len(s)-i >= 7 && strings.EqualFold(s[i:i+7], "general"):
			sec.toks = append(sec.toks, fmtTok{kind: tkGeneral})
			sec.general = true
			i += 6
		case lc == 'a' && len(s)-i >= 5 && strings.EqualFold(s[i:i+5], "am/pm"):
			sec.toks = append(sec.toks, fmtTok{kind: tkAMPM, text: s[i : i+5]})
			sec.ampm, sec.date = true, true
			i += 4
		case lc == 'a' && len(s)-i >= 3 && strings.EqualFold(s[i:i+3], "a/p"):
			sec.toks = append(sec.toks, fmtTok{kind: tkAMPM, text: s[i : i+3]})
			sec.ampm, sec.date = true, true
			i += 2
		case lc == 'y' || lc == 'm' || lc == 'd' || lc == 'h' || lc == 's' || lc == 'e':
			j := i
			for j < len(s) && s[j]|0x20 == lc {
				j++
			}
			sec.toks = append(sec.toks, fmtTok{kind: tkDate, text: strings.Repeat(string(rune(lc)), j-i)})
			sec.date = true
			i = j - 1
		case lc == 'b' && i+1 < len(s) && (s[i+1] == '1' || s[i+1] == '2'):
			i++ // a calendar switch (Buddhist, Hijri): the Gregorian date is shown
		case lc == 'g':
			// an era (Japanese calendars): nothing
		default:
			r, n := decodeRune(s[i:])
			if r >= 'A' && r <= 'z' && !strings.ContainsRune("$-+()", r) {
				// A letter Excel would refuse unquoted: not a code this reads.
				return sec, false
			}
			lit(s[i : i+n])
			i += n - 1
		}
	}
	if sec.date && (sec.exp || sec.fraction || sec.percent > 0 || len(sec.intDigits) > 0) {
		return sec, false // a mixture no real format has
	}
	sec.commas()
	return sec, true
}

// bracket reads [..]: a colour, a condition, a currency or locale, an
// elapsed-time code.
func (sec *fmtSection) bracket(b string, lit func(string)) bool {
	lb := strings.ToLower(b)
	switch {
	case lb == "":
		return true
	case strings.Trim(lb, "h") == "" || strings.Trim(lb, "m") == "" || strings.Trim(lb, "s") == "":
		sec.toks = append(sec.toks, fmtTok{kind: tkElapsed, text: lb})
		sec.date = true
	case b[0] == '$':
		sym := b[1:]
		if i := strings.IndexByte(sym, '-'); i >= 0 {
			sym = sym[:i]
		}
		lit(sym)
	case strings.IndexAny(b[:1], "<>=") == 0:
		op := b[:1]
		if len(b) > 1 && (b[1] == '=' || b[1] == '>') {
			op = b[:2]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(b[len(op):]), 64)
		if err != nil {
			return false
		}
		sec.cond, sec.condVal = op, v
	}
	// Colours, [DBNum1], [natnum], [~buddhist]: how, not what.
	return true
}

// commas decides what each comma is: a separator when it stands between
// digit placeholders, a scale by a thousand when it follows the last one.
func (sec *fmtSection) commas() {
	lastDigit := -1
	for i, t := range sec.toks {
		if t.kind == tkDigit {
			lastDigit = i
		}
		if t.kind == tkPoint || t.kind == tkExp {
			break
		}
	}
	for i, t := range sec.toks {
		if t.kind != tkComma {
			continue
		}
		switch {
		case lastDigit >= 0 && i > lastDigit && (i+1 == len(sec.toks) || sec.toks[i+1].kind != tkDigit):
			sec.scale++
			sec.toks[i] = fmtTok{kind: tkLit}
		case lastDigit >= 0 && i < lastDigit && !sec.hasPointBefore(i):
			sec.group = true
			sec.toks[i] = fmtTok{kind: tkLit}
		default:
			sec.toks[i] = fmtTok{kind: tkLit, text: ","}
		}
	}
	sec.scale = min(sec.scale, 5)
}

func (sec *fmtSection) hasPointBefore(i int) bool {
	for _, t := range sec.toks[:i] {
		if t.kind == tkPoint {
			return true
		}
	}
	return false
}

func decodeRune(s string) (rune, int) {
	for i, r := range s {
		if i == 0 {
			return r, len(string(r))
		}
	}
	return 0, 1
}

// pick chooses the section for v and says whether the sign is the
// section's to show (a negative section shows the absolute value).
func (f *numFmt) pick(v float64) (*fmtSection, bool) {
	if f.secs[0].cond != "" || (len(f.secs) > 1 && f.secs[1].cond != "") {
		for i := range f.secs {
			s := &f.secs[i]
			if s.text {
				continue
			}
			if s.cond == "" || s.holds(v) {
				// The sign goes unless the section had to be the catch-all
				// for a negative number.
				return s, s.cond == "" && i == 0
			}
		}
		return &f.secs[0], true
	}
	switch {
	case v < 0 && len(f.secs) >= 2 && !f.secs[1].text:
		return &f.secs[1], false
	case v == 0 && len(f.secs) >= 3 && !f.secs[2].text:
		return &f.secs[2], false
	}
	return &f.secs[0], true
}

func (s *fmtSection) holds(v float64) bool {
	switch s.cond {
	case "<":
		return v < s.condVal
	case "<=":
		return v <= s.condVal
	case ">":
		return v > s.condVal
	case ">=":
		return v >= s.condVal
	case "=":
		return v == s.condVal
	case "<>":
		return v != s.condVal
	}
	return false
}

// format shows the number v (a date as its serial day) as the code says.
func (f *numFmt) format(v float64, date1904 bool) string {
	if f.general || math.IsNaN(v) || math.IsInf(v, 0) {
		return generalNumber(v)
	}
	sec, sign := f.pick(v)
	var out string
	switch {
	case sec.date:
		var ok bool
		if out, ok = sec.formatDate(v, date1904); !ok {
			return generalNumber(v)
		}
	case sec.general || (sec.text && len(sec.intDigits) == 0):
		out = sec.literalsAround(generalNumber(math.Abs(v)))
		if v < 0 && sign {
			out = "-" + out
		}
	case sec.fraction:
		out = sec.formatFraction(math.Abs(v))
		if v < 0 && sign {
			out = "-" + out
		}
	default:
		var neg bool
		out, neg = sec.formatNumber(v)
		if neg && sign {
			out = "-" + out
		}
	}
	return strings.TrimSpace(out)
}

// formatText shows a text cell: only a text section (the fourth, or the
// only one holding @) changes it.
func (f *numFmt) formatText(s string) string {
	if f.general {
		return s
	}
	for i := range f.secs {
		if f.secs[i].text && (i == 3 || len(f.secs) == 1) {
			return f.secs[i].literalsAround(s)
		}
	}
	return s
}

// literalsAround writes the section's literals with s in place of its
// placeholder (@ or General).
func (sec *fmtSection) literalsAround(s string) string {
	var b strings.Builder
	placed := false
	for _, t := range sec.toks {
		switch t.kind {
		case tkLit:
			b.WriteString(t.text)
		case tkText, tkGeneral:
			if !placed {
				b.WriteString(s)
				placed = true
			}
		}
	}
	if !placed {
		b.WriteString(s)
	}
	return b.String()
}

// generalNumber is Excel's General format: up to 15 significant digits,
// without the float noise of the binary value (1.0999999999999996 is
// 1.1), in scientific notation when very large or small.
func generalNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "#NUM!"
	case math.IsInf(v, 0):
		return "#NUM!"
	case v == 0:
		return "0"
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'e', excelSigDigits-1, 64), 64)
	if err != nil {
		r = v
	}
	if a := math.Abs(r); a >= 1e15 || a < 1e-9 {
		return strconv.FormatFloat(r, 'E', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// formatNumber lays the digits of v into the placeholders.
func (sec *fmtSection) formatNumber(v float64) (string, bool) {
	v *= math.Pow(100, float64(sec.percent))
	v /= math.Pow(1000, float64(sec.scale))
	neg := v < 0
	v = math.Abs(v)
	dec := len(sec.decDigits)
	var intPart, fracPart, expPart string
	if sec.exp {
		e := 0
		if v != 0 {
			// The mantissa has as many integer digits as placeholders;
			// ##0.0E+0 is engineering notation (exponents in threes).
			n := max(len(sec.intDigits), 1)
			e = int(math.Floor(math.Log10(v)))
			if n > 1 && sec.intDigits[0] == '#' {
				e -= ((e % n) + n) % n
			} else {
				e -= n - 1
			}
			v /= math.Pow(10, float64(e))
			if m := fixed(v, dec); strings.HasPrefix(m, "10") && n == 1 {
				v /= 10 // 9.99 rounded up to 10.0: one more in the exponent
				e++
			}
		}
		intPart, fracPart, _ = strings.Cut(fixed(v, dec), ".")
		es := strconv.Itoa(abs(e))
		for len(es) < sec.expDigits {
			es = "0" + es
		}
		switch {
		case e < 0:
			expPart = "-" + es
		case sec.expSign == "+":
			expPart = "+" + es
		default:
			expPart = es
		}
	} else {
		if v >= 1e21 { // beyond what 'f' writes sensibly: General instead
			return generalNumber(v), neg
		}
		intPart, fracPart, _ = strings.Cut(fixed(v, dec), ".")
	}
	if neg && strings.Trim(intPart+fracPart, "0") == "" {
		neg = false // -0.001 shown as 0.00 has no sign
	}
	intPart = strings.TrimLeft(intPart, "0")
	// Trailing zeros of the decimals: # drops them, ? makes them spaces.
	frac := []byte(fracPart)
	for i := len(frac) - 1; i >= 0 && frac[i] == '0'; i-- {
		if sec.decDigits[i] == '#' {
			frac = frac[:i]
		} else if sec.decDigits[i] == '?' {
			frac[i] = ' '
		} else {
			break
		}
	}
	ints := sec.intStrings(intPart)
	var b strings.Builder
	part := 0 // 0 integer, 1 decimals, 2 exponent
	k := 0    // integer placeholders passed
	for _, t := range sec.toks {
		switch t.kind {
		case tkLit:
			b.WriteString(t.text)
		case tkPercent:
			b.WriteString("%")
		case tkDigit:
			if part == 0 && k < len(ints) {
				b.WriteString(ints[k])
				k++
			}
		case tkPoint:
			part = 1
			b.WriteString(".")
			b.Write(frac)
		case tkExp:
			part = 2
			b.WriteString("E")
			b.WriteString(expPart)
		case tkText:
			b.WriteString(generalNumber(v))
		}
	}
	return b.String(), neg
}

// fixed writes v ≥ 0 with dec decimals the way Excel rounds: from its
// 15 significant digits, halves away from zero (2.5 is 3, 1.005 is 1.01
// though the binary value is a little less).
func fixed(v float64, dec int) string {
	m := strconv.FormatFloat(v, 'e', excelSigDigits-1, 64) // d.dddddddddddddde±x
	mant, expS, _ := strings.Cut(m, "e")
	exp, _ := strconv.Atoi(expS)
	digits := []byte(strings.Replace(mant, ".", "", 1))
	// digits[i] stands for 10^(exp-i); keep those down to 10^-dec.
	keep := exp + 1 + dec
	if keep < 0 {
		return strconv.FormatFloat(0, 'f', dec, 64)
	}
	if keep < len(digits) {
		up := digits[keep] >= '5'
		digits = digits[:keep]
		for i := len(digits) - 1; up && i >= 0; i-- {
			if digits[i] == '9' {
				digits[i] = '0'
			} else {
				digits[i]++
				up = false
			}
		}
		if up {
			digits = append([]byte{'1'}, digits...)
			exp++
		}
	}
	for len(digits) < exp+1+dec {
		digits = append(digits, '0')
	}
	// Now digits are the value times 10^dec, the first standing for 10^exp.
	intLen := exp + 1
	var ip, fp string
	switch {
	case intLen <= 0:
		ip, fp = "0", strings.Repeat("0", -intLen)+string(digits)
	default:
		ip, fp = string(digits[:intLen]), string(digits[intLen:])
	}
	if len(fp) > dec {
		fp = fp[:dec]
	}
	for len(fp) < dec {
		fp += "0"
	}
	if dec == 0 {
		return ip
	}
	return ip + "." + fp
}

// intStrings is what each integer placeholder shows, left to right: the
// leftmost takes every digit that does not fit; 0 shows a zero where
// there is no digit, ? a space, # nothing. With thousands separators the
// integer is one block at the first placeholder.
func (sec *fmtSection) intStrings(digits string) []string {
	n := len(sec.intDigits)
	out := make([]string, n)
	if n == 0 {
		return out
	}
	if sec.group {
		minInt := strings.Count(string(sec.intDigits), "0")
		for len(digits) < minInt {
			digits = "0" + digits
		}
		if digits == "" && sec.intDigits[n-1] == '?' {
			digits = " "
		}
		out[0] = groupThousands(digits)
		return out
	}
	for i := n - 1; i >= 0; i-- {
		switch {
		case i == 0 && len(digits) > 0:
			out[i] = digits
		case len(digits) > 0:
			out[i] = digits[len(digits)-1:]
			digits = digits[:len(digits)-1]
		case sec.intDigits[i] == '0':
			out[i] = "0"
		case sec.intDigits[i] == '?':
			out[i] = " "
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func groupThousands(s string) string {
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(s[:first])
	for i := first; i < len(s); i += 3 {
		b.WriteString(",")
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// formatFraction shows v as "# ?/?": a whole part and the nearest
// fraction whose denominator has as many digits as the placeholders (or
// the fixed denominator written in the code).
func (sec *fmtSection) formatFraction(v float64) string {
	var num, den []fmtTok
	var whole bool
	slash := -1
	for i, t := range sec.toks {
		if t.kind == tkSlash {
			slash = i
		}
	}
	// The numerator is the run of placeholders just before the slash; a
	// run before that (after a literal) is the whole part.
	i := slash - 1
	for i >= 0 && sec.toks[i].kind == tkDigit {
		num = append(num, sec.toks[i])
		i--
	}
	for j := i; j >= 0; j-- {
		if sec.toks[j].kind == tkDigit {
			whole = true
		}
	}
	for j := slash + 1; j < len(sec.toks) && sec.toks[j].kind == tkDigit; j++ {
		den = append(den, sec.toks[j])
	}
	if len(num) == 0 || len(den) == 0 {
		return generalNumber(v)
	}
	var d int
	fixed := ""
	for _, t := range den {
		if t.text[0] >= '1' && t.text[0] <= '9' || fixed != "" && t.text[0] == '0' {
			fixed += t.text
		}
	}
	w := 0.0
	if whole {
		w = math.Floor(v)
	}
	frac := v - w
	var n int
	if fixed != "" {
		d, _ = strconv.Atoi(fixed)
		d = max(d, 1)
		n = int(math.Round(frac * float64(d)))
	} else {
		n, d = bestFraction(frac, int(math.Pow(10, float64(min(len(den), 4))))-1)
	}
	if n == d && whole {
		w++
		n = 0
	}
	var b strings.Builder
	if whole && w > 0 {
		b.WriteString(strconv.FormatFloat(w, 'f', 0, 64))
		if n == 0 {
			return b.String()
		}
		b.WriteString(" ")
	} else if whole && n == 0 {
		return "0"
	}
	b.WriteString(strconv.Itoa(n))
	b.WriteString("/")
	b.WriteString(strconv.Itoa(d))
	return b.String()
}

// bestFraction is the fraction nearest x ≥ 0 with a denominator of at
// most maxDen: the best of the continued fraction's convergents and their
// semiconvergents, in a few steps whatever maxDen is.
func bestFraction(x float64, maxDen int) (int, int) {
	maxDen = max(maxDen, 1)
	if x >= 1<<40 || x < 0 {
		return int(math.Round(x)), 1
	}
	// p0/q0 and p1/q1: the last two convergents.
	p0, q0, p1, q1 := 0, 1, 1, 0
	r := x
	for i := 0; i < 64; i++ {
		a := int(math.Floor(r))
		if q1 != 0 && a > (maxDen-q0)/q1 {
			// The next convergent is too fine: the best semiconvergent
			// within the bound, or the last convergent.
			k := (maxDen - q0) / q1
			ps, qs := p0+k*p1, q0+k*q1
			if math.Abs(x-float64(ps)/float64(qs)) < math.Abs(x-float64(p1)/float64(q1)) {
				return ps, qs
			}
			return p1, q1
		}
		p0, q0, p1, q1 = p1, q1, a*p1+p0, a*q1+q0
		f := r - float64(a)
		if f < 1e-12 {
			break
		}
		r = 1 / f
	}
	return p1, q1
}

// formatDate shows a serial day (with the time as its fraction).
func (sec *fmtSection) formatDate(v float64, date1904 bool) (string, bool) {
	if v < 0 || v > maxSerialDay {
		return "", false
	}
	// Round to what is shown: milliseconds, or whole seconds.
	unit := math.Pow(10, float64(sec.fracSecs))
	total := math.Round(v * 86400 * unit)
	days := math.Floor(total / (86400 * unit))
	rest := int64(total - days*86400*unit) // units of the day
	ms := rest % int64(unit)
	secs := rest / int64(unit)
	hh, mi, ss := int(secs/3600), int(secs/60%60), int(secs%60)
	y, mo, d, wd := serialDate(int(days), date1904)
	var b strings.Builder
	for i, t := range sec.toks {
		switch t.kind {
		case tkLit:
			b.WriteString(t.text)
		case tkDate:
			n := len(t.text)
			switch t.text[0] {
			case 'y', 'e':
				if n <= 2 && t.text[0] == 'y' {
					b.WriteString(pad2(y % 100))
				} else {
					b.WriteString(strconv.Itoa(y))
				}
			case 'd':
				switch {
				case n == 1:
					b.WriteString(strconv.Itoa(d))
				case n == 2:
					b.WriteString(pad2(d))
				case n == 3:
					b.WriteString(wd.String()[:3])
				default:
					b.WriteString(wd.String())
				}
			case 'h':
				h := hh
				if sec.ampm {
					h = hh % 12
					if h == 0 {
						h = 12
					}
				}
				if n == 1 {
					b.WriteString(strconv.Itoa(h))
				} else {
					b.WriteString(pad2(h))
				}
			case 's':
				if n == 1 {
					b.WriteString(strconv.Itoa(ss))
				} else {
					b.WriteString(pad2(ss))
				}
			case 'm':
				if sec.minutesAt(i) {
					if n == 1 {
						b.WriteString(strconv.Itoa(mi))
					} else {
						b.WriteString(pad2(mi))
					}
					break
				}
				month := time.Month(mo).String()
				switch {
				case n == 1:
					b.WriteString(strconv.Itoa(mo))
				case n == 2:
					b.WriteString(pad2(mo))
				case n == 3:
					b.WriteString(month[:3])
				case n == 5:
					b.WriteString(month[:1])
				default:
					b.WriteString(month)
				}
			}
		case tkElapsed:
			var e int64
			switch t.text[0] {
			case 'h':
				e = int64(days)*24 + int64(hh)
			case 'm':
				e = (int64(days)*24+int64(hh))*60 + int64(mi)
			default:
				e = ((int64(days)*24+int64(hh))*60+int64(mi))*60 + int64(ss)
			}
			s := strconv.FormatInt(e, 10)
			for len(s) < len(t.text) {
				s = "0" + s
			}
			b.WriteString(s)
		case tkAMPM:
			pm := hh >= 12
			switch {
			case len(t.text) == 5 && pm:
				b.WriteString("PM")
			case len(t.text) == 5:
				b.WriteString("AM")
			case pm:
				b.WriteString(t.text[2:3]) // a/p: the letter as written
			default:
				b.WriteString(t.text[:1])
			}
		case tkFrac:
			s := strconv.FormatInt(ms, 10)
			for len(s) < sec.fracSecs {
				s = "0" + s
			}
			b.WriteString(".")
			b.WriteString(s[:min(len(s), len(t.text))])
		case tkPoint:
			b.WriteString(".")
		case tkPercent:
			b.WriteString("%")
		case tkText, tkGeneral:
			b.WriteString(generalNumber(v))
		}
	}
	return b.String(), true
}

// minutesAt tells whether the m code at i means minutes: right after an
// hour or right before a second (literals between do not count).
func (sec *fmtSection) minutesAt(i int) bool {
	for j := i - 1; j >= 0; j-- {
		t := sec.toks[j]
		if t.kind == tkDate || t.kind == tkElapsed {
			return t.text[0] == 'h'
		}
	}
	for j := i + 1; j < len(sec.toks); j++ {
		t := sec.toks[j]
		if t.kind == tkDate || t.kind == tkElapsed {
			return t.text[0] == 's'
		}
	}
	return false
}

func pad2(n int) string {
	if n < 10 && n >= 0 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// serialDate turns a serial day into a date. In the 1900 system day 1 is
// 1900-01-01 and day 60 the 29th of February 1900, a day that never was
// but that Lotus 1-2-3 counted and Excel keeps; in the 1904 system day 0
// is 1904-01-01.
func serialDate(days int, date1904 bool) (y, m, d int, wd time.Weekday) {
	var t time.Time
	switch {
	case date1904:
		t = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days)
	case days == 60:
		return 1900, 2, 29, time.Wednesday
	case days == 0:
		// Excel shows 1900-01-00 for day 0 (a time without a date).
		return 1900, 1, 0, time.Saturday
	case days < 60:
		t = time.Date(1899, 12, 31, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days)
	default:
		t = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days)
	}
	return t.Year(), int(t.Month()), t.Day(), t.Weekday()
}

// builtinFmt are the codes of Excel's built-in format ids that do not
// depend on the locale, and, for those that do (14 and 22, the short date
// and date-time), the unambiguous ISO form.
var builtinFmt = map[int]string{
	0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00",
	5: `"$"#,##0_);("$"#,##0)`, 6: `"$"#,##0_);[Red]("$"#,##0)`,
	7: `"$"#,##0.00_);("$"#,##0.00)`, 8: `"$"#,##0.00_);[Red]("$"#,##0.00)`,
	9: "0%", 10: "0.00%", 11: "0.00E+00", 12: "# ?/?", 13: "# ??/??",
	14: "yyyy-mm-dd", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy",
	18: "h:mm AM/PM", 19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "yyyy-mm-dd h:mm",
	37: "#,##0 ;(#,##0)", 38: "#,##0 ;[Red](#,##0)", 39: "#,##0.00;(#,##0.00)", 40: "#,##0.00;[Red](#,##0.00)",
	41: `_(* #,##0_);_(* (#,##0);_(* "-"_);_(@_)`, 42: `_("$"* #,##0_);_("$"* (#,##0);_("$"* "-"_);_(@_)`,
	43: `_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)`, 44: `_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_);_(@_)`,
	45: "mm:ss", 46: "[h]:mm:ss", 47: "mm:ss.0", 48: "##0.0E+0", 49: "@",
	// East Asian built-in dates and times: shown the ISO way.
	27: "yyyy-mm-dd", 28: "yyyy-mm-dd", 29: "yyyy-mm-dd", 30: "yyyy-mm-dd", 31: "yyyy-mm-dd",
	32: "h:mm", 33: "h:mm:ss", 34: "h:mm", 35: "h:mm:ss", 36: "yyyy-mm-dd",
	50: "yyyy-mm-dd", 51: "yyyy-mm-dd", 52: "yyyy-mm", 53: "yyyy-mm-dd", 54: "yyyy-mm-dd",
	55: "h:mm", 56: "h:mm:ss", 57: "yyyy-mm", 58: "yyyy-mm-dd",
}
