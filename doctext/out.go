package doctext

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// errEnough stops a reader once the parts asked for are complete.
var errEnough = errors.New("enough text")

// parts receives a document's text as it is read and cuts it into parts
// of at most size characters, at a line break where there is one. One
// part (the whole budget) is kept; the reader is stopped (errEnough) as
// soon as text after it turns up, so a long document costs no more than
// the part it is read for.
type parts struct {
	size     int
	want     int // the part to keep
	buf      []byte
	runes    int
	n        int // parts completed
	kept     string
	more     bool // text follows the part kept
	newlines int  // newlines at the end of what was written
	space    bool // a space at the end of what was written
}

func newParts(size, want int) *parts {
	return &parts{size: size, want: want, newlines: 2}
}

// text writes s: control characters go, carriage returns become line
// breaks, runs of spaces and of empty lines shrink to one.
func (p *parts) text(s string) error {
	if p.more {
		return errEnough
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue
			}
			r = '\n'
		case r == '\t', r == '\n':
		case r == utf8.RuneError && n == 1:
			r = unicode.ReplacementChar
		case unicode.IsControl(r), r == '\uFEFF':
			continue
		}
		if r == '\n' {
			if p.newlines >= 2 {
				continue
			}
			p.newlines++
			p.space = false
		} else {
			if r == ' ' && (p.space || p.newlines > 0) {
				continue
			}
			if p.n >= p.want {
				p.more = true // the part kept is complete, and more follows
				return errEnough
			}
			p.newlines = 0
			p.space = r == ' '
		}
		p.buf = utf8.AppendRune(p.buf, r)
		if p.runes++; p.runes >= p.size {
			p.cut()
		}
	}
	return nil
}

// line ends the current line, if one was started.
func (p *parts) line() error {
	if p.newlines > 0 {
		return nil
	}
	return p.text("\n")
}

// para ends the current paragraph with an empty line.
func (p *parts) para() error {
	if err := p.line(); err != nil {
		return err
	}
	return p.text("\n")
}

// cut ends a full part at its last line break (or space) in the second
// half, carrying the rest over into the next part.
func (p *parts) cut() {
	at := len(p.buf)
	half := len(p.buf) / 2
	if i := bytes.LastIndexByte(p.buf[half:], '\n'); i >= 0 {
		at = half + i + 1
	} else if i := bytes.LastIndexByte(p.buf[half:], ' '); i >= 0 {
		at = half + i + 1
	}
	p.flush(p.buf[:at])
	rest := p.buf[at:]
	p.buf = append(make([]byte, 0, len(rest)), rest...)
	p.runes = utf8.RuneCount(p.buf)
	if p.n >= p.want && len(bytes.TrimSpace(p.buf)) > 0 {
		p.more = true
	}
}

func (p *parts) flush(b []byte) {
	p.n++
	if p.n == p.want {
		p.kept = string(b)
	}
}

// finish ends the text: what is left is the last part.
func (p *parts) finish() {
	if !p.more && (len(bytes.TrimSpace(p.buf)) > 0 || p.n == 0) {
		p.flush(p.buf)
	}
	p.buf = nil
}

// streamed reads a document that has no pages of its own, cutting it into
// parts of the budget's size.
func (d *doc) streamed(read func(*parts) error) (Result, error) {
	p := newParts(d.max, d.req.from)
	if err := read(p); err != nil && !errors.Is(err, errEnough) {
		return Result{}, err
	}
	p.finish()
	if p.n < p.want {
		return Result{}, fmt.Errorf("%w: part %d asked for, but the document has %s", ErrPages, p.want, count(p.n, "part"))
	}
	res := Result{Format: d.format, Unit: "part", Shown: fmt.Sprint(p.want)}
	var attrs, notes []string
	switch {
	case p.more:
		next := p.want + 1
		attrs = []string{"part", res.Shown}
		notes = append(notes, fmt.Sprintf("This is part %d of a document longer than one answer holds (%d characters a part).",
			p.want, d.max))
		// Parts are the budget's making, not the document's: the next one
		// is always offered, whatever range was asked for.
		res.More = fmt.Sprintf("pages: \"%d\"", next)
		notes[0] += fmt.Sprintf(" For the next part, ask again with pages: \"%d\".", next)
	case p.n > 1:
		res.Pages = p.n
		attrs = []string{"part", fmt.Sprintf("%d of %d", p.want, p.n)}
		notes = append(notes, fmt.Sprintf("This is the last part, %d of %d.", p.want, p.n))
	default:
		res.Pages = 1
	}
	text := strings.TrimSpace(p.kept)
	if text == "" {
		notes = append(notes, "The document has no text.")
	}
	notes = append(notes, d.cutNote()...)
	res.Text = wrap(d.name, d.mime, attrs, text, notes)
	return res, nil
}

// cutNote says that a run of text was cut (see maxTextRun).
func (d *doc) cutNote() []string {
	if d.z == nil || !d.z.cut {
		return nil
	}
	return []string{fmt.Sprintf("One stretch of this document's text runs on for more than %d MiB without a break: "+
		"botd reads its first MiB and leaves the rest out.", maxTextRun>>20)}
}

// wrap puts text inside the <document> element, escaped so it cannot end
// it, with botd's notes after it.
func wrap(name, mime string, attrs []string, text string, notes []string) string {
	s := Element("document", append([]string{"name", name, "mime", mime}, attrs...), text)
	if len(notes) > 0 {
		s += "\n" + strings.Join(notes, "\n")
	}
	return s
}

// Element puts untrusted text inside <tag k="v"…>: the text and every
// attribute value escaped (values also one short line), so nothing in it
// can end the element and pose as botd or as instructions. attrs are
// name, value pairs; the names are botd's own. Every wrapper of content
// from strangers (documents, web pages, search results) is made here.
func Element(tag string, attrs []string, text string) string {
	var b strings.Builder
	b.WriteString("<")
	b.WriteString(tag)
	for i := 0; i+1 < len(attrs); i += 2 {
		fmt.Fprintf(&b, " %s=\"%s\"", attrs[i], escapeAttr(attrs[i+1]))
	}
	b.WriteString(">\n")
	escapeText(&b, text)
	b.WriteString("\n</")
	b.WriteString(tag)
	b.WriteString(">")
	return b.String()
}

func escapeText(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
}

// escapeAttr makes an untrusted name fit an attribute: escaped, on one
// line, without control or bidirectional-override characters, and short.
func escapeAttr(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= 200 {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r), r == utf8.RuneError:
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
