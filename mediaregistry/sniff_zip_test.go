package mediaregistry

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// zipOf writes a zip whose entries are the pairs name, content; a first
// "mimetype" entry is stored uncompressed, as OpenDocument and EPUB do.
func zipOf(t testing.TB, entries ...string) []byte {
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

// countingReader counts the bytes read through it, so a test can hold a
// zip's sniffing to what its bounds promise.
type countingReader struct {
	r    io.ReaderAt
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// manyEntries is a zip of n empty entries named by name(i).
func manyEntries(t testing.TB, n int, name func(i int) string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := range n {
		if _, err := w.CreateHeader(&zip.FileHeader{Name: name(i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// lyingMimetype is a zip whose "mimetype" entry claims 20 bytes and
// inflates to 64 MiB.
func lyingMimetype(t *testing.T) []byte {
	t.Helper()
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 64 {
		fw.Write(zeros)
	}
	fw.Close()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	raw, err := w.CreateRaw(&zip.FileHeader{Name: "mimetype", Method: zip.Deflate,
		CompressedSize64: uint64(packed.Len()), UncompressedSize64: 20})
	if err != nil {
		t.Fatal(err)
	}
	raw.Write(packed.Bytes())
	f, _ := w.Create("[Content_Types].xml")
	f.Write([]byte("<Types/>"))
	w.Close()
	return b.Bytes()
}

// An Office file is known by its entries, whatever it is called: the
// directory at the end of the zip names its main part.
func TestSniffAtReadsTheZipDirectory(t *testing.T) {
	const (
		docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
		pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
		odt  = "application/vnd.oasis.opendocument.text"
		ods  = "application/vnd.oasis.opendocument.spreadsheet"
		epub = "application/epub+zip"
		zipT = "application/zip"
	)
	// OpenDocument written by a tool that compresses its mimetype entry
	// and puts it last: the head cannot tell, the directory can.
	var odsLate bytes.Buffer
	w := zip.NewWriter(&odsLate)
	f, _ := w.Create("content.xml")
	f.Write([]byte("<office:document-content/>"))
	f, _ = w.Create("mimetype")
	f.Write([]byte(ods))
	w.Close()

	filler := func(i int) string { return fmt.Sprintf("customXml/item%05d.xml", i) }
	cases := []struct {
		name           string
		data           []byte
		declared, file string
		want           string
	}{
		{"docx posted as x.bin", zipOf(t, "[Content_Types].xml", "<Types/>", "word/document.xml", "<w:document/>"), "application/octet-stream", "x.bin", docx},
		{"docx with no name and no type", zipOf(t, "[Content_Types].xml", "<Types/>", "_rels/.rels", "<r/>", "word/document.xml", "<w:document/>"), "", "", docx},
		{"docx declared as a zip", zipOf(t, "[Content_Types].xml", "<Types/>", "word/document.xml", "<w:document/>"), "application/zip", "report.zip", docx},
		{"xlsx with no extension", zipOf(t, "[Content_Types].xml", "<Types/>", "xl/workbook.xml", "<workbook/>"), "", "sheet", xlsx},
		{"pptx posted as x.bin", zipOf(t, "[Content_Types].xml", "<Types/>", "ppt/presentation.xml", "<p/>"), "application/octet-stream", "x.bin", pptx},
		{"odt posted as x.bin", zipOf(t, "mimetype", odt, "content.xml", "<c/>"), "application/octet-stream", "x.bin", odt},
		{"ods with a deflated, late mimetype entry", odsLate.Bytes(), "", "", ods},
		{"epub with no name", zipOf(t, "mimetype", epub, "META-INF/container.xml", "<container/>"), "", "", epub},
		{"plain zip stays a zip", zipOf(t, "notes.txt", "hello"), "", "x.bin", zipT},
		{"content types without a main part is a zip", zipOf(t, "[Content_Types].xml", "<Types/>", "data.bin", "x"), "", "", zipT},
		{"a main part without content types is a zip", zipOf(t, "word/document.xml", "<w:document/>"), "", "", zipT},
		{"an unknown mimetype entry is a zip", zipOf(t, "mimetype", "application/x-evil", "a", "b"), "", "", zipT},
		{"the main part past the entries examined is not seen",
			manyEntries(t, zipEntriesSeen+10, func(i int) string {
				switch i {
				case 0:
					return "[Content_Types].xml"
				case zipEntriesSeen + 5:
					return "word/document.xml"
				}
				return filler(i)
			}), "", "", zipT},
		{"a directory past the budget is a zip", manyEntries(t, 12000, func(i int) string {
			if i == 0 {
				return "[Content_Types].xml"
			}
			if i == 1 {
				return "word/document.xml"
			}
			return filler(i)
		}), "", "x.bin", zipT},
		{"a mimetype entry that inflates past its size is a zip", lyingMimetype(t), "", "", zipT},
		{"a truncated zip is a zip", zipOf(t, "[Content_Types].xml", "<Types/>", "word/document.xml", "<w:document/>")[:60], "", "", zipT},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReader{r: bytes.NewReader(tc.data)}
			sniffed, err := SniffAt(r, int64(len(tc.data)))
			if err != nil {
				t.Fatal(err)
			}
			if got := DecideMIME(Declared(tc.declared, tc.file), sniffed); got != tc.want {
				t.Errorf("type = %q (sniffed %q), want %q", got, sniffed, tc.want)
			}
			// Bounded whatever the zip holds: the directory budget, the
			// search for its end, and one small mimetype entry.
			if limit := int64(zipDirBudget + 66<<10 + SniffLen); r.read > limit {
				t.Errorf("read %d bytes, more than the %d the bounds allow", r.read, limit)
			}
		})
	}
}

// FileMIME, the one answer for a file on disk, sees the same entries.
func TestFileMIMEOfAnOfficeFileNamedBin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "upload.bin")
	if err := os.WriteFile(path, zipOf(t, "[Content_Types].xml", "<Types/>", "xl/workbook.xml", "<workbook/>"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := FileMIME(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"; got != want || Ext(got) != ".xlsx" {
		t.Errorf("FileMIME = %q (%s), want %q (.xlsx)", got, Ext(got), want)
	}
}

// BenchmarkSniffAtZip: what telling an Office file from a zip costs, for
// a real document's directory and for one past the budget (a zip bomb's
// worst case here: the bytes read and held are bounded by zipDirBudget).
func BenchmarkSniffAtZip(b *testing.B) {
	docx := zipOf(b, "[Content_Types].xml", "<Types/>", "_rels/.rels", "<r/>", "word/document.xml", "<w:document/>",
		"word/styles.xml", "<s/>", "docProps/core.xml", "<c/>")
	huge := manyEntries(b, 100000, func(i int) string { return fmt.Sprintf("customXml/item%06d.xml", i) })
	for _, bc := range []struct {
		name string
		data []byte
	}{{"docx", docx}, {"directory past the budget", huge}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			r := bytes.NewReader(bc.data)
			for b.Loop() {
				if _, err := SniffAt(r, int64(len(bc.data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
