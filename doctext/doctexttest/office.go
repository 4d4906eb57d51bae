package doctexttest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"html"
	"strconv"
	"strings"
)

// File is one entry of a zip.
type File struct {
	Name  string
	Body  string
	Store bool // no compression (ODF wants its mimetype stored)
}

// Zip writes the entries in order.
func Zip(files ...File) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range files {
		m := zip.Deflate
		if f.Store {
			m = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: m})
		if err != nil {
			panic(err)
		}
		w.Write([]byte(f.Body))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// X escapes text for XML.
func X(s string) string { return html.EscapeString(s) }

const xmlHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

// DOCX is a Word document whose w:body holds body (w:p, w:tbl … elements).
func DOCX(body string) []byte {
	return Zip(
		File{Name: "[Content_Types].xml", Body: xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		File{Name: "_rels/.rels", Body: xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		File{Name: "word/document.xml", Body: xmlHead + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
			body + `</w:body></w:document>`},
	)
}

// P is a Word paragraph of one run, with an optional style (Heading1 …).
func P(style, text string) string {
	ppr := ""
	if style != "" {
		ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
	}
	return `<w:p>` + ppr + `<w:r><w:t xml:space="preserve">` + X(text) + `</w:t></w:r></w:p>`
}

// Tbl is a Word table.
func Tbl(rows ...[]string) string {
	var b strings.Builder
	b.WriteString("<w:tbl>")
	for _, r := range rows {
		b.WriteString("<w:tr>")
		for _, c := range r {
			b.WriteString("<w:tc>" + P("", c) + "</w:tc>")
		}
		b.WriteString("</w:tr>")
	}
	b.WriteString("</w:tbl>")
	return b.String()
}

// Sheet is one sheet of a workbook: cells that parse as numbers are
// written as numbers, the rest as shared strings.
type Sheet struct {
	Name string
	Rows [][]string
}

// XLSX is an Excel workbook.
func XLSX(sheets ...Sheet) []byte {
	var shared []string
	index := map[string]int{}
	files := []File{
		{Name: "[Content_Types].xml", Body: xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="xml" ContentType="application/xml"/></Types>`},
	}
	var wb, rels strings.Builder
	wb.WriteString(xmlHead + `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ` +
		`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>`)
	rels.WriteString(xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	for i, s := range sheets {
		fmt.Fprintf(&wb, `<sheet name="%s" sheetId="%d" r:id="rId%d"/>`, X(s.Name), i+1, i+1)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>`, i+1, i+1)
		var sh strings.Builder
		sh.WriteString(xmlHead + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
		for r, row := range s.Rows {
			fmt.Fprintf(&sh, `<row r="%d">`, r+1)
			for c, v := range row {
				if v == "" {
					continue
				}
				ref := colName(c) + strconv.Itoa(r+1)
				if _, err := strconv.ParseFloat(v, 64); err == nil {
					fmt.Fprintf(&sh, `<c r="%s"><v>%s</v></c>`, ref, v)
					continue
				}
				k, ok := index[v]
				if !ok {
					k = len(shared)
					index[v] = k
					shared = append(shared, v)
				}
				fmt.Fprintf(&sh, `<c r="%s" t="s"><v>%d</v></c>`, ref, k)
			}
			sh.WriteString(`</row>`)
		}
		sh.WriteString(`</sheetData></worksheet>`)
		files = append(files, File{Name: fmt.Sprintf("xl/worksheets/sheet%d.xml", i+1), Body: sh.String()})
	}
	wb.WriteString(`</sheets></workbook>`)
	rels.WriteString(`</Relationships>`)
	var ss strings.Builder
	fmt.Fprintf(&ss, xmlHead+`<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="%d">`, len(shared))
	for _, s := range shared {
		ss.WriteString(`<si><t>` + X(s) + `</t></si>`)
	}
	ss.WriteString(`</sst>`)
	files = append(files, File{Name: "xl/workbook.xml", Body: wb.String()}, File{Name: "xl/_rels/workbook.xml.rels", Body: rels.String()},
		File{Name: "xl/sharedStrings.xml", Body: ss.String()})
	return Zip(files...)
}

func colName(c int) string {
	s := ""
	for c++; c > 0; c = (c - 1) / 26 {
		s = string(rune('A'+(c-1)%26)) + s
	}
	return s
}

// PPTX is a presentation with one slide per entry, each a list of
// paragraphs. The slides are listed in presentation.xml in reverse file
// order, so that order has to come from there.
func PPTX(slides ...[]string) []byte {
	files := []File{{Name: "[Content_Types].xml", Body: xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`}}
	var pres, rels strings.Builder
	pres.WriteString(xmlHead + `<p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" ` +
		`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst>`)
	rels.WriteString(xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	n := len(slides)
	for i, paras := range slides {
		file := n - i // slide i+1 is stored as slide{n-i}.xml
		fmt.Fprintf(&pres, `<p:sldId id="%d" r:id="rId%d"/>`, 256+i, i+1)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide%d.xml"/>`, i+1, file)
		var s strings.Builder
		s.WriteString(xmlHead + `<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" ` +
			`xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody>`)
		for _, p := range paras {
			s.WriteString(`<a:p><a:r><a:t>` + X(p) + `</a:t></a:r></a:p>`)
		}
		s.WriteString(`</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`)
		files = append(files, File{Name: fmt.Sprintf("ppt/slides/slide%d.xml", file), Body: s.String()})
	}
	pres.WriteString(`</p:sldIdLst></p:presentation>`)
	rels.WriteString(`</Relationships>`)
	files = append(files, File{Name: "ppt/presentation.xml", Body: pres.String()}, File{Name: "ppt/_rels/presentation.xml.rels", Body: rels.String()})
	return Zip(files...)
}

const odfNS = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ` +
	`xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" ` +
	`xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" ` +
	`xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"`

func odf(mime, body string) []byte { return ODF(mime, "", body, "") }

// ODF is an OpenDocument package of the given type: content.xml holds
// the automatic styles autoStyles and the office:body contents body;
// styles.xml, when styles is not empty, holds the office:styles styles.
func ODF(mime, autoStyles, body, styles string) []byte {
	files := []File{
		{Name: "mimetype", Body: mime, Store: true},
		{Name: "META-INF/manifest.xml", Body: xmlHead + `<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">` +
			`<manifest:file-entry manifest:full-path="/" manifest:media-type="` + mime + `"/></manifest:manifest>`},
		{Name: "content.xml", Body: xmlHead + `<office:document-content ` + odfNS + `><office:automatic-styles>` + autoStyles +
			`</office:automatic-styles><office:body>` + body + `</office:body></office:document-content>`},
	}
	if styles != "" {
		files = append(files, File{Name: "styles.xml", Body: xmlHead + `<office:document-styles ` + odfNS + `><office:styles>` + styles +
			`</office:styles></office:document-styles>`})
	}
	return Zip(files...)
}

// ODT is an OpenDocument text whose office:text holds body.
func ODT(body string) []byte {
	return odf("application/vnd.oasis.opendocument.text", "<office:text>"+body+"</office:text>")
}

// ODS is an OpenDocument spreadsheet. Like the real thing, each row ends
// in a repeated empty cell and each sheet in a million repeated empty rows.
func ODS(sheets ...Sheet) []byte {
	var b strings.Builder
	b.WriteString("<office:spreadsheet>")
	for _, s := range sheets {
		b.WriteString(`<table:table table:name="` + X(s.Name) + `">`)
		for _, r := range s.Rows {
			b.WriteString("<table:table-row>")
			for _, c := range r {
				b.WriteString(`<table:table-cell office:value-type="string"><text:p>` + X(c) + `</text:p></table:table-cell>`)
			}
			b.WriteString(`<table:table-cell table:number-columns-repeated="1020"/></table:table-row>`)
		}
		b.WriteString(`<table:table-row table:number-rows-repeated="1048000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>`)
		b.WriteString("</table:table>")
	}
	b.WriteString("</office:spreadsheet>")
	return odf("application/vnd.oasis.opendocument.spreadsheet", b.String())
}

// EPUB is a book of XHTML chapters (their body contents), in the spine
// in the given order but stored in reverse.
func EPUB(chapters ...string) []byte {
	files := []File{
		{Name: "mimetype", Body: "application/epub+zip", Store: true},
		{Name: "META-INF/container.xml", Body: xmlHead + `<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">` +
			`<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`},
	}
	var manifest, spine strings.Builder
	for i := len(chapters) - 1; i >= 0; i-- {
		name := fmt.Sprintf("text/ch%%20%d.xhtml", i+1) // an escaped space, as real books have
		fmt.Fprintf(&manifest, `<item id="c%d" href="%s" media-type="application/xhtml+xml"/>`, i+1, name)
		files = append(files, File{Name: fmt.Sprintf("OEBPS/text/ch %d.xhtml", i+1), Body: xmlHead +
			`<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter</title><style>p{color:red}</style></head><body>` +
			chapters[i] + `</body></html>`})
	}
	for i := range chapters {
		fmt.Fprintf(&spine, `<itemref idref="c%d"/>`, i+1)
	}
	files = append(files, File{Name: "OEBPS/content.opf", Body: xmlHead + `<package xmlns="http://www.idpf.org/2007/opf" version="3.0">` +
		`<metadata/><manifest>` + manifest.String() + `</manifest><spine>` + spine.String() + `</spine></package>`})
	return Zip(files...)
}
