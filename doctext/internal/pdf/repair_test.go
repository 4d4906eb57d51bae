package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// TestRepair: files whose cross-reference table is missing, wrong, or
// points at the wrong places are read by scanning for their objects.
func TestRepair(t *testing.T) {
	doc := func(o doctexttest.PDFOptions) []byte {
		return doctexttest.PDF([]doctexttest.Page{{Lines: []string{"First page"}}, {Lines: []string{"Second page"}}}, o)
	}
	plain := doc(doctexttest.PDFOptions{})
	streams := doc(doctexttest.PDFOptions{ObjStreams: true, Compress: true})
	cut := func(data []byte, at string) []byte { return data[:bytes.LastIndex(data, []byte(at))] }
	replace := func(data []byte, re, with string) []byte {
		return regexp.MustCompile(re).ReplaceAll(bytes.Clone(data), []byte(with))
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"intact", plain},
		{"no xref, no trailer, no startxref", cut(plain, "xref")},
		{"no startxref", cut(plain, "startxref")},
		{"startxref points at nothing", replace(plain, `startxref\n\d+`, "startxref\n17")},
		{"startxref past the end", replace(plain, `startxref\n\d+`, "startxref\n99999999")},
		// Bytes added after the header move every object: the table's
		// offsets all point a little before them.
		{"every offset shifted", bytes.Replace(plain, []byte("%PDF-1.7\n"), []byte("%PDF-1.7\n% an editor added a comment here\n"), 1)},
		{"offsets zeroed", replace(plain, `\d{10} 00000 n`, "0000000009 00000 n")},
		{"xref table garbled", replace(plain, `\d{10} 00000 n`, "garbage here")},
		{"object streams, xref stream cut off", cut(streams, "endobj\n")},
		{"object streams, startxref wrong", replace(streams, `startxref\n\d+`, "startxref\n40")},
		{"an incremental update with a broken table", update(plain)},
		{"encrypted, object streams, startxref wrong", replace(doc(doctexttest.PDFOptions{ObjStreams: true, Compress: true, Encrypt: "aes256"}),
			`startxref\n\d+`, "startxref\n40")},
		{"encrypted, no startxref", cut(doc(doctexttest.PDFOptions{Encrypt: "rc4-128"}), "startxref")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(context.Background(), bytes.NewReader(tc.data), int64(len(tc.data)))
			if err != nil {
				t.Fatal(err)
			}
			if d.NumPages() != 2 {
				t.Fatalf("%d pages", d.NumPages())
			}
			var got []string
			for i := 1; i <= 2; i++ {
				info, err := d.PageText(context.Background(), i, 1000)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, info.Text)
			}
			want := []string{"First page", "Second page"}
			if strings.Contains(tc.name, "update") {
				want[0] = "Updated page"
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
}

// update appends a new version of the first page's contents (object 6)
// and a cross-reference section that cannot be read.
func update(data []byte) []byte {
	b := bytes.NewBuffer(bytes.Clone(data))
	b.WriteString("6 0 obj\n<< /Length 44 >>\nstream\nBT /F1 11 Tf 72 740 Td (Updated page) Tj ET\nendstream\nendobj\n")
	x := b.Len()
	fmt.Fprintf(b, "xref\n0 1\nbroken\ntrailer\n<< /Size 7 /Prev 0 >>\nstartxref\n%d\n%%%%EOF\n", x)
	return b.Bytes()
}

// TestRepairRefuses: a file with no objects at all, or none that make
// a document, is still an error, and a clear one.
func TestRepairRefuses(t *testing.T) {
	cases := map[string]string{
		"no objects":    "%PDF-1.7\nnothing here\n%%EOF\n",
		"no catalog":    "%PDF-1.7\n1 0 obj\n<< /Type /Page >>\nendobj\n%%EOF\n",
		"catalog alone": "%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n%%EOF\n",
	}
	for name, data := range cases {
		_, err := Open(context.Background(), strings.NewReader(data), int64(len(data)))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRepairBounded: files made to blow the scan up (millions of object
// headers, thousands of object streams) cost what the bounds allow: the
// table never holds more objects than the file has bytes, and decoding
// stays within the document's budget.
func TestRepairBounded(t *testing.T) {
	headers := func() []byte {
		var b bytes.Buffer
		b.WriteString("%PDF-1.7\n")
		for i := 1; b.Len() < 24<<20; i++ {
			fmt.Fprintf(&b, "%d 0 obj\n", i)
		}
		return b.Bytes()
	}
	// 3000 object streams, each a 1 MiB flate bomb of zeros.
	streams := func() []byte {
		var b bytes.Buffer
		b.WriteString("%PDF-1.7\n")
		z := zeros(1)
		for i := 1; i <= 3000; i++ {
			fmt.Fprintf(&b, "%d 0 obj\n<< /Type /ObjStm /N 100000 /First 0 /Filter /FlateDecode /Length %d >>\nstream\n", i, len(z))
			b.Write(z)
			b.WriteString("\nendstream\nendobj\n")
		}
		return b.Bytes()
	}
	for name, data := range map[string][]byte{"24 MB of object headers": headers(), "3000 object-stream bombs": streams()} {
		t.Run(name, func(t *testing.T) {
			d := &Doc{f: bytes.NewReader(data), size: int64(len(data)), xref: map[int32]xent{}, objs: map[ref]object{},
				objstms: map[int32]*objStm{}, fonts: map[ref]*font{}, loading: map[int32]bool{}, ctx: context.Background()}
			err := d.repair()
			if err == nil {
				t.Fatal("a file with no catalog was repaired")
			}
			if int64(len(d.xref)) > d.maxEntries() || d.decoded > MaxDecoded+repairChunk {
				t.Errorf("%d objects (at most %d), %d bytes decoded", len(d.xref), d.maxEntries(), d.decoded)
			}
			if _, err := Open(context.Background(), bytes.NewReader(data), int64(len(data))); err == nil {
				t.Error("opened")
			}
		})
	}
}
