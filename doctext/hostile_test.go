package doctext

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// zipBomb is a DOCX whose document.xml is 1 GiB of zeros in about 1 MB:
// one MiB deflated by a fresh writer and flushed refers only to itself,
// so copies of it make one long stream. With lie set, the header claims
// the entry is small.
func zipBomb(t testing.TB, lie bool) []byte {
	t.Helper()
	const mib = 1024
	var one bytes.Buffer
	fw, _ := flate.NewWriter(&one, flate.BestCompression)
	fw.Write(make([]byte, 1<<20))
	fw.Flush()
	var raw bytes.Buffer
	crc := uint32(0)
	zero := make([]byte, 1<<20)
	for range mib {
		raw.Write(one.Bytes())
		crc = crc32.Update(crc, crc32.IEEETable, zero)
	}
	raw.Write([]byte{0x03, 0x00})
	size := uint64(mib << 20)
	if lie {
		size = 1000
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(raw.Len()), UncompressedSize64: size})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(raw.Bytes())
	zw.Close()
	return b.Bytes()
}

func TestHostileDocuments(t *testing.T) {
	cases := []struct {
		name, file, mime string
		data             func(testing.TB) []byte
		err              error
		msg              string
	}{
		{"zip bomb, honest header", "bomb.docx", "application/zip", func(t testing.TB) []byte { return zipBomb(t, false) },
			ErrTooLarge, "word/document.xml would expand to 1024 MiB"},
		{"zip bomb, lying header", "bomb.docx", "application/zip", func(t testing.TB) []byte { return zipBomb(t, true) },
			ErrCorrupt, "word/document.xml"},
		{"too many entries", "many.docx", "application/zip", func(testing.TB) []byte {
			files := []doctexttest.File{{Name: "word/document.xml", Body: "<w:document/>"}}
			for i := range maxZipEntries + 1 {
				files = append(files, doctexttest.File{Name: fmt.Sprint(i), Store: true})
			}
			return doctexttest.Zip(files...)
		}, ErrTooLarge, "entries"},
		{"deep XML", "deep.docx", "application/zip", func(testing.TB) []byte {
			return doctexttest.Zip(doctexttest.File{Name: "word/document.xml", Body: strings.Repeat("<w:p>", 100_000)})
		}, ErrCorrupt, "nests more than 512 levels"},
		{"malformed XML", "bad.xlsx", "application/zip", func(testing.TB) []byte {
			return doctexttest.Zip(doctexttest.File{Name: "xl/workbook.xml", Body: "<workbook><sheets></workbook>\x00"})
		}, ErrCorrupt, "xl/workbook.xml"},
		{"truncated zip", "cut.docx", "application/zip", func(testing.TB) []byte {
			d := doctexttest.DOCX(doctexttest.P("", "hello"))
			return d[:len(d)/2]
		}, ErrCorrupt, "without its directory"},
		{"truncated pdf", "cut.pdf", "application/pdf", func(testing.TB) []byte {
			d := doctexttest.PDF([]doctexttest.Page{{Lines: []string{"hello"}}}, doctexttest.PDFOptions{})
			return d[:len(d)*2/3]
		}, ErrCorrupt, "startxref"},
		{"a picture called pdf", "x.pdf", "application/pdf", func(testing.TB) []byte { return []byte("\x89PNG\r\n\x1a\n....") },
			ErrCorrupt, "not one"},
		{"a zip of photos", "photos.zip", "application/zip", func(testing.TB) []byte {
			return doctexttest.Zip(doctexttest.File{Name: "a.jpg", Body: "x"})
		}, ErrUnsupported, "no document"},
		{"binary called text", "x.txt", "text/plain", func(testing.TB) []byte { return []byte("MZ\x90\x00\x03\x00") },
			ErrUnsupported, "binary"},
		{"old Word", "x.doc", "application/msword", func(testing.TB) []byte {
			return append([]byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"), make([]byte, 600)...)
		}, ErrUnsupported, ".doc"},
		{"password-protected DOCX", "secret.docx", "application/octet-stream", func(testing.TB) []byte {
			b := append([]byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"), make([]byte, 600)...)
			return append(b, "E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e\x00"...)
		}, ErrEncrypted, "password"},
		{"encrypted zip entry", "secret.docx", "application/zip", func(testing.TB) []byte {
			var b bytes.Buffer
			zw := zip.NewWriter(&b)
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: "word/document.xml", Method: zip.Store, Flags: 1})
			w.Write([]byte("garbage"))
			zw.Close()
			return b.Bytes()
		}, ErrEncrypted, "password"},
		{"encrypted ODT", "secret.odt", "application/zip", func(testing.TB) []byte {
			return doctexttest.Zip(doctexttest.File{Name: "mimetype", Body: "application/vnd.oasis.opendocument.text", Store: true},
				doctexttest.File{Name: "META-INF/manifest.xml", Body: `<manifest><file-entry><encryption-data/></file-entry></manifest>`},
				doctexttest.File{Name: "content.xml", Body: "\x8a\x01garbage"})
		}, ErrEncrypted, "password"},
		{"pdf with a user password", "secret.pdf", "application/pdf", func(testing.TB) []byte {
			return doctexttest.PDF([]doctexttest.Page{{Lines: []string{"secret"}}}, doctexttest.PDFOptions{Encrypt: "aes256-password"})
		}, ErrEncrypted, "needs a password"},
		{"pdf with another security handler", "secret.pdf", "application/pdf", func(testing.TB) []byte {
			w := doctexttest.NewPDF(false)
			cat := w.Reserve()
			w.Obj(cat, "<< /Type /Catalog >>")
			return w.Finish(cat, "/Encrypt << /Filter /Adobe.PubSec >>")
		}, ErrEncrypted, "Adobe.PubSec"},
		{"a line without end", "one.csv", "text/csv", func(testing.TB) []byte { return bytes.Repeat([]byte("a"), maxLine+10) },
			ErrTooLarge, "line"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := extract(t, data, tc.file, tc.mime, Options{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v with %q", err, tc.err, tc.msg)
			}
			// What Extract allocated, whatever the file claims or holds.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}
