package doctext

import (
	"bytes"
	"encoding/xml"
	"strconv"
	"strings"
)

// table gathers the cells of a table row, so that a row becomes one line:
// | a | b |. Tables inside a cell run into that cell's text. It also
// follows the text runs, whose characters go to a cell or the document.
type table struct {
	depth  int // tables open; only the outermost makes rows
	cells  []string
	cell   strings.Builder
	inCell bool
	// lineAround ends the line before and after the outermost table
	// (Word's tables stand between paragraphs; a slide's in a frame).
	lineAround bool
	// inText is set inside a text run (t) whose characters count; the
	// format's own walker decides at its start.
	inText bool
	// lead, when set, is asked for a paragraph's prefix (a bullet, a
	// number) at its first text that is not blank: an empty paragraph
	// neither shows nor counts a number. led says it was asked.
	lead func() string
	led  bool
}

// walkText walks a part of a Word or PowerPoint file: tb follows the
// tables and the text runs, the same in both; f sees every other token.
func (d *doc) walkText(part string, p *parts, tb *table, f func(xml.Token) error) error {
	return d.z.walk(part, func(t xml.Token) error {
		if handled, err := tb.token(p, t); handled {
			return err
		}
		return f(t)
	})
}

// token follows the elements that shape a table (tbl, tr, tc), the end of
// a text run and its characters; handled is false for any other token.
func (t *table) token(p *parts, tok xml.Token) (handled bool, err error) {
	switch e := tok.(type) {
	case xml.CharData:
		if t.inText {
			if t.lead != nil && !t.led && len(bytes.TrimSpace(e)) > 0 {
				t.led = true
				if pre := t.lead(); pre != "" {
					if err = t.write(p, pre); err != nil {
						break
					}
				}
			}
			err = t.write(p, string(e))
		}
	case xml.StartElement:
		switch e.Name.Local {
		case "tbl":
			t.depth++
			if t.depth == 1 && t.lineAround {
				err = p.line()
			}
		case "tc":
			t.startCell()
		default:
			return false, nil
		}
	case xml.EndElement:
		switch e.Name.Local {
		case "t":
			t.inText = false
		case "tc":
			t.endCell()
		case "tr":
			err = t.endRow(p)
		case "tbl":
			if t.depth == 1 && t.lineAround {
				err = p.line()
			}
			t.depth = max(0, t.depth-1)
		default:
			return false, nil
		}
	default:
		return false, nil
	}
	return true, err
}

func (t *table) startCell() {
	if t.depth == 1 {
		t.cell.Reset()
		t.inCell = true
	} else if t.cell.Len() > 0 {
		t.cell.WriteString(" ")
	}
}

func (t *table) endCell() {
	if t.depth == 1 {
		t.cells = append(t.cells, strings.TrimSpace(t.cell.String()))
		t.inCell = false
	}
}

// endPara ends a paragraph: inside a table cell its text runs on in the
// cell; elsewhere it ends a line.
func (t *table) endPara(p *parts) error {
	if t.depth > 0 && t.inCell {
		return t.write(p, " ")
	}
	return p.line()
}

// endRow writes the row, if it says anything.
func (t *table) endRow(p *parts) error {
	if t.depth != 1 {
		return nil
	}
	cells := t.cells
	t.cells = t.cells[:0]
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	if len(cells) == 0 {
		return nil
	}
	return p.text(row(cells))
}

// row renders cells as a table line; a cell cannot break the line or
// the columns.
func row(cells []string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(cellEscaper.Replace(c))
		b.WriteString(" |")
	}
	b.WriteString("\n")
	return b.String()
}

var cellEscaper = strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// write sends text to the cell being read, or to the document.
func (t *table) write(p *parts, s string) error {
	if t.depth > 0 && t.inCell {
		if t.cell.Len() < maxCell {
			t.cell.WriteString(s)
		}
		return nil
	}
	return p.text(s)
}

// docx reads word/document.xml: paragraphs (headings marked with #,
// list items with their numbers or •), tabs and breaks, tables as rows,
// and the text of spreadsheets and documents embedded in it.
func (d *doc) docx(p *parts) error {
	lists, err := d.wordLists()
	if err != nil {
		return err
	}
	const part = "word/document.xml"
	emb := d.embeds(part)
	tb := table{lineAround: true}
	prefix := ""
	numID, ilvl := "", 0
	inNumPr, inChange, inTabs := false, 0, false
	return d.walkText(part, p, &tb, func(t xml.Token) (err error) {
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "t":
				tb.inText = e.Name.Space == "w" || e.Name.Space == "a" || e.Name.Space == ""
				if tb.inText && prefix != "" {
					err = tb.write(p, prefix)
					prefix = ""
				}
			case "tabs":
				inTabs = true // tab stops of the paragraph, not tabs in its text
			case "tab":
				if e.Name.Space == "w" && !inTabs {
					err = tb.write(p, "\t")
				}
			case "br", "cr":
				err = tb.write(p, "\n")
			case "pStyle":
				if v := attr(e, "val"); strings.HasPrefix(strings.ToLower(v), "heading") {
					if n := strings.TrimLeft(v[7:], " "); len(n) == 1 && n[0] >= '1' && n[0] <= '6' {
						prefix = strings.Repeat("#", int(n[0]-'0')) + " "
					}
				} else if strings.EqualFold(v, "Title") {
					prefix = "# "
				}
			case "pPrChange", "numberingChange":
				inChange++ // what the paragraph was before a tracked change
			case "numPr":
				inNumPr = inChange == 0
			case "numId":
				if inNumPr {
					numID = attr(e, "val")
				}
			case "ilvl":
				if inNumPr {
					ilvl, _ = strconv.Atoi(attr(e, "val"))
				}
			case "p":
				prefix, numID, ilvl = "", "", 0
			case "OLEObject":
				if tb.depth == 0 {
					err = emb.read(p, attrNS(e, "r", "id"))
				}
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "p":
				if e.Name.Space == "w" {
					err = tb.endPara(p)
				}
			case "pPrChange", "numberingChange":
				inChange = max(0, inChange-1)
			case "numPr":
				inNumPr = false
			case "tabs":
				inTabs = false
			case "pPr":
				// numId 0 takes a paragraph out of the list its style is in.
				if inChange == 0 && numID != "" && numID != "0" && prefix == "" {
					prefix = lists.label(numID, ilvl)
				}
			}
		}
		return err
	})
}
