// Package pdf is a small PDF reader that gets the text of single pages:
// enough of the file structure (xref tables and streams, object streams,
// the page tree) and of content streams (text operators, fonts, form
// XObjects, annotations) to read what a page says, with every loop and
// buffer bounded, because the files come from strangers. An encrypted
// file is read when it opens without a password.
package pdf

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The object model: what a parsed PDF object can be.
type (
	name    string
	keyword string
	dict    map[name]object
	array   []object
	ref     struct{ num, gen int32 }
	// stream is a stream's dictionary and where its data starts in the
	// file (streams are never inside object streams).
	stream struct {
		d        dict
		off      int64
		num, gen int32 // which object it is: the key to its data when encrypted
	}
	object any // nil, bool, int64, float64, string, name, dict, array, ref, *stream, keyword
)

// ErrMalformed is the error for anything the reader cannot make sense of.
var ErrMalformed = errors.New("malformed PDF")

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
}

const (
	maxDepth    = 32      // nesting of arrays and dictionaries
	maxTokenLen = 8 << 20 // one string
	// Elements in one array or dictionary. A parsed element takes ten
	// times the bytes it took in the file, so the bound is on memory:
	// a page tree's Kids may be long, a content stream's operands never.
	maxFileContainer    = 1 << 18
	maxContentContainer = 1 << 14
)

// lexer reads PDF tokens from src, keeping track of the absolute offset so
// that a stream's data can be found after its "stream" keyword.
type lexer struct {
	src  io.Reader
	buf  []byte
	i, n int
	off  int64 // absolute offset of buf[0]
	err  error
	// refs: whether "n g R" forms a reference (in the file) or is just
	// numbers and an operator (content streams have no references).
	refs bool
	back []object // tokens pushed back while looking for "n g R"
	// maxElems bounds an array or dictionary.
	maxElems int
	// parsed, when set, counts the elements of the document's objects
	// (see maxParsed).
	parsed *int64
}

func newLexer(src io.Reader, off int64, refs bool) *lexer {
	n := maxFileContainer
	if !refs {
		n = maxContentContainer
	}
	return &lexer{src: src, buf: make([]byte, 4096), off: off, refs: refs, maxElems: n}
}

func (l *lexer) fill() bool {
	if l.err != nil {
		return false
	}
	l.off += int64(l.n)
	l.i, l.n = 0, 0
	for l.n == 0 && l.err == nil {
		l.n, l.err = l.src.Read(l.buf)
	}
	return l.n > 0
}

func (l *lexer) peek() (byte, bool) {
	if l.i >= l.n && !l.fill() {
		return 0, false
	}
	return l.buf[l.i], true
}

func (l *lexer) next() (byte, bool) {
	c, ok := l.peek()
	if ok {
		l.i++
	}
	return c, ok
}

// pos is the absolute offset of the next byte.
func (l *lexer) pos() int64 { return l.off + int64(l.i) }

// readErr is the reader's error, or nil at a clean end.
func (l *lexer) readErr() error {
	if l.err == io.EOF {
		return nil
	}
	return l.err
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) skipSpace() {
	for {
		c, ok := l.peek()
		if !ok {
			return
		}
		switch {
		case isSpace(c):
			l.i++
		case c == '%':
			for {
				c, ok := l.next()
				if !ok || c == '\n' || c == '\r' {
					break
				}
			}
		default:
			return
		}
	}
}

// Token markers for the structural delimiters.
type delim byte

// token reads one token: a number, string, name, keyword or delimiter.
// It returns io.EOF at the end.
// tokens3 reads the three tokens of an xref entry or an object header
// ("num gen obj"), all of them even when one fails, as the callers did.
func (l *lexer) tokens3() (a, b, c object, err error) {
	a, err1 := l.token()
	b, err2 := l.token()
	c, err3 := l.token()
	return a, b, c, errors.Join(err1, err2, err3)
}

