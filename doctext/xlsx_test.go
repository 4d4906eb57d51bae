package doctext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// xlsxWith is a one-sheet workbook: numFmts are custom formats (id →
// code), xfs the number format id of each cell style, rows the sheet's
// <row> elements as written, shared the string table.
func xlsxWith(date1904 bool, numFmts map[int]string, xfs []int, rows string, shared ...string) []byte {
	var st strings.Builder
	st.WriteString(`<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`)
	fmt.Fprintf(&st, `<numFmts count="%d">`, len(numFmts))
	for id, code := range numFmts {
		fmt.Fprintf(&st, `<numFmt numFmtId="%d" formatCode="%s"/>`, id, doctexttest.X(code))
	}
	// cellStyleXfs come first in real files and must not be taken for cellXfs.
	st.WriteString(`</numFmts><cellStyleXfs count="1"><xf numFmtId="14"/></cellStyleXfs><cellXfs>`)
	for _, id := range xfs {
		fmt.Fprintf(&st, `<xf numFmtId="%d" applyNumberFormat="1"/>`, id)
	}
	st.WriteString(`</cellXfs></styleSheet>`)
	pr := ""
	if date1904 {
		pr = `<workbookPr date1904="1"/>`
	}
	var ss strings.Builder
	ss.WriteString(`<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`)
	for _, s := range shared {
		ss.WriteString(`<si><t>` + doctexttest.X(s) + `</t></si>`)
	}
	ss.WriteString(`</sst>`)
	return doctexttest.Zip(
		doctexttest.File{Name: "xl/workbook.xml", Body: `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ` +
			`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` + pr +
			`<sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		doctexttest.File{Name: "xl/_rels/workbook.xml.rels", Body: `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		doctexttest.File{Name: "xl/styles.xml", Body: st.String()},
		doctexttest.File{Name: "xl/sharedStrings.xml", Body: ss.String()},
		doctexttest.File{Name: "xl/worksheets/sheet1.xml", Body: `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` +
			rows + `</sheetData></worksheet>`},
	)
}

func TestXLSXNumberFormats(t *testing.T) {
	// Style indexes: 0 General, 1 date (14), 2 custom date, 3 time (21),
	// 4 date-time (22), 5 percent (10), 6 euro, 7 thousands (4),
	// 8 custom "[h]:mm", 9 dollar (7), 10 fraction (12), 11 text (49).
	numFmts := map[int]string{164: "dd/mm/yyyy", 165: `#,##0.00\ [$€-407]`, 166: "[h]:mm"}
	xfs := []int{0, 14, 164, 21, 22, 10, 165, 4, 166, 7, 12, 49}
	rows := `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" s="1"><v>17175</v></c><c r="C1" s="2"><v>17175</v></c></row>` +
		`<row r="2"><c r="A2" s="3"><v>0.5208333333333334</v></c><c r="B2" s="4"><v>45292.75</v></c><c r="C2" s="5"><v>0.1234</v></c></row>` +
		`<row r="3"><c r="A3" s="6"><v>1234.5</v></c><c r="B3" s="7"><v>1234567.891</v></c><c r="C3" s="8"><v>1.75</v></c></row>` +
		`<row r="4"><c r="A4"><v>1.0999999999999996</v></c><c r="B4" s="0"><v>0.30000000000000004</v></c><c r="C4" t="b"><v>1</v></c><c r="D4" t="b"><v>0</v></c></row>` +
		`<row r="5"><c r="A5" s="9"><v>-12.5</v></c><c r="B5" s="10"><v>2.25</v></c><c r="C5" s="11"><v>42</v></c><c r="D5" t="e"><v>#DIV/0!</v></c></row>` +
		`<row r="6"><c r="A6" t="str"><v>formula text</v></c><c r="B6" t="inlineStr"><is><t>inline</t></is></c><c r="C6" s="1" t="d"><v>2024-02-29T00:00:00</v></c><c r="D6" s="99"><v>7</v></c></row>`
	res, err := extract(t, xlsxWith(false, numFmts, xfs, rows, "born"), "p.xlsx", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "## Sheet: S\n" +
		"| born | 1947-01-08 | 08/01/1947 |\n" +
		"| 12:30:00 | 2024-01-01 18:00 | 12.34% |\n" +
		"| 1,234.50 € | 1,234,567.89 | 42:00 |\n" +
		"| 1.1 | 0.3 | TRUE | FALSE |\n" +
		"| ($12.50) | 2 1/4 | 42 | #DIV/0! |\n" +
		"| formula text | inline | 2024-02-29 | 7 |"
	if got := body(t, res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// The 1904 date system (Excel for Mac before 2011): the same serial is
	// four years and a day later.
	res, err = extract(t, xlsxWith(true, nil, []int{0, 14}, `<row r="1"><c r="A1" s="1"><v>17175</v></c><c r="B1" s="1"><v>0</v></c></row>`), "mac.xlsx", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, res); got != "## Sheet: S\n| 1951-01-09 | 1904-01-01 |" {
		t.Errorf("1904 system: %q", got)
	}
}

func TestODSValueTypes(t *testing.T) {
	cell := func(attrs, text string) string {
		if text != "" {
			text = "<text:p>" + doctexttest.X(text) + "</text:p>"
		}
		return `<table:table-cell ` + attrs + `>` + text + `</table:table-cell>`
	}
	ns := `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ` +
		`xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:calcext="urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0"`
	rows := [][]string{
		{ // LibreOffice: the text is the value as shown
			cell(`office:value-type="date" office:date-value="1947-01-08" calcext:value-type="date"`, "08/01/47"),
			cell(`office:value-type="percentage" office:value="0.125"`, "12.50%"),
			cell(`office:value-type="currency" office:currency="EUR" office:value="3.5"`, "3,50 €"),
			cell(`office:value-type="boolean" office:boolean-value="true"`, "TRUE"),
		},
		{ // writers that leave the text out, or write 1/0 for a boolean
			cell(`office:value-type="date" office:date-value="1947-01-08"`, ""),
			cell(`office:value-type="date" office:date-value="2024-03-01T14:30:00"`, ""),
			cell(`office:value-type="time" office:time-value="PT12H30M05S"`, ""),
			cell(`office:value-type="percentage" office:value="0.125"`, ""),
			cell(`office:value-type="currency" office:currency="USD" office:value="1234.5"`, ""),
			cell(`office:value-type="boolean" office:boolean-value="false"`, "0"),
			cell(`office:value-type="boolean" office:boolean-value="true"`, "1"),
		},
		{ // float noise written as the text; a float without text
			cell(`office:value-type="float" office:value="1.0999999999999996"`, "1.0999999999999996"),
			cell(`office:value-type="float" office:value="0.30000000000000004"`, ""),
			cell(`office:value-type="float" office:value="2.5"`, "2.50"),
			cell(`office:value-type="string"`, "plain"),
		},
	}
	var b strings.Builder
	b.WriteString(`<office:spreadsheet><table:table table:name="Types">`)
	for _, r := range rows {
		b.WriteString("<table:table-row>" + strings.Join(r, "") + "</table:table-row>")
	}
	b.WriteString(`</table:table></office:spreadsheet>`)
	mime := "application/vnd.oasis.opendocument.spreadsheet"
	data := doctexttest.Zip(doctexttest.File{Name: "mimetype", Body: mime, Store: true},
		doctexttest.File{Name: "content.xml", Body: `<office:document-content ` + ns + `><office:body>` + b.String() + `</office:body></office:document-content>`})
	res, err := extract(t, data, "types.ods", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "## Sheet: Types\n" +
		"| 08/01/47 | 12.50% | 3,50 € | TRUE |\n" +
		"| 1947-01-08 | 2024-03-01 14:30:00 | 12:30:05 | 12.5% | 1234.5 USD | FALSE | TRUE |\n" +
		"| 1.1 | 0.3 | 2.50 | plain |"
	if got := body(t, res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
