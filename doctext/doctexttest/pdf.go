// Package doctexttest builds real documents for tests and
// benchmarks: PDFs with a text layer or only images, and the zip-and-XML
// office formats, written from scratch so no binary fixture is checked in.
package doctexttest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/encoding/charmap"
)

// PDFWriter writes a PDF object by object, then the cross-reference
// section that makes it readable.
type PDFWriter struct {
	buf     bytes.Buffer
	offs    map[int]int
	next    int
	objStm  bool           // put plain objects in an object stream
	pending map[int]string // those objects, until Finish
	enc     *encryptor
}

// Encrypt makes the streams written from now on encrypted, and the
// trailer say how.
func (w *PDFWriter) Encrypt(e Encryption) { w.enc = newEncryptor(e) }

// NewPDF starts a file. With objStm, objects that are not streams go into
// one compressed object stream and the file ends in an xref stream.
func NewPDF(objStm bool) *PDFWriter {
	w := &PDFWriter{offs: map[int]int{}, next: 1, objStm: objStm, pending: map[int]string{}}
	w.buf.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	return w
}

// Reserve allocates an object number.
func (w *PDFWriter) Reserve() int {
	w.next++
	return w.next - 1
}

// Obj writes object num.
func (w *PDFWriter) Obj(num int, body string) {
	if w.objStm {
		w.pending[num] = body
		return
	}
	w.offs[num] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n%s\nendobj\n", num, body)
}

// Stream writes stream object num; dict is the dictionary's inside
// without /Length, and data is written as given (compress it first for
// /Filter /FlateDecode).
func (w *PDFWriter) Stream(num int, dict string, data []byte) {
	if w.enc != nil {
		data = w.enc.encrypt(num, data)
	}
	w.offs[num] = w.buf.Len()
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< %s /Length %d >>\nstream\n", num, dict, len(data))
	w.buf.Write(data)
	w.buf.WriteString("\nendstream\nendobj\n")
}

// Raw appends bytes as they are (for broken files).
func (w *PDFWriter) Raw(s string) { w.buf.WriteString(s) }

// Finish writes the cross-reference section and trailer for root.
func (w *PDFWriter) Finish(root int, trailerExtra string) []byte {
	if w.enc != nil {
		trailerExtra += fmt.Sprintf(" /Encrypt %s /ID [<%x> <%x>]", w.enc.dict, w.enc.fileID, w.enc.fileID)
	}
	if w.objStm {
		return w.finishStream(root, trailerExtra)
	}
	xref := w.buf.Len()
	fmt.Fprintf(&w.buf, "xref\n0 %d\n0000000000 65535 f \n", w.next)
	for i := 1; i < w.next; i++ {
		if off, ok := w.offs[i]; ok {
			fmt.Fprintf(&w.buf, "%010d 00000 n \n", off)
		} else {
			w.buf.WriteString("0000000000 00000 f \n")
		}
	}
	fmt.Fprintf(&w.buf, "trailer\n<< /Size %d /Root %d 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", w.next, root, trailerExtra, xref)
	return w.buf.Bytes()
}