func (l *lexer) token() (object, error) {
	if n := len(l.back); n > 0 {
		t := l.back[n-1]
		l.back = l.back[:n-1]
		return t, nil
	}
	l.skipSpace()
	c, ok := l.next()
	if !ok {
		if err := l.readErr(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	switch c {
	case '[', ']', '{', '}':
		return delim(c), nil
	case '<':
		if c, ok := l.peek(); ok && c == '<' {
			l.i++
			return delim('d'), nil // <<
		}
		return l.hexString()
	case '>':
		if c, ok := l.peek(); ok && c == '>' {
			l.i++
			return delim('D'), nil // >>
		}
		return nil, malformed("stray '>'")
	case '(':
		return l.literalString()
	case ')':
		return nil, malformed("stray ')'")
	case '/':
		return l.name()
	}
	// A number or keyword: a run of regular characters.
	word := []byte{c}
	for {
		c, ok := l.peek()
		if !ok || isSpace(c) || isDelim(c) {
			break
		}
		if len(word) >= 256 {
			return nil, malformed("token too long")
		}
		word = append(word, c)
		l.i++
	}
	if n, ok := number(word); ok {
		return n, nil
	}
	switch string(word) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	return keyword(word), nil
}

// number parses an integer or real, tolerating what producers get wrong
// (a doubled sign, a trailing dot).
func number(w []byte) (object, bool) {
	c := w[0]
	if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.') {
		return nil, false
	}
	real := false
	for _, c := range w {
		if c == '.' {
			real = true
		} else if !(c >= '0' && c <= '9' || c == '-' || c == '+') {
			return nil, false
		}
	}
	s := string(w)
	for len(s) > 1 && (s[0] == '-' || s[0] == '+') && (s[1] == '-' || s[1] == '+') {
		s = s[1:]
	}
	if !real {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, true
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return float64(0), true
	}
	return f, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (l *lexer) name() (object, error) {
	var b []byte
	for {
		c, ok := l.peek()
		if !ok || isSpace(c) || isDelim(c) {
			break
		}
		l.i++
		if c == '#' {
			hi, ok1 := l.peek()
			h, okh := unhex(hi)
			if ok1 && okh {
				l.i++
				lo, ok2 := l.peek()
				if v, okl := unhex(lo); ok2 && okl {
					l.i++
					c = h<<4 | v
				}
			}
		}
		if len(b) >= 1024 {
			return nil, malformed("name too long")
		}
		b = append(b, c)
	}
	return name(b), nil
}

func (l *lexer) hexString() (object, error) {
	var b []byte
	var hi byte
	half := false
	for {
		c, ok := l.next()
		if !ok {
			return nil, malformed("unterminated hex string")
		}
		if c == '>' {
			break
		}
		v, ok := unhex(c)
		if !ok {
			if isSpace(c) {
				continue
			}
			return nil, malformed("bad character %q in hex string", c)
		}
		if half {
			b = append(b, hi<<4|v)
			if len(b) > maxTokenLen {
				return nil, malformed("string too long")
			}
		} else {
			hi = v
		}
		half = !half
	}
	if half {
		b = append(b, hi<<4)
	}
	return string(b), nil
}

func (l *lexer) literalString() (object, error) {
	var b []byte
	depth := 1
	for {
		c, ok := l.next()
		if !ok {
			return nil, malformed("unterminated string")
		}
		if len(b) > maxTokenLen {
			return nil, malformed("string too long")
		}
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return string(b), nil
			}
		case '\r':
			// An end of line in a string is a newline, however written.
			if c, ok := l.peek(); ok && c == '\n' {
				l.i++
			}
			c = '\n'
		case '\\':
			e, ok := l.next()
			if !ok {
				return nil, malformed("unterminated string")
			}
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if c, ok := l.peek(); ok && c == '\n' {
					l.i++
				}
				continue
			case '\n':
				continue
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(e - '0')
				for range 2 {
					d, ok := l.peek()
					if !ok || d < '0' || d > '7' {
						break
					}
					l.i++
					v = v*8 + int(d-'0')
				}
				c = byte(v)
			default:
				c = e // \( \) \\ and unknown escapes stand for themselves
			}
		}
		b = append(b, c)
	}
}

// object reads one complete object; keywords (operators, "obj",
// "stream") come back as keyword values for the caller to handle.
func (l *lexer) object(depth int) (object, error) {
	t, err := l.token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case delim:
		switch t {
		case '[':
			return l.array(depth + 1)
		case 'd':
			return l.dict(depth + 1)
		case 'D':
			return keyword(">>"), nil
		}
		return keyword(string(rune(t))), nil
	case int64:
		if !l.refs || t < 0 {
			return t, nil
		}
		return l.maybeRef(t)
	}
	return t, nil
}

// maybeRef looks past an integer for "gen R".
func (l *lexer) maybeRef(num int64) (object, error) {
	t2, err := l.token()
	if err != nil {
		if err == io.EOF {
			return num, nil
		}
		return nil, err
	}
	gen, ok := t2.(int64)
	if !ok {
		l.back = append(l.back, t2)
		return num, nil
	}
	t3, err := l.token()
	if err != nil {
		if err == io.EOF {
			l.back = append(l.back, t2)
			return num, nil
		}
		return nil, err
	}
	if k, ok := t3.(keyword); ok && k == "R" && num <= 1<<31-1 && gen >= 0 && gen <= 1<<31-1 {
		return ref{int32(num), int32(gen)}, nil
	}
	l.back = append(l.back, t3, t2)
	return num, nil
}

// count counts one element of an object of the file against maxParsed.
func (l *lexer) count() error {
	if l.parsed == nil {
		return nil
	}
	if *l.parsed++; *l.parsed > maxParsed {
		return tooLarge("this PDF's objects hold more than %d million values, more than botd reads for one file",
			maxParsed/1_000_000)
	}
	return nil
}

func (l *lexer) array(depth int) (object, error) {
	if depth > maxDepth {
		return nil, malformed("objects nested too deeply")
	}
	var a array
	for {
		t, err := l.object(depth)
		if err != nil {
			if err == io.EOF {
				return nil, malformed("unterminated array")
			}
			return nil, err
		}
		if k, ok := t.(keyword); ok {
			if k == "]" {
				return a, nil
			}
			if k == ">>" || k == "}" {
				return nil, malformed("unbalanced array")
			}
		}
		if len(a) >= l.maxElems {
			return nil, malformed("array too long")
		}
		if err := l.count(); err != nil {
			return nil, err
		}
		a = append(a, t)
	}
}

func (l *lexer) dict(depth int) (object, error) {
	if depth > maxDepth {
		return nil, malformed("objects nested too deeply")
	}
	d := dict{}
	// next is the next key or value; the end of input inside a dictionary
	// is a malformed file, not the end of one.
	next := func() (object, error) {
		o, err := l.object(depth)
		if err == io.EOF {
			return nil, malformed("unterminated dictionary")
		}
		return o, err
	}
	for {
		t, err := next()
		if err != nil {
			return nil, err
		}
		if t == keyword(">>") {
			return d, nil
		}
		k, ok := t.(name)
		if !ok {
			// Producers write junk keys at times: skip it, keep going.
			if _, isKw := t.(keyword); isKw {
				return nil, malformed("unexpected %v in dictionary", t)
			}
			continue
		}
		v, err := next()
		if err != nil {
			return nil, err
		}
		if v == keyword(">>") {
			return d, nil
		}
		if len(d) >= l.maxElems {
			return nil, malformed("dictionary too long")
		}
		if err := l.count(); err != nil {
			return nil, err
		}
		d[k] = v
	}
}
