package mediaregistry

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes caps a rendered file name; names come from strangers.
const MaxNameRunes = 80

// Render writes the placeholder the agent reads in place of the bytes:
//
//	[{Kind}: {name}, {duration}, {size}, {mime}, ref:{id}]{ caption}
//
// Unknown fields are left out. Names and captions are untrusted and cleaned
// so they cannot close the bracket, add fields, or fake another placeholder.
func Render(r *MediaReference) string {
	var b strings.Builder
	b.Grow(64 + len(r.FileName) + len(r.Caption))
	b.WriteByte('[')
	b.WriteString(string(r.Kind))
	b.WriteString(": ")
	if name := SafeName(r.FileName); name != "" {
		b.WriteString(name)
		b.WriteString(", ")
	}
	if r.Duration > 0 {
		b.WriteString(FormatDuration(r.Duration))
		b.WriteString(", ")
	}
	if r.Size > 0 {
		b.WriteString(FormatSize(r.Size))
		b.WriteString(", ")
	}
	if m := CleanMIME(r.MIME); m != "" {
		b.WriteString(m)
		b.WriteString(", ")
	}
	b.WriteString("ref:")
	b.WriteString(r.ID)
	b.WriteByte(']')
	if c := SafeCaption(r.Caption); c != "" {
		b.WriteByte(' ')
		b.WriteString(c)
	}
	return b.String()
}

// FormatSize renders 1024-based sizes: 512B, 847KB, 2.4MB, 1.1GB.
func FormatSize(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return strconv.FormatInt(n, 10) + "B"
	case n < k*k:
		return strconv.FormatInt((n+k/2)/k, 10) + "KB"
	case n < k*k*k:
		return strconv.FormatFloat(float64(n)/(k*k), 'f', 1, 64) + "MB"
	default:
		return strconv.FormatFloat(float64(n)/(k*k*k), 'f', 1, 64) + "GB"
	}
}

// FormatDuration renders 12s, 3m05s, 1h02m05s.
func FormatDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 1 {
		s = 1
	}
	h, m, sec := s/3600, s/60%60, s%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	default:
		return fmt.Sprintf("%ds", sec)
	}
}

