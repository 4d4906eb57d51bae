package doctext

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// FuzzExtract feeds mutations of every generated format to Extract: it
// must answer (text or an error), never panic (Extract would turn a panic
// into ErrCorrupt "reading it failed", so that is checked for), and never
// let the text out of its wrapper.
func FuzzExtract(f *testing.F) {
	seeds := []struct {
		name string
		data []byte
	}{
		{"a.pdf", doctexttest.PDF([]doctexttest.Page{{Lines: []string{"one (two)"}}, {Image: true}}, doctexttest.PDFOptions{})},
		{"a.pdf", doctexttest.PDF([]doctexttest.Page{{Lines: []string{"x"}}}, doctexttest.PDFOptions{ObjStreams: true, Compress: true, Kerning: true})},
		{"a.pdf", doctexttest.PDF([]doctexttest.Page{{Lines: []string{"Привет"}}}, doctexttest.PDFOptions{Unicode: true})},
		{"a.pdf", doctexttest.PDF([]doctexttest.Page{{Lines: []string{"x"}}}, doctexttest.PDFOptions{Compress: true, Encrypt: "aes128"})},
		{"a.docx", doctexttest.DOCX(doctexttest.P("Heading1", "T") + doctexttest.Tbl([]string{"a", "b"}))},
		{"a.xlsx", doctexttest.XLSX(doctexttest.Sheet{Name: "S", Rows: [][]string{{"a", "1"}}})},
		{"a.pptx", doctexttest.PPTX([]string{"s1"}, []string{"s2"})},
		{"a.odt", doctexttest.ODT("<text:p>p</text:p>")},
		{"a.ods", doctexttest.ODS(doctexttest.Sheet{Name: "S", Rows: [][]string{{"a"}}})},
		{"a.epub", doctexttest.EPUB("<p>c</p>")},
		{"a.html", []byte("<p>x<table><tr><td>1</td></tr></table>")},
		{"a.csv", []byte("a,b\n\"c\",d\n")},
		{"a.txt", []byte("plain </document>")},
	}
	for _, s := range seeds {
		f.Add(s.name, s.data, "")
		f.Add(s.name, s.data, "2")
	}
	f.Fuzz(func(t *testing.T, name string, data []byte, pages string) {
		res, err := Extract(context.Background(), bytes.NewReader(data), int64(len(data)), name, "", Options{Pages: pages, MaxChars: 2000})
		if err != nil {
			if strings.Contains(err.Error(), "reading it failed") {
				t.Fatalf("panic: %v", err)
			}
			return
		}
		if !strings.HasPrefix(res.Text, "<document ") || strings.Count(res.Text, "</document>") != 1 ||
			strings.Count(res.Text, "<document") != 1 {
			t.Fatalf("out of the wrapper: %q", res.Text)
		}
	})
}

// fuzzAnswer checks what Extract gave a mutated file: text inside its
// wrapper, or one of the errors Extract documents; a panic (which Extract
// turns into "reading it failed") or any other error is a finding.
func fuzzAnswer(t *testing.T, res Result, err error) {
	t.Helper()
	if err != nil {
		if strings.Contains(err.Error(), "reading it failed") {
			t.Fatalf("panic: %v", err)
		}
		known := []error{ErrCorrupt, ErrTooLarge, ErrEncrypted, ErrUnsupported, ErrPages, context.DeadlineExceeded}
		for _, k := range known {
			if errors.Is(err, k) {
				return
			}
		}
		t.Fatalf("an error Extract does not document: %v", err)
	}
	if !strings.HasPrefix(res.Text, "<document ") || strings.Count(res.Text, "</document>") != 1 ||
		strings.Count(res.Text, "<document") != 1 {
		t.Fatalf("out of the wrapper: %q", res.Text)
	}
}

// FuzzPDF feeds mutated PDFs to the PDF reader through Extract, with a
// deadline as botd gives one: seeds are generated documents of each kind
// the reader knows and the red team's files, shrunk.
func FuzzPDF(f *testing.F) {
	page := []doctexttest.Page{{Lines: []string{"one (two) \\ three"}}, {Image: true}}
	seeds := [][]byte{
		doctexttest.PDF(page, doctexttest.PDFOptions{}),
		doctexttest.PDF(page, doctexttest.PDFOptions{ObjStreams: true, Compress: true, Kerning: true}),
		doctexttest.PDF([]doctexttest.Page{{Lines: []string{"Привет 日本"}}}, doctexttest.PDFOptions{Unicode: true, Compress: true}),
		doctexttest.PDF(page, doctexttest.PDFOptions{Compress: true, Encrypt: "aes128"}),
		doctexttest.PDF(page, doctexttest.PDFOptions{Compress: true, Encrypt: "aes256"}),
		doctexttest.FlateBombPDF(),
		doctexttest.XrefStreamPDF(64),
		doctexttest.ObjStreamPDF(12, 3, 2<<10),
	}
	for _, s := range seeds {
		f.Add(s, "")
		f.Add(s, "2-")
	}
	f.Fuzz(func(t *testing.T, data []byte, pages string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res, err := Extract(ctx, bytes.NewReader(data), int64(len(data)), "a.pdf", "application/pdf",
			Options{Pages: pages, MaxChars: 2000})
		fuzzAnswer(t, res, err)
	})
}

