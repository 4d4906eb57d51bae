package doctext

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	maxColumns       = 256     // columns of a sheet shown
	maxSharedStrings = 1 << 20 // strings of an XLSX string table
	maxCell          = 1 << 16 // bytes of one cell or shared string kept
	maxCellXfs       = 1 << 16 // cell formats of a workbook (Excel allows 64,000)
	maxNumFmts       = 4096    // custom number formats
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
	styles, err := d.xlsxStyles()
	if err != nil {
		return err
	}
	type sheet struct{ name, part string }
	var sheets []sheet
	err = d.z.walk("xl/workbook.xml", func(t xml.Token) error {
		e, ok := t.(xml.StartElement)
		switch {
		case !ok:
		case e.Name.Local == "sheet":
			if part := rels[attrNS(e, "r", "id")]; part != "" && len(sheets) < 1024 {
				sheets = append(sheets, sheet{attr(e, "name"), part})
			}
		case e.Name.Local == "workbookPr":
			v := attr(e, "date1904")
			styles.date1904 = v == "1" || strings.EqualFold(v, "true")
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
		if err := d.xlsxSheet(p, s.part, shared, styles); err != nil {
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

// xlsxStyles are what a cell's style index (its s attribute) says about
// how its number is shown.
type xlsxStyles struct {
	xfs      []int          // cell format → number format id
	codes    map[int]string // custom number formats by id
	parsed   map[int]*numFmt
	date1904 bool
}

func (d *doc) xlsxStyles() (*xlsxStyles, error) {
	st := &xlsxStyles{codes: map[int]string{}, parsed: map[int]*numFmt{}}
	inXfs := false
	err := d.z.walk("xl/styles.xml", func(t xml.Token) error {
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "numFmt":
				id, err := strconv.Atoi(attr(e, "numFmtId"))
				if err == nil && len(st.codes) < maxNumFmts {
					st.codes[id] = attr(e, "formatCode")
				}
			case "cellXfs":
				inXfs = true
			case "xf":
				if inXfs && len(st.xfs) < maxCellXfs {
					id, err := strconv.Atoi(attr(e, "numFmtId"))
					if err != nil {
						id = 0
					}
					st.xfs = append(st.xfs, id)
				}
			}
		case xml.EndElement:
			if e.Name.Local == "cellXfs" {
				inXfs = false
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoEntry) {
		return nil, err
	}
	return st, nil
}

// format is the number format of the cell style s ("" for the default).
func (st *xlsxStyles) format(s string) *numFmt {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= len(st.xfs) {
		return generalFmt
	}
	id := st.xfs[i]
	if f := st.parsed[id]; f != nil {
		return f
	}
	code, ok := st.codes[id]
	if !ok {
		code = builtinFmt[id] // an unknown id is General ("")
	}
	f := parseNumFmt(code)
	st.parsed[id] = f
	return f
}

// cellText is what a cell shows: its value of type typ through its
// number format.
func (st *xlsxStyles) cellText(v, typ, style string, shared []string) string {
	switch typ {
	case "s":
		if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && i >= 0 && i < len(shared) {
			return st.format(style).formatText(shared[i])
		}
		return v
	case "b":
		return map[string]string{"0": "FALSE", "1": "TRUE", "false": "FALSE", "true": "TRUE"}[strings.TrimSpace(v)]
	case "str", "inlineStr", "e":
		return v
	case "d":
		// An ISO 8601 date (strict Open XML): through a date format it
		// is shown as one; otherwise as written.
		f := st.format(style)
		if t, ok := parseISODate(strings.TrimSpace(v)); ok && !f.general {
			return f.format(excelSerial(t, st.date1904), st.date1904)
		}
		return v
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return v
	}
	return st.format(style).format(n, st.date1904)
}

func parseISODate(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02", "15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// excelSerial is the serial day of t (see serialDate).
func excelSerial(t time.Time, date1904 bool) float64 {
	if t.Year() == 0 {
		t = t.AddDate(1899, 11, 30) // a time alone: day 0
	}
	base := time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	if date1904 {
		base = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	day := float64(t.Sub(base)) / float64(24*time.Hour)
	if !date1904 && day < 61 && day >= 1 {
		day-- // before the day that never was
	}
	return day
}

func (d *doc) xlsxSheet(p *parts, part string, shared []string, styles *xlsxStyles) error {
	var cells []string
	col := 0
	var typ, style string
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
				typ, style = attr(e, "t"), attr(e, "s")
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
				if v != "" {
					v = styles.cellText(v, typ, style, shared)
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
