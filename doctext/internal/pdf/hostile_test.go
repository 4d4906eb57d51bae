package pdf

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/doctext/doctexttest"
)

// onePage writes a document of one page with the given content, extra
// objects added by more.
func onePage(content []byte, filter string, more func(w *doctexttest.PDFWriter) (resources string)) []byte {
	return onePageFont(content, filter, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", more)
}

// onePageFont is onePage with font F1 as given.
func onePageFont(content []byte, filter, fontDict string, more func(w *doctexttest.PDFWriter) (resources string)) []byte {
	w := doctexttest.NewPDF(false)
	cat, tree, pg, c, font := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	res := ""
	if more != nil {
		res = more(w)
	}
	w.Obj(font, fontDict)
	w.Stream(c, filter, content)
	w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> %s >> >>", tree, c, font, res))
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", pg))
	w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(cat, "")
}

// zeros is a FlateDecode stream of n MiB of zero bytes, made without
// compressing them all: one MiB compressed by a fresh writer and flushed
// (not closed) refers only to itself, so copies of it follow each other.
func zeros(mib int) []byte {
	var one bytes.Buffer
	fw, _ := flate.NewWriter(&one, flate.BestCompression)
	fw.Write(make([]byte, 1<<20))
	fw.Flush()
	var b bytes.Buffer
	b.Write([]byte{0x78, 0xda})
	for range mib {
		b.Write(one.Bytes())
	}
	b.Write([]byte{0x03, 0x00}) // the final, empty block; no checksum, which readers forgive
	return b.Bytes()
}

func TestHostile(t *testing.T) {
	cases := []struct {
		name string
		data func() []byte
		open error  // from Open
		text string // on page 1
	}{
		{"page tree cycle", func() []byte {
			w := doctexttest.NewPDF(false)
			cat, tree, pg, c := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
			w.Stream(c, "", []byte("BT /F1 12 Tf (cycle) Tj ET"))
			w.Obj(pg, fmt.Sprintf("<< /Type /Page /Contents %d 0 R >>", c))
			w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R %d 0 R %d 0 R] /Count 3 >>", pg, tree, pg))
			w.Obj(cat, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
			return w.Finish(cat, "")
		}, nil, "cycle"},
		{"deep nesting in the catalog", func() []byte {
			w := doctexttest.NewPDF(false)
			cat := w.Reserve()
			w.Obj(cat, "<< /Type /Catalog /Junk "+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+" >>")
			return w.Finish(cat, "")
		}, ErrMalformed, ""},
		{"deep nesting in a page", func() []byte {
			return onePage([]byte("BT /F1 12 Tf (before) Tj "+strings.Repeat("[", 100000)+" (after) Tj ET"), "", nil)
		}, nil, "before"},
		{"a form that draws itself", func() []byte {
			return onePage([]byte("/Fm1 Do BT /F1 12 Tf (outside) Tj ET"), "", func(w *doctexttest.PDFWriter) string {
				fm := w.Reserve()
				w.Stream(fm, fmt.Sprintf("/Type /XObject /Subtype /Form /Resources << /XObject << /Fm1 %d 0 R >> >>", fm),
					[]byte("/Fm1 Do /Fm1 Do"))
				return fmt.Sprintf("/XObject << /Fm1 %d 0 R >>", fm)
			})
		}, nil, "outside"},
		{"forms that fan out", func() []byte {
			return onePage([]byte("/F0 Do BT /F1 12 Tf (done) Tj ET"), "", func(w *doctexttest.PDFWriter) string {
				// Eight levels of forms, each drawing the next ten times:
				// 10^8 drawings unless something stops it.
				nums := make([]int, 9)
				for i := range nums {
					nums[i] = w.Reserve()
				}
				for i := 0; i < 8; i++ {
					w.Stream(nums[i], fmt.Sprintf("/Subtype /Form /Resources << /XObject << /N %d 0 R >> >>", nums[i+1]),
						[]byte(strings.Repeat("/N Do ", 10)))
				}
				w.Stream(nums[8], "/Subtype /Form", []byte("BT ET"))
				return fmt.Sprintf("/XObject << /F0 %d 0 R >>", nums[0])
			})
		}, nil, "done"},
		{"a content stream that inflates to 1 GiB", func() []byte {
			return onePage(zeros(1024), "/Filter /FlateDecode", nil)
		}, nil, ""},
		{"a wrong /Length", func() []byte {
			data := onePage([]byte("BT (length) Tj ET"), "", nil)
			return bytes.Replace(data, []byte("/Length 17 "), []byte("/Length 99 "), 1)
		}, nil, "length"},
		{"a /Prev loop", func() []byte {
			data := onePage([]byte("BT (loop) Tj ET"), "", nil)
			i := bytes.LastIndex(data, []byte("startxref\n"))
			off := string(bytes.Fields(data[i+10:])[0])
			return bytes.Replace(data, []byte("/Root"), []byte("/Prev "+off+" /Root"), 1)
		}, nil, "loop"},
		{"encrypted", func() []byte {
			w := doctexttest.NewPDF(false)
			cat, enc := w.Reserve(), w.Reserve()
			w.Obj(enc, "<< /Filter /Standard /V 2 /R 3 /O (x) /U (y) /P -4 >>")
			w.Obj(cat, "<< /Type /Catalog /Pages 99 0 R >>")
			return w.Finish(cat, fmt.Sprintf("/Encrypt %d 0 R", enc))
		}, ErrEncrypted, ""},
		{"truncated", func() []byte {
			data := doctexttest.PDF([]doctexttest.Page{{Lines: []string{"a"}}}, doctexttest.PDFOptions{})
			return data[:len(data)/2]
		}, ErrMalformed, ""},
		{"not a pdf", func() []byte { return []byte("hello") }, ErrMalformed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			if data == nil {
				t.Skip()
			}
			start := time.Now()
			d, err := Open(context.Background(), bytes.NewReader(data), int64(len(data)))
			if tc.open != nil {
				if !errors.Is(err, tc.open) {
					t.Fatalf("Open: %v, want %v", err, tc.open)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			info, err := d.PageText(context.Background(), 1, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(info.Text, tc.text) {
				t.Errorf("text %q, want %q", info.Text, tc.text)
			}
			t.Logf("%d pages, %q in %v", d.NumPages(), info.Text, time.Since(start))
		})
	}
}

// An object stream whose /Length is an object inside it: reading the
// stream needs the length, the length needs the stream.
func TestObjStmNeedsItself(t *testing.T) {
	file := []byte("%PDF-1.7\n7 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Length 5 0 R >>\nstream\n5 0 42\nendstream\nendobj\n")
	d := &Doc{ctx: context.Background(), f: bytes.NewReader(file), size: int64(len(file)), objs: map[ref]object{}, objstms: map[int32]*objStm{},
		fonts: map[ref]*font{}, loading: map[int32]bool{},
		xref: map[int32]xent{5: {typ: 2, stm: 7, idx: 0}, 7: {typ: 1, off: 9}}}
	// Without a guard this recursion overflows the stack, which no
	// recover catches.
	if got := d.resolve(ref{5, 0}); got != nil && got != int64(42) {
		t.Errorf("got %v", got)
	}
}