var (
	sizeRe     = regexp.MustCompile(`^\d+(\.\d)?(B|KB|MB|GB)$`)
	durationRe = regexp.MustCompile(`^(\d+h\d{2}m\d{2}s|\d+m\d{2}s|\d+s)$`)
	mimeRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$`)
	refIDRe    = regexp.MustCompile(`^(wa|tg|sl|wb|dc|mx|gn|ln)_[0-9A-Za-z]{10,64}$`)
)

// CleanMIME lowercases a declared MIME type and drops parameters; anything
// that is not type/subtype is dropped entirely.
func CleanMIME(m string) string {
	m, _, _ = strings.Cut(m, ";")
	m = strings.ToLower(strings.TrimSpace(m))
	if !mimeRe.MatchString(m) {
		return ""
	}
	return m
}

// ValidRefID reports whether id has the shape of a ref id.
func ValidRefID(id string) bool { return refIDRe.MatchString(id) }

// invisible reports runes that must never reach the agent from a stranger:
// control characters and format characters (bidi overrides, zero-width).
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
}

// CleanName is a stranger's file name as one clean line, the cleaning
// every name botd shows or stores goes through: only its last path element
// ("../x/report.pdf", "C:\temp\photo.jpg" and "/etc/passwd" are
// report.pdf, photo.jpg and passwd), no control characters (a tab is one),
// format characters (bidi overrides, zero-width) or broken UTF-8, line
// breaks and other spaces as one space, no leading dots or spaces. "" when
// nothing is left, as for "." or "..": the caller generates a name.
func CleanName(name string) string {
	name = strings.TrimRight(name, `/\`)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	b.Grow(len(name))
	space := false
	for _, r := range name {
		switch {
		case lineBreak(r) || (unicode.IsSpace(r) && !invisible(r)):
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		case invisible(r):
			continue
		}
		b.WriteRune(r)
		space = false
	}
	return strings.TrimRight(strings.TrimLeft(b.String(), ". "), " ")
}

// SafeName makes a stranger's file name safe inside a placeholder and as a
// file name: CleanName, then no [ ] , or : (which a placeholder's fields
// use) and no look-alike opening of a placeholder, a capped length that keeps the extension, and never a shape the
// parser would take for a size, duration or MIME field.
func SafeName(name string) string {
	// Look-alike openings ("［Image：", "【Voice:") are defused as in
	// captions; the ASCII ones by the mapping below.
	name = Neutralize(CleanName(name))
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		switch r {
		case '[', '(':
			b.WriteByte('(')
		case ']', ')':
			b.WriteByte(')')
		case ',', ':':
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	s := capRunes(b.String(), MaxNameRunes)
	if sizeRe.MatchString(s) || durationRe.MatchString(s) {
		s = "file " + s
	}
	return s
}

// capRunes shortens s to max runes, keeping a short extension.
func capRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	ext := ""
	if i := strings.LastIndexByte(s, '.'); i > 0 && len(s)-i <= 10 {
		ext = s[i:]
		s = s[:i]
	}
	keep := max - utf8.RuneCountInString(ext) - 1
	rs := []rune(s)
	if keep < 1 {
		keep = 1
	}
	if len(rs) > keep {
		rs = rs[:keep]
	}
	return string(rs) + "…" + ext
}

// MaxCaptionRunes caps a caption rendered after a placeholder.
const MaxCaptionRunes = 1024

// SafeCaption cleans a caption: invisible characters removed, line breaks
// of every kind (including U+2028, U+2029 and NEL, which a model reads as
// new lines) and tabs kept as spaces, so a caption stays on the
// placeholder's line; text that fakes a placeholder defused, length capped.
func SafeCaption(c string) string {
	var b strings.Builder
	space := false
	for _, r := range c {
		if lineBreak(r) || r == '\t' {
			r = ' '
		}
		if invisible(r) {
			continue
		}
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteRune(r)
	}
	s := Neutralize(strings.TrimSpace(b.String()))
	if utf8.RuneCountInString(s) > MaxCaptionRunes {
		s = string([]rune(s)[:MaxCaptionRunes]) + "…"
	}
	return s
}

// lineBreak reports the runes that end a line for some reader.
func lineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// Neutralize rewrites anything in stranger-written text that opens a
// placeholder ("[Image:") to "(Image:", so only botd writes placeholders.
// A model reads look-alikes the same way, so they are caught too: a
// non-breaking or ideographic space, zero-width characters inside or
// around the kind, full-width letters, brackets and colons.
func Neutralize(text string) string {
	var b strings.Builder
	last := 0
	for i, r := range text {
		if !openBracket(r) || i < last {
			continue
		}
		if !fakeKindAt(text[i+utf8.RuneLen(r):]) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(text))
		}
		b.WriteString(text[last:i])
		b.WriteByte('(')
		last = i + utf8.RuneLen(r)
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// openBracket is '[' and the brackets a reader takes for one.
func openBracket(r rune) bool {
	switch r {
	case '[', '\uff3b', '\u3010', '\u3014', '\u301a', '\u27e6', '\ufe5d', '\u2045', '\ufe47':
		return true
	}
	return false
}

// fakeKindAt reports whether s starts like the rest of a placeholder's
// opening: optional blanks, a kind name, optional blanks, a colon, with
// invisible characters anywhere in between.
func fakeKindAt(s string) bool {
	var word []rune
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		if r >= '\uff01' && r <= '\uff5e' { // full-width ASCII
			r -= 0xfee0
		}
		switch {
		case invisible(r) && r != '\n':
			continue
		case unicode.IsSpace(r) && r != '\n':
			if len(word) > 0 && !endOfWord(s) {
				return false // a space inside the word
			}
			continue
		case r == ':' || r == '\ufe55' || r == '\ua789':
			_, ok := kindNames[strings.ToLower(string(word))]
			return ok
		case unicode.IsLetter(r) && len(word) < 16:
			word = append(word, r)
		default:
			return false
		}
	}
	return false
}

// endOfWord: only blanks and invisibles up to the colon remain, so a
// space ends the kind name rather than splitting it.
func endOfWord(s string) bool {
	for _, r := range s {
		if r >= '\uff01' && r <= '\uff5e' {
			r -= 0xfee0
		}
		switch {
		case r == ':' || r == '\ufe55' || r == '\ua789':
			return true
		case (invisible(r) || unicode.IsSpace(r)) && r != '\n':
		default:
			return false
		}
	}
	return false
}

var kindNames = map[string]bool{"image": true, "video": true, "audio": true, "voice": true, "document": true,
	"sticker": true, "animation": true, "videonote": true,
	// Not a media kind: the link previews channels render look like this.
	"link": true}

// Placeholder is a parsed placeholder.
type Placeholder struct {
	Kind     Kind
	Name     string
	Duration string
	Size     string
	MIME     string
	Ref      string
	// Start and End are byte offsets of the bracketed text in the input.
	Start, End int
}

var placeholderRe = regexp.MustCompile(`\[(Image|Video|Audio|Voice|Document|Sticker|Animation|VideoNote): ([^\[\]\n]*?)ref:((?:wa|tg|sl|wb|dc|mx|gn)_[0-9A-Za-z]{10,64})\]`)

// Parse finds every placeholder in text, in order. Fields are read from the
// right (mime, size, duration), so whatever is left is the name.
func Parse(text string) []Placeholder {
	if !strings.Contains(text, "ref:") {
		return nil
	}
	var out []Placeholder
	for _, m := range placeholderRe.FindAllStringSubmatchIndex(text, -1) {
		p := Placeholder{
			Kind:  Kind(text[m[2]:m[3]]),
			Ref:   text[m[6]:m[7]],
			Start: m[0],
			End:   m[1],
		}
		fields := text[m[4]:m[5]]
		if fields != "" {
			if !strings.HasSuffix(fields, ", ") {
				continue // "ref:" glued to other text: not ours
			}
			parts := strings.Split(strings.TrimSuffix(fields, ", "), ", ")
			i := len(parts) - 1
			if i >= 0 && mimeRe.MatchString(parts[i]) {
				p.MIME, i = parts[i], i-1
			}
			if i >= 0 && sizeRe.MatchString(parts[i]) {
				p.Size, i = parts[i], i-1
			}
			if i >= 0 && durationRe.MatchString(parts[i]) {
				p.Duration, i = parts[i], i-1
			}
			if i > 0 {
				continue // more than one unrecognised field: not a placeholder botd wrote
			}
			if i == 0 {
				p.Name = parts[0]
			}
		}
		out = append(out, p)
	}
	return out
}

// Typed returns what the sender of a composed message wrote, apart from
// the placeholders botd put first (one per line): the caption after each
// placeholder, then the text that follows them. A message without
// placeholders is all typed.
func Typed(text string) []string {
	var out []string
	rest := text
	for rest != "" {
		line, after, more := strings.Cut(rest, "\n")
		ps := Parse(line)
		if len(ps) == 0 || strings.TrimSpace(line[:ps[0].Start]) != "" {
			break
		}
		out = append(out, line[ps[0].End:])
		rest = ""
		if more {
			rest = after
		}
	}
	if rest != "" {
		out = append(out, rest)
	}
	return out
}