func (w *PDFWriter) finishStream(root int, trailerExtra string) []byte {
	nums := make([]int, 0, len(w.pending))
	for n := range w.pending {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	var head, body bytes.Buffer
	idx := map[int]int{}
	for i, n := range nums {
		idx[n] = i
		fmt.Fprintf(&head, "%d %d ", n, body.Len())
		body.WriteString(w.pending[n])
		body.WriteString("\n")
	}
	stm := w.Reserve()
	w.Stream(stm, fmt.Sprintf("/Type /ObjStm /N %d /First %d /Filter /FlateDecode", len(nums), head.Len()),
		Deflate(append(head.Bytes(), body.Bytes()...)))
	xrefNum := w.Reserve()
	xrefOff := w.buf.Len()
	// Rows of 1+4+2 bytes, PNG-Up predicted as many writers do.
	var rows bytes.Buffer
	prev := make([]byte, 7)
	for i := 0; i < w.next; i++ {
		row := make([]byte, 7)
		switch {
		case i == xrefNum:
			row[0] = 1
			putUint(row[1:5], uint32(xrefOff))
		case w.offs[i] != 0:
			row[0] = 1
			putUint(row[1:5], uint32(w.offs[i]))
		case i != 0 && w.pending[i] != "":
			row[0] = 2
			putUint(row[1:5], uint32(stm))
			row[5], row[6] = byte(idx[i]>>8), byte(idx[i])
		}
		rows.WriteByte(2)
		for j := range row {
			rows.WriteByte(row[j] - prev[j])
		}
		prev = row
	}
	data := Deflate(rows.Bytes())
	fmt.Fprintf(&w.buf, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root %d 0 R %s /Filter /FlateDecode "+
		"/DecodeParms << /Predictor 12 /Columns 7 >> /Length %d >>\nstream\n", xrefNum, w.next, root, trailerExtra, len(data))
	w.buf.Write(data)
	fmt.Fprintf(&w.buf, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", xrefOff)
	return w.buf.Bytes()
}

func putUint(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// Deflate compresses data the way /FlateDecode expects.
func Deflate(data []byte) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// Page is one page of a generated PDF: lines of text, or (Image) only a
// picture, as a scan would be.
type Page struct {
	Lines []string
	Image bool
}

// PDFOptions choose how the file is written.
type PDFOptions struct {
	ObjStreams bool // object streams and an xref stream (PDF 1.5 style)
	Compress   bool // FlateDecode the page contents
	Unicode    bool // a Type0 font with Identity-H codes and a ToUnicode map, for any script
	Kerning    bool // draw each line as words with TJ gaps instead of spaces
	Encrypt    Encryption
}

// PDF writes a document with the given pages.
func PDF(pages []Page, o PDFOptions) []byte {
	w := NewPDF(o.ObjStreams)
	if o.Encrypt != "" {
		w.Encrypt(o.Encrypt)
	}
	catalog, tree, font, img := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	var cmap map[rune]int
	if o.Unicode {
		cmap = map[rune]int{}
		for _, p := range pages {
			for _, l := range p.Lines {
				for _, r := range l {
					if _, ok := cmap[r]; !ok {
						cmap[r] = len(cmap) + 1
					}
				}
			}
		}
		desc, tu := w.Reserve(), w.Reserve()
		w.Obj(font, fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Test /Encoding /Identity-H "+
			"/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>", desc, tu))
		w.Obj(desc, "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Test "+
			"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 >>")
		w.Stream(tu, "", toUnicodeCMap(cmap))
	} else {
		w.Obj(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	}
	// An 8×8 grey picture: what a scanner's page is, only smaller.
	w.Stream(img, "/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8",
		bytes.Repeat([]byte{0x80}, 64))
	var kids []string
	for _, p := range pages {
		pg, content := w.Reserve(), w.Reserve()
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
		var c strings.Builder
		if p.Image {
			c.WriteString("q 612 0 0 792 0 0 cm /Im1 Do Q\n")
		}
		if len(p.Lines) > 0 {
			c.WriteString("BT /F1 11 Tf 72 740 Td 14 TL\n")
			for _, l := range p.Lines {
				switch {
				case o.Unicode:
					fmt.Fprintf(&c, "<%s> Tj T*\n", cidHex(l, cmap))
				case o.Kerning:
					c.WriteString("[")
					for i, word := range strings.Fields(l) {
						if i > 0 {
							c.WriteString(" -300 ")
						}
						c.WriteString(pdfString(word))
					}
					c.WriteString("] TJ T*\n")
				default:
					fmt.Fprintf(&c, "%s Tj T*\n", pdfString(l))
				}
			}
			c.WriteString("ET\n")
		}
		data, filter := []byte(c.String()), ""
		if o.Compress {
			data, filter = Deflate(data), "/Filter /FlateDecode"
		}
		w.Stream(content, filter, data)
		w.Obj(pg, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", tree, content))
	}
	w.Obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 %d 0 R >> "+
		"/XObject << /Im1 %d 0 R >> >> >>", strings.Join(kids, " "), len(pages), font, img))
	w.Obj(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	return w.Finish(catalog, "")
}

// pdfString writes s as a literal string in WinAnsiEncoding.
func pdfString(s string) string {
	enc, err := charmap.Windows1252.NewEncoder().String(s)
	if err != nil {
		enc = s
	}
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`, "\r", `\r`, "\n", `\n`)
	return "(" + r.Replace(enc) + ")"
}

func cidHex(s string, cmap map[rune]int) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, "%04X", cmap[r])
	}
	return b.String()
}

func toUnicodeCMap(cmap map[rune]int) []byte {
	var b strings.Builder
	b.WriteString("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n" +
		"/CMapName /Test def 1 begincodespacerange <0000> <FFFF> endcodespacerange\n")
	runes := make([]rune, 0, len(cmap))
	for r := range cmap {
		runes = append(runes, r)
	}
	sort.Slice(runes, func(i, j int) bool { return cmap[runes[i]] < cmap[runes[j]] })
	for len(runes) > 0 {
		n := min(len(runes), 100)
		fmt.Fprintf(&b, "%d beginbfchar\n", n)
		for _, r := range runes[:n] {
			var u []byte
			for _, x := range []rune{r} {
				if x > 0xFFFF {
					x -= 0x10000
					u = fmt.Appendf(u, "%04X%04X", 0xD800+(x>>10), 0xDC00+(x&0x3FF))
				} else {
					u = fmt.Appendf(u, "%04X", x)
				}
			}
			fmt.Fprintf(&b, "<%04X> <%s>\n", cmap[r], u)
		}
		b.WriteString("endbfchar\n")
		runes = runes[n:]
	}
	b.WriteString("endcmap CMapName currentdict /CMap defineresource pop end end\n")
	return []byte(b.String())
}
