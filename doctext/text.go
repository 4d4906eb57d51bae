package doctext

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// maxLine bounds one line of a text or CSV file: a reader keeps a line
// whole, so a file of one endless line would otherwise be read at once.
const maxLine = 4 << 20

// decoded reads a text as UTF-8: a UTF-16 text (with its byte order
// mark) is converted, a UTF-8 one passed on. Invalid bytes are replaced
// when the text is written.
func decoded(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	head, _ := br.Peek(2)
	if utf16BOM(head) {
		return transform.NewReader(br, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
	}
	return br
}

// lineLimit fails a read once maxLine bytes pass without a line break.
type lineLimit struct {
	r   io.Reader
	run int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			l.run = 0
		} else if l.run++; l.run > maxLine {
			return n, fmt.Errorf("%w: a line longer than %d MiB", ErrTooLarge, maxLine>>20)
		}
	}
	return n, err
}

func plainText(ctx context.Context, r io.Reader, p *parts) error {
	br := bufio.NewReaderSize(decoded(r), 64<<10)
	buf := make([]byte, 32<<10)
	var carry []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := br.Read(buf)
		chunk := append(carry, buf[:n]...)
		// Keep an incomplete character at the end for the next read.
		cut := len(chunk)
		for i := 1; i <= 3 && i <= len(chunk); i++ {
			if c := chunk[len(chunk)-i]; utf8.RuneStart(c) {
				if !utf8.FullRune(chunk[len(chunk)-i:]) {
					cut = len(chunk) - i
				}
				break
			}
		}
		if err != nil {
			cut = len(chunk)
		}
		if werr := p.text(string(chunk[:cut])); werr != nil {
			return werr
		}
		carry = append(carry[:0], chunk[cut:]...)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
}

// csvText writes a CSV (or TSV) file as a table, one row a line.
func csvText(ctx context.Context, r io.Reader, name, mime string, p *parts) error {
	br := bufio.NewReaderSize(&lineLimit{r: decoded(r)}, 64<<10)
	cr := csv.NewReader(br)
	cr.Comma = sniffComma(br, name, mime)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return err
			}
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if len(rec) > maxColumns {
			rec = rec[:maxColumns]
		}
		empty := true
		for _, c := range rec {
			if strings.TrimSpace(c) != "" {
				empty = false
				break
			}
		}
		if empty {
			continue
		}
		if err := p.text(row(rec)); err != nil {
			return err
		}
	}
}

// sniffComma picks the separator: tab for TSV, else whichever of , ; tab
// the first line has most of (Excel in much of Europe writes ;).
func sniffComma(br *bufio.Reader, name, mime string) rune {
	if strings.EqualFold(path.Ext(name), ".tsv") || strings.Contains(mime, "tab-separated") {
		return '\t'
	}
	head, _ := br.Peek(8 << 10)
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	best, most := ',', bytes.Count(head, []byte(","))
	for _, c := range []rune{';', '\t'} {
		if n := bytes.Count(head, []byte(string(c))); n > most {
			best, most = c, n
		}
	}
	return best
}
