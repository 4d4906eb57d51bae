package doctext

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxRepeat bounds how often an ODF row or cell marked as repeated is
// written out: spreadsheets repeat empty rows a million times.
const maxRepeat = 100

// odf reads content.xml of an ODT or ODS: paragraphs and headings, list
// items with their numbers, and tables (the sheets of a spreadsheet) as
// rows.
func (d *doc) odf(p *parts) error {
	r := odfText{d: d, p: p, lists: newODFLists()}
	if err := d.odfStyles(r.lists); err != nil {
		return err
	}
	return d.z.walk("content.xml", func(t xml.Token) error {
		switch e := t.(type) {
		case xml.StartElement:
			if e.Name.Local == "body" {
				r.inBody = true
			}
		case xml.EndElement:
			if e.Name.Local == "body" {
				r.inBody = false
			}
		}
		return r.token(t)
	})
}

// odfText turns the text elements of an OpenDocument body into text:
// the same in a text document, a spreadsheet's cells and a slide's boxes.
// Outside the body it takes in the styles declared there.
type odfText struct {
	d      *doc
	p      *parts
	lists  *odfLists
	tb     table
	inBody bool
	skip   int // inside an element whose text is not content
	// Repetitions of the spreadsheet row and cell being read, and empty
	// cells waiting for a non-empty one after them.
	rowRepeat, cellRep, pending int
	cell                        odfCell // the value of the cell being read
	// lead and before are written ahead of the next text that is not
	// blank: a heading of the part (speaker notes) and a list item's
	// label, so that an empty paragraph shows none.
	lead, before string
}

func (r *odfText) write(s string) error {
	if !r.inBody || r.skip > 0 {
		return nil
	}
	return r.tb.write(r.p, s)
}

func (r *odfText) token(t xml.Token) (err error) {
	if !r.inBody {
		r.lists.styleToken(t)
		return nil
	}
	p, tb := r.p, &r.tb
	switch e := t.(type) {
	case xml.StartElement:
		switch e.Name.Local {
		case "note-citation", "tracked-changes", "annotation":
			r.skip++
		case "title", "desc":
			if e.Name.Space == "svg" { // a drawing's alternative text
				r.skip++
			}
		case "table":
			if r.skip > 0 {
				break
			}
			tb.depth++
			if tb.depth == 1 {
				if n := attr(e, "name"); r.d.format == "ods" && n != "" {
					err = p.text("## Sheet: " + cellEscaper.Replace(n) + "\n")
				} else {
					err = p.line()
				}
			}
		case "table-row":
			r.rowRepeat = repeat(attr(e, "number-rows-repeated"))
			r.pending = 0
		case "table-cell", "covered-table-cell":
			r.cellRep = repeat(attr(e, "number-columns-repeated"))
			tb.startCell()
			if tb.depth == 1 {
				r.cell = odfCell{typ: attr(e, "value-type"), value: attr(e, "value"), date: attr(e, "date-value"),
					time: attr(e, "time-value"), boolean: attr(e, "boolean-value"), currency: attr(e, "currency")}
			}
		case "h":
			r.before = r.lists.paragraph(attr(e, "style-name"))
			if tb.depth == 0 {
				lvl, _ := strconv.Atoi(attr(e, "outline-level"))
				err = r.write(strings.Repeat("#", min(max(lvl, 1), 6)) + " ")
			}
		case "p":
			r.before = r.lists.paragraph(attr(e, "style-name"))
		case "list":
			r.lists.startList(e)
		case "list-item":
			r.lists.startItem(e, false)
		case "list-header":
			r.lists.startItem(e, true)
		case "s":
			n := repeat(attr(e, "c"))
			err = r.write(strings.Repeat(" ", min(n, 8)))
		case "tab":
			err = r.write("\t")
		case "line-break":
			err = r.write("\n")
		}
	case xml.EndElement:
		switch e.Name.Local {
		case "note-citation", "tracked-changes", "annotation":
			r.skip = max(0, r.skip-1)
		case "title", "desc":
			if e.Name.Space == "svg" {
				r.skip = max(0, r.skip-1)
			}
		case "p", "h":
			r.before = ""
			if tb.depth > 0 && tb.inCell {
				err = r.write(" ")
			} else if r.skip == 0 {
				err = p.line()
			}
		case "list":
			r.lists.endList()
		case "table-cell", "covered-table-cell":
			if tb.depth != 1 {
				break
			}
			if v, ok := r.cell.text(tb.cell.String()); ok {
				tb.cell.Reset()
				tb.cell.WriteString(v)
			}
			tb.endCell()
			// A repeated cell is written as often as it repeats, up to a
			// bound; repeated empty cells only when something follows.
			last := tb.cells[len(tb.cells)-1]
			if last == "" {
				tb.cells = tb.cells[:len(tb.cells)-1]
				r.pending += r.cellRep
				break
			}
			tb.cells = tb.cells[:len(tb.cells)-1]
			for ; r.pending > 0 && len(tb.cells) < maxColumns; r.pending-- {
				tb.cells = append(tb.cells, "")
			}
			r.pending = 0
			for i := 0; i < r.cellRep && len(tb.cells) < maxColumns; i++ {
				tb.cells = append(tb.cells, last)
			}
		case "table-row":
			if tb.depth != 1 {
				break
			}
			if len(tb.cells) == 0 {
				break
			}
			saved := append([]string(nil), tb.cells...)
			for i := 0; i < min(r.rowRepeat, maxRepeat); i++ {
				tb.cells = append(tb.cells[:0], saved...)
				if err = tb.endRow(p); err != nil {
					break
				}
			}
		case "table":
			if r.skip > 0 {
				break
			}
			if tb.depth == 1 {
				err = p.para()
			}
			tb.depth = max(0, tb.depth-1)
		}
	case xml.CharData:
		if r.lead+r.before != "" && len(bytes.TrimSpace(e)) > 0 {
			if err = r.write(r.lead + r.before); err != nil {
				break
			}
			r.lead, r.before = "", ""
		}
		err = r.write(string(e))
	}
	return err
}

