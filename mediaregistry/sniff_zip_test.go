package mediaregistry

import (
	"archive/zip"
	"bytes"
	"testing"
)

// zipOf writes a zip whose entries are the pairs name, content; a first
// "mimetype" entry is stored uncompressed, as OpenDocument and EPUB do.
func zipOf(t *testing.T, entries ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := 0; i < len(entries); i += 2 {
		method := zip.Deflate
		if entries[i] == "mimetype" {
			method = zip.Store
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: entries[i], Method: method})
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(entries[i+1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestZipBasedDocumentsKeepTheirType(t *testing.T) {
	const (
		docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
		odt  = "application/vnd.oasis.opendocument.text"
		epub = "application/epub+zip"
	)
	ooxml := zipOf(t, "[Content_Types].xml", `<Types/>`, "word/document.xml", `<w:document/>`)
	odf := zipOf(t, "mimetype", odt, "content.xml", `<office:document-content/>`)
	book := zipOf(t, "mimetype", epub, "META-INF/container.xml", `<container/>`)
	plain := zipOf(t, "notes.txt", "hello")
	cases := []struct {
		name           string
		data           []byte
		declared, file string
		want, ext      string
	}{
		{"docx declared", ooxml, docx, "report.docx", docx, ".docx"},
		{"docx by name only", ooxml, "", "report.docx", docx, ".docx"},
		{"docx sent as octet-stream", ooxml, "application/octet-stream", "report.docx", docx, ".docx"},
		{"xlsx declared as zip", ooxml, "application/zip", "sheet.xlsx", xlsx, ".xlsx"},
		{"odt from its mimetype entry", odf, "", "", odt, ".odt"},
		{"epub from its mimetype entry", book, "application/octet-stream", "book", epub, ".epub"},
		{"plain zip stays a zip", plain, "application/zip", "stuff.zip", "application/zip", ".zip"},
		{"a zip claiming to be an image is a zip", plain, "image/png", "cat.png", "application/zip", ".zip"},
		{"an image claiming to be a docx is an image", pngHead, docx, "x.docx", "image/png", ".png"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideMIME(Declared(tc.declared, tc.file), Sniff(tc.data[:min(len(tc.data), SniffLen)]))
			if got != tc.want || Ext(got) != tc.ext {
				t.Errorf("type = %q (%s), want %q (%s)", got, Ext(got), tc.want, tc.ext)
			}
		})
	}
}

var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00")