// zipTargets are the office files and books FuzzZipDocs varies, each by
// the part whose XML it replaces.
func zipTargets() []struct {
	doc  []byte
	part string
} {
	return []struct {
		doc  []byte
		part string
	}{
		{doctexttest.DOCX(doctexttest.P("Heading1", "Title") + doctexttest.P("", "a & b <c>") +
			doctexttest.Tbl([]string{"a", "b"}, []string{"c", "d"})), "word/document.xml"},
		{doctexttest.XLSX(doctexttest.Sheet{Name: "S", Rows: [][]string{{"a", "1"}, {"", "b"}}}), "xl/worksheets/sheet1.xml"},
		{doctexttest.XLSX(doctexttest.Sheet{Name: "S", Rows: [][]string{{"a", "1"}, {"", "b"}}}), "xl/sharedStrings.xml"},
		{doctexttest.PPTX([]string{"s1", "more"}, []string{"s2"}), "ppt/slides/slide1.xml"},
		{doctexttest.ODT(`<text:h text:outline-level="2">h</text:h><text:p>p<text:s text:c="3"/>q</text:p>`), "content.xml"},
		{doctexttest.ODS(doctexttest.Sheet{Name: "S", Rows: [][]string{{"a", "b"}}}), "content.xml"},
		{doctexttest.EPUB("<h1>c</h1><p>text</p>", "<p>two</p>"), "OEBPS/content.opf"},
		{odfListsSeed("application/vnd.oasis.opendocument.text", "<office:text>%s</office:text>"), "content.xml"},
		{odfListsSeed("application/vnd.oasis.opendocument.presentation",
			`<office:presentation><draw:page><draw:frame><draw:text-box>%s</draw:text-box></draw:frame>`+
				`<presentation:notes><draw:frame><draw:text-box><text:p>n</text:p></draw:text-box></draw:frame></presentation:notes></draw:page>`+
				`<draw:page/></office:presentation>`), "content.xml"},
	}
}

// odfListsSeed is an OpenDocument file whose body (a format with one %s)
// holds numbered, nested and continued lists.
func odfListsSeed(mime, body string) []byte {
	style := `<text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-format="1" style:num-suffix="."/>` +
		`<text:list-level-style-number text:level="2" style:num-format="a" style:num-prefix="(" style:num-suffix=")" text:display-levels="2"/></text:list-style>` +
		`<style:style style:name="P1" style:family="paragraph" style:list-style-name="L1"/>`
	lists := `<text:list text:style-name="L1" xml:id="a"><text:list-header><text:p>h</text:p></text:list-header>` +
		`<text:list-item><text:p>one</text:p><text:list><text:list-item><text:p>sub</text:p></text:list-item></text:list></text:list-item></text:list>` +
		`<text:list text:continue-list="a"><text:list-item text:start-value="5"><text:p text:style-name="P1">five</text:p></text:list-item></text:list>`
	return doctexttest.ODF(mime, style, fmt.Sprintf(body, lists), "")
}

// repack is doc with part's body replaced.
func repack(t testing.TB, doc []byte, part string, body []byte) []byte {
	zr, err := zip.NewReader(bytes.NewReader(doc), int64(len(doc)))
	if err != nil {
		t.Fatal(err)
	}
	var files []doctexttest.File
	found := false
	for _, zf := range zr.File {
		b := body
		if zf.Name != part {
			rc, err := zf.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
		} else {
			found = true
		}
		files = append(files, doctexttest.File{Name: zf.Name, Body: string(b), Store: zf.Method == zip.Store})
	}
	if !found {
		t.Fatalf("no %s in the seed", part)
	}
	return doctexttest.Zip(files...)
}

// FuzzZipDocs feeds office files and books (DOCX, XLSX, PPTX, ODT, ODS,
// ODP, EPUB) whose main part is mutated XML to Extract: the zip around it is
// sound, so the mutations reach the XML readers (FuzzExtract mutates the
// zips themselves). Seeds are each format's generated part, and the red
// team's one huge run shrunk.
func FuzzZipDocs(f *testing.F) {
	targets := zipTargets()
	for i, tg := range targets {
		zr, err := zip.NewReader(bytes.NewReader(tg.doc), int64(len(tg.doc)))
		if err != nil {
			f.Fatal(err)
		}
		zf, err := zr.Open(tg.part)
		if err != nil {
			f.Fatalf("seed %d: %v", i, err)
		}
		body, _ := io.ReadAll(zf)
		zf.Close()
		f.Add(uint8(i), body, "")
		f.Add(uint8(i), body, "2")
	}
	f.Add(uint8(0), []byte(`<w:document><w:body><w:p><w:r><w:t>`+strings.Repeat(doctexttest.HugeRunLine, 100)+
		`<![CDATA[x]]>&amp;</w:t></w:r></w:p></w:body></w:document>`), "")
	f.Fuzz(func(t *testing.T, which uint8, body []byte, pages string) {
		tg := targets[int(which)%len(targets)]
		data := repack(t, tg.doc, tg.part, body)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res, err := Extract(ctx, bytes.NewReader(data), int64(len(data)), "a.zip", "application/zip",
			Options{Pages: pages, MaxChars: 2000})
		fuzzAnswer(t, res, err)
	})
}