// repeat reads a repetition count: at least 1, at most maxRepeat for
// anything that is written out.
func repeat(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	return min(n, 1<<20)
}

// odfCell is a spreadsheet cell's typed value, from its attributes. The
// text of the cell (text:p) is the value as the program that wrote it
// showed it, formats applied; the attributes speak when it is missing,
// and a boolean is TRUE or FALSE whatever its text says.
type odfCell struct {
	typ, value, date, time, boolean, currency string
}

// text is what replaces the cell's text, if anything.
func (c odfCell) text(shown string) (string, bool) {
	shown = strings.TrimSpace(shown)
	if c.typ == "boolean" {
		switch strings.ToLower(strings.TrimSpace(c.boolean)) {
		case "true", "1":
			return "TRUE", true
		case "false", "0":
			return "FALSE", true
		}
		return "", false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(c.value), 64)
	numeric := err == nil
	if shown != "" {
		// A producer that wrote the raw binary value as the text
		// (1.0999999999999996) meant the number.
		if numeric && c.typ == "float" && shown == strings.TrimSpace(c.value) {
			return generalNumber(v), true
		}
		return "", false
	}
	switch c.typ {
	case "float":
		if numeric {
			return generalNumber(v), true
		}
	case "percentage":
		if numeric {
			return generalNumber(v*100) + "%", true
		}
	case "currency":
		if numeric {
			return strings.TrimSpace(generalNumber(v) + " " + c.currency), true
		}
	case "date":
		if d := strings.TrimSpace(c.date); d != "" {
			d = strings.TrimSuffix(strings.Replace(d, "T", " ", 1), " 00:00:00")
			return d, true
		}
	case "time":
		if t, ok := isoDuration(c.time); ok {
			return t, true
		}
	}
	return "", false
}

// isoDuration turns an ODF time value (PT12H30M00S) into 12:30:00.
func isoDuration(s string) (string, bool) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "PT")
	if !ok || len(rest) > 64 {
		return "", false
	}
	var h, m int
	var sec float64
	for rest != "" {
		i := strings.IndexAny(rest, "HMS")
		if i <= 0 {
			return "", false
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || n < 0 || n > 1e7 {
			return "", false
		}
		switch rest[i] {
		case 'H':
			h = int(n)
		case 'M':
			m = int(n)
		case 'S':
			sec = n
		}
		rest = rest[i+1:]
	}
	total := int(math.Round(sec)) + m*60 + h*3600
	return fmt.Sprintf("%02d:%02d:%02d", total/3600, total/60%60, total%60), true
}
