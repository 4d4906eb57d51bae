package doctext

import (
	"fmt"
	"io"
)

// Bounds on one XML token of an office file. encoding/xml holds a whole
// token in memory (and the readers copy it once more into a string), so
// a 48 KB DOCX whose one text run inflates to 47 MiB would cost hundreds
// of megabytes; no real run or tag is near these sizes.
const (
	// maxTextRun is the text (or CDATA) between two tags that is read;
	// the rest of such a run is skipped, and the answer says so. A call
	// shows 60,000 characters by default: a megabyte is many parts.
	maxTextRun = 1 << 20
	// maxMarkup bounds one tag, comment, processing instruction or
	// declaration; past it the part is refused.
	maxMarkup = 1 << 20
)

// xmlBound sits between a zip entry and the XML decoder: it passes the
// XML through, cutting text runs longer than maxTextRun at a character
// boundary (never inside an entity or a multi-byte character, so what
// the decoder sees stays well-formed) and failing on markup longer than
// maxMarkup.
type xmlBound struct {
	r    io.Reader
	z    *zipDoc
	name string
	buf  []byte // read from r
	out  []byte // filtered
	pend []byte // of out, not yet returned
	err  error  // r's, or the filter's, once pend is drained

	st    xmlState
	run   int  // bytes of the current text run
	drop  bool // the rest of this run is skipped
	ent   int  // bytes since an '&' of a possible entity, 0 outside one
	mlen  int  // bytes of the current markup
	quote byte // the quote open in a tag or declaration
	depth int  // '<' open inside a declaration (DOCTYPE)
	pre   []byte
	tail  [2]byte // the last two bytes of markup, for its end marker
	brack int     // ']' in a row inside CDATA
}

type xmlState uint8

const (
	xText      xmlState = iota
	xOpen               // after '<'
	xBang               // after "<!", telling a comment from CDATA from a declaration
	xTag                // an element tag
	xPI                 // <? … ?>
	xComment            // <!-- … -->
	xDirective          // <!DOCTYPE … >
	xCDATA              // <![CDATA[ … ]]>
)

func (x *xmlBound) Read(p []byte) (int, error) {
	// A read that was all skipped text reads on: 0, nil would look like
	// a stall to the decoder.
	for len(x.pend) == 0 {
		if x.err != nil {
			return 0, x.err
		}
		if x.buf == nil {
			x.buf = make([]byte, 32<<10)
		}
		n, err := x.r.Read(x.buf)
		var ferr error
		x.out, ferr = x.filter(x.out[:0], x.buf[:n])
		x.pend = x.out
		switch {
		case ferr != nil:
			x.pend, x.err = nil, ferr
		case err != nil:
			x.err = err
		}
	}
	n := copy(p, x.pend)
	x.pend = x.pend[n:]
	return n, nil
}

func (x *xmlBound) filter(out, in []byte) ([]byte, error) {
	for _, c := range in {
		switch x.st {
		case xText, xCDATA:
			if x.st == xText && c == '<' {
				x.st, x.mlen, x.run, x.drop, x.ent = xOpen, 1, 0, false, 0
				out = append(out, c)
				continue
			}
			if x.st == xCDATA {
				if c == '>' && x.brack >= 2 {
					if x.drop {
						out = append(out, ']', ']')
					}
					out = append(out, c)
					x.st, x.run, x.drop, x.brack = xText, 0, false, 0
					continue
				}
				if c == ']' {
					x.brack++
				} else {
					x.brack = 0
				}
			}
			if x.drop {
				continue
			}
			// The run is cut before a byte that starts a character and
			// is not inside an entity (CDATA has none).
			if x.run++; x.run > maxTextRun && c&0xC0 != 0x80 && x.ent == 0 {
				x.drop = true
				x.z.cut = true
				continue
			}
			if x.st == xText {
				switch {
				case c == '&':
					x.ent = 1
				case x.ent > 0 && (c == ';' || x.ent > 32): // 32: a stray '&', not an entity
					x.ent = 0
				case x.ent > 0:
					x.ent++
				}
			}
			out = append(out, c)
			continue
		case xOpen:
			switch c {
			case '?':
				x.st = xPI
			case '!':
				x.st, x.pre = xBang, x.pre[:0]
			default:
				x.st, x.quote = xTag, 0
				if c == '>' {
					x.st = xText
				}
			}
		case xBang:
			x.pre = append(x.pre, c)
			switch s := string(x.pre); {
			case s == "--":
				x.st, x.tail = xComment, [2]byte{}
			case s == "[CDATA[":
				x.st, x.run, x.brack = xCDATA, 0, 0
			case s == "-" || (len(s) < 7 && s == "[CDATA["[:len(s)]):
			default:
				x.st, x.quote, x.depth = xDirective, 0, 0
				if c == '>' {
					x.st = xText
				}
			}
		case xTag, xDirective:
			// Both end at a '>' outside quotes; only a directive nests
			// <...> (a DOCTYPE's internal subset).
			switch {
			case x.quote != 0:
				if c == x.quote {
					x.quote = 0
				}
			case c == '"' || c == '\'':
				x.quote = c
			case x.st == xTag:
				if c == '>' {
					x.st = xText
				}
			case c == '<':
				x.depth++
			case c == '>' && x.depth > 0:
				x.depth--
			case c == '>':
				x.st = xText
			}
		case xPI:
			if c == '>' && x.tail[1] == '?' {
				x.st = xText
			}
		case xComment:
			if c == '>' && x.tail == [2]byte{'-', '-'} {
				x.st = xText
			}
		}
		x.tail = [2]byte{x.tail[1], c}
		if x.mlen++; x.mlen > maxMarkup {
			return out, fmt.Errorf("%w: %s has a piece of XML markup longer than %d MiB", ErrTooLarge, x.name, maxMarkup>>20)
		}
		out = append(out, c)
	}
	return out, nil
}
