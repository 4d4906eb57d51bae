package doctext

import (
	"bytes"
	"context"
	"strings"
	"testing"

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
