package doctext

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

const (
	maxColumns       = 256     // columns of a sheet shown
	maxSharedStrings = 1 << 20 // strings of an XLSX string table
	maxCell          = 1 << 16 // bytes of one cell or shared string kept
)

// xlsx reads each sheet, in workbook order, as a table.
func (d *doc) xlsx(p *parts) error {
	shared, err := d.sharedStrings()
	if err != nil {
		return err
	}
	rels, err := d.z.rels("xl/workbook.xml")
	if err != nil {
		return err
	}
	type sheet struct{ name, part string }
	var sheets []sheet
	err = d.z.walk("xl/workbook.xml", func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "sheet" {
			if part := rels[attrNS(e, "r", "id")]; part != "" && len(sheets) < 1024 {
				sheets = append(sheets, sheet{attr(e, "name"), part})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range sheets {
		if err := p.text("## Sheet: " + cellEscaper.Replace(s.name) + "\n"); err != nil {
			return err
		}
		if err := d.xlsxSheet(p, s.part, shared); err != nil {
			if errors.Is(err, errNoEntry) {
				continue // a chart sheet, or a missing part: nothing to read
			}
			return err
		}
		if err := p.para(); err != nil {
			return err
		}
	}
	return nil
}

func (d *doc) sharedStrings() ([]string, error) {
	var out []string
	var cur strings.Builder
	inT, inPhonetic := false, false
	err := d.z.walk("xl/sharedStrings.xml", func(t xml.Token) error {
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "si":
				cur.Reset()
			case "t":
				inT = true
			case "rPh":
				inPhonetic = true // a reading aid for Japanese, not the text
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "si":
				if len(out) >= maxSharedStrings {
					return fmt.Errorf("%w: more than %d strings in the workbook", ErrTooLarge, maxSharedStrings)
				}
				out = append(out, cur.String())
			case "t":
				inT = false
			case "rPh":
				inPhonetic = false
			}
		case xml.CharData:
			if inT && !inPhonetic && cur.Len() < maxCell {
				cur.Write(e)
			}
		}
		return nil
	})
	if errors.Is(err, errNoEntry) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// colIndex turns the letters of a cell reference ("BC12") into a column
// number from 0, or -1.
func colIndex(ref string) int {
	n := 0
	i := 0
	for ; i < len(ref) && ref[i] >= 'A' && ref[i] <= 'Z'; i++ {
		n = n*26 + int(ref[i]-'A'+1)
		if n > 1<<20 {
			return -1
		}
	}
	if i == 0 {
		return -1
	}
	return n - 1
}

func (d *doc) xlsxSheet(p *parts, part string, shared []string) error {
	var cells []string
	col := 0
	var typ string
	var val strings.Builder
	inV, inIs := false, false
	return d.z.walk(part, func(t xml.Token) error {
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "row":
				cells, col = cells[:0], 0
			case "c":
				if i := colIndex(attr(e, "r")); i >= 0 {
					col = i
				}
				typ = attr(e, "t")
				val.Reset()
			case "v":
				inV = true
			case "is":
				inIs = true
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "v":
				inV = false
			case "is":
				inIs = false
			case "c":
				v := val.String()
				switch typ {
				case "s":
					if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && i >= 0 && i < len(shared) {
						v = shared[i]
					}
				case "b":
					v = map[string]string{"0": "FALSE", "1": "TRUE"}[strings.TrimSpace(v)]
				}
				if col < maxColumns && strings.TrimSpace(v) != "" {
					for len(cells) <= col {
						cells = append(cells, "")
					}
					cells[col] = v
				}
				col++
			case "row":
				if len(cells) > 0 {
					if err := p.text(row(cells)); err != nil {
						return err
					}
				}
			}
		case xml.CharData:
			if (inV || inIs) && val.Len() < maxCell {
				val.Write(e)
			}
		}
		return nil
	})
}
