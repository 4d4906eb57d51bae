package doctexttest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"strings"
)

// The red team's files: small on disk, built to make a reader decode or
// allocate gigabytes. They are written the way an attacker would, as
// compressed streams that are never held decompressed, so building one
// costs megabytes, not what it expands to.

// deflateRepeat is a raw deflate stream of prefix, unit repeated count
// times and suffix, with the hashes of that data (for zlib and zip),
// made without holding or compressing all of it: a block written by a
// fresh compressor and flushed refers only to itself, so copies of it
// can follow each other.
func deflateRepeat(prefix, unit []byte, count int64, suffix []byte) (raw []byte, adler, crc uint32) {
	var out bytes.Buffer
	a, c := adler32.New(), crc32.NewIEEE()
	block := func(data []byte) []byte {
		var b bytes.Buffer
		fw, _ := flate.NewWriter(&b, flate.BestCompression)
		fw.Write(data)
		fw.Flush()
		return b.Bytes()
	}
	hash := func(data []byte, times int64) {
		for range times {
			a.Write(data)
			c.Write(data)
		}
	}
	if len(prefix) > 0 {
		out.Write(block(prefix))
		hash(prefix, 1)
	}
	perChunk := max(1, (1<<20)/len(unit))
	chunk := bytes.Repeat(unit, perChunk)
	full := count / int64(perChunk)
	if full > 0 {
		one := block(chunk)
		for range full {
			out.Write(one)
		}
		hash(chunk, full)
	}
	if rest := int(count % int64(perChunk)); rest > 0 {
		out.Write(block(chunk[:rest*len(unit)]))
		hash(chunk[:rest*len(unit)], 1)
	}
	var last bytes.Buffer // the final block
	fw, _ := flate.NewWriter(&last, flate.BestCompression)
	fw.Write(suffix)
	fw.Close()
	out.Write(last.Bytes())
	hash(suffix, 1)
	return out.Bytes(), a.Sum32(), c.Sum32()
}

// FlateRepeat is /FlateDecode data (a zlib stream) of prefix followed by
// unit repeated count times, made without ever holding it decompressed:
// 64 MiB of one byte take about 64 KB and a few milliseconds.
func FlateRepeat(prefix, unit []byte, count int64) []byte {
	raw, adler, _ := deflateRepeat(prefix, unit, count, nil)
	b := make([]byte, 0, len(raw)+6)
	b = append(b, 0x78, 0xda)
	b = append(b, raw...)
	return append(b, byte(adler>>24), byte(adler>>16), byte(adler>>8), byte(adler))
}

// rawPDF lays out numbered objects (body text as written after "n 0 obj")
// and ends with the cross-reference stream xref builds from their
// offsets.
type rawPDF struct {
	buf  bytes.Buffer
	offs map[int]int
}

func newRawPDF() *rawPDF {
	p := &rawPDF{offs: map[int]int{}}
	p.buf.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	return p
}

func (p *rawPDF) obj(num int, body string) {
	p.offs[num] = p.buf.Len()
	fmt.Fprintf(&p.buf, "%d 0 obj\n%s\nendobj\n", num, body)
}

func (p *rawPDF) stream(num int, dict string, data []byte) {
	p.offs[num] = p.buf.Len()
	fmt.Fprintf(&p.buf, "%d 0 obj\n<< %s /Length %d >>\nstream\n", num, dict, len(data))
	p.buf.Write(data)
	p.buf.WriteString("\nendstream\nendobj\n")
}

// finish writes stream object num as the cross-reference stream (dict
// and data as given) and points startxref at it.
func (p *rawPDF) finish(num int, dict string, data []byte) []byte {
	off := p.buf.Len()
	p.stream(num, dict, data)
	fmt.Fprintf(&p.buf, "startxref\n%d\n%%%%EOF\n", off)
	return p.buf.Bytes()
}

// xrefRows are cross-reference stream rows of /W [1 4 2] for objects
// 0..len(offs)-1 (an offset of 0 is a free entry), the stream itself at
// self.
func xrefRows(offs []int) []byte {
	var b bytes.Buffer
	for _, o := range offs {
		row := make([]byte, 7)
		if o > 0 {
			row[0] = 1
			putUint(row[1:5], uint32(o))
		}
		b.Write(row)
	}
	return b.Bytes()
}

// onePageHead writes the catalog (1), page tree (2), page (3) and its
// content (4) of a document that says text.
func onePageHead(text string) *rawPDF {
	p := newRawPDF()
	p.obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	p.obj(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	p.obj(3, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "+
		"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>")
	p.stream(4, "", []byte("BT /F1 12 Tf 72 720 Td ("+text+") Tj ET"))
	return p
}

// FlateBombPDF is the red team's PDF (68 KB theirs, 1 KB this one) whose cross-reference stream
// passes eight FlateDecode filters, each with a PNG predictor of 64 MiB
// rows (/Columns 67108864): a reader that allocates the rows it is told
// to takes a gigabyte before it reads a byte, and the innermost stream
// inflates to 64 MiB.
func FlateBombPDF() []byte {
	const filters, row = 8, 64 << 20
	p := onePageHead("bomb")
	// One predictor row: its filter byte (0, none) and 64 MiB of zeros,
	// then deflated again for each outer filter.
	data := FlateRepeat([]byte{0}, []byte{0}, row)
	for range filters - 1 {
		data = Deflate(data)
	}
	dict := fmt.Sprintf("/Type /XRef /Size 6 /W [1 4 2] /Root 1 0 R /Filter [%s] /DecodeParms [%s]",
		strings.Repeat("/FlateDecode ", filters),
		strings.Repeat(fmt.Sprintf("<< /Predictor 12 /Columns %d >> ", row), filters))
	return p.finish(5, dict, data)
}

// HugeXrefPDF is the red team's PDF (37 KB theirs, 44 KB this one) whose cross-reference stream
// lists 4 Mi objects (/Size 4194304), each said to be at an offset inside
// the file: a reader that believes /Size keeps four million entries.
func HugeXrefPDF() []byte { return XrefStreamPDF(4 << 20) }

// XrefStreamPDF is HugeXrefPDF with entries objects listed (at least 6).
func XrefStreamPDF(entries int64) []byte {
	p := onePageHead("xref")
	head := xrefRows([]int{0, p.offs[1], p.offs[2], p.offs[3], p.offs[4], p.buf.Len()})
	// Every other object "is" the catalog again.
	unit := xrefRows([]int{p.offs[1]})
	data := FlateRepeat(head, unit, entries-6)
	return p.finish(5, fmt.Sprintf("/Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Filter /FlateDecode", entries), data)
}

// ObjStreamThrashPDF is the red team's PDF of pages whose page objects
// are dealt in turn over nine object streams of 64 MiB each (their
// objects, then white space): a reader that caches eight object streams
// by count decodes 64 MiB again for every page it looks up. Page i says
// "Page i". 2000 pages make about 830 KB.
func ObjStreamThrashPDF(pages int) []byte {
	return ObjStreamPDF(pages, 9, 64<<20)
}

// ObjStreamPDF is ObjStreamThrashPDF with streams object streams of
// streamBytes each (at least what their objects take).
func ObjStreamPDF(pages, streams int, streamBytes int64) []byte {
	p := newRawPDF()
	const catalog, tree, font, firstStm = 1, 2, 3, 4
	pageNum := func(i int) int { return firstStm + streams + 2*i } // content: +1
	kids := make([]string, pages)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", pageNum(i))
	}
	p.obj(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", tree))
	p.obj(tree, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), pages))
	p.obj(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i := range pages {
		p.stream(pageNum(i)+1, "", fmt.Appendf(nil, "BT /F1 12 Tf 72 720 Td (Page %d) Tj ET", i+1))
	}
	type member struct{ stm, idx int }
	in := map[int]member{} // page object → where it is
	for s := range streams {
		var head, body bytes.Buffer
		n := 0
		for i := s; i < pages; i += streams {
			fmt.Fprintf(&head, "%d %d ", pageNum(i), body.Len())
			fmt.Fprintf(&body, "<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "+
				"/Resources << /Font << /F1 %d 0 R >> >> >>\n", tree, pageNum(i)+1, font)
			in[pageNum(i)] = member{firstStm + s, n}
			n++
		}
		objs := append(head.Bytes(), body.Bytes()...)
		pad := max(0, streamBytes-int64(len(objs)))
		p.stream(firstStm+s, fmt.Sprintf("/Type /ObjStm /N %d /First %d /Filter /FlateDecode", n, head.Len()),
			FlateRepeat(objs, []byte(" "), pad))
	}
	xref := pageNum(pages)
	var rows bytes.Buffer
	for num := range xref + 1 {
		row := make([]byte, 7)
		switch m, ok := in[num]; {
		case ok:
			row[0] = 2
			putUint(row[1:5], uint32(m.stm))
			row[5], row[6] = byte(m.idx>>8), byte(m.idx)
		case num == xref:
			row[0] = 1
			putUint(row[1:5], uint32(p.buf.Len()))
		case p.offs[num] > 0:
			row[0] = 1
			putUint(row[1:5], uint32(p.offs[num]))
		}
		rows.Write(row)
	}
	return p.finish(xref, fmt.Sprintf("/Type /XRef /Size %d /W [1 4 2] /Root %d 0 R /Filter /FlateDecode", xref+1, catalog),
		Deflate(rows.Bytes()))
}

// HugeRunLine is the sentence HugeRunDOCX's run repeats.
const HugeRunLine = "All work and no play makes Jack a dull boy. "

// HugeRunDOCX is the red team's DOCX (48 KB theirs, 150 KB this one) whose one text run (one w:t)
// holds 47 MiB of text: a reader that takes the run as one token holds it
// several times over.
func HugeRunDOCX() []byte { return RunDOCX(47 << 20) }

// RunDOCX is HugeRunDOCX with a run of about runBytes.
func RunDOCX(runBytes int64) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	small := DOCX("")
	zr, err := zip.NewReader(bytes.NewReader(small), int64(len(small)))
	if err != nil {
		panic(err)
	}
	for _, f := range zr.File {
		if f.Name != "word/document.xml" {
			if err := zw.Copy(f); err != nil {
				panic(err)
			}
		}
	}
	prefix := xmlHead + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
		`<w:p><w:r><w:t>`
	suffix := `</w:t></w:r></w:p></w:body></w:document>`
	count := runBytes / int64(len(HugeRunLine))
	raw, _, crc := deflateRepeat([]byte(prefix), []byte(HugeRunLine), count, []byte(suffix))
	size := uint64(len(prefix)) + uint64(count)*uint64(len(HugeRunLine)) + uint64(len(suffix))
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(len(raw)), UncompressedSize64: size})
	if err != nil {
		panic(err)
	}
	w.Write(raw)
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// EmbeddingDOCX is a Word document embedding each of objects as Word
// stores an embedded workbook or document (an OLE object whose package
// part is the file), between paragraphs naming them.
func EmbeddingDOCX(objects ...[]byte) []byte {
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" ` +
		`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" ` +
		`xmlns:o="urn:schemas-microsoft-com:office:office" xmlns:v="urn:schemas-microsoft-com:vml"`
	var body, rels strings.Builder
	var files []File
	for i, obj := range objects {
		id := fmt.Sprintf("rIdObj%d", i)
		fmt.Fprintf(&body, `<w:p><w:r><w:t>object %d</w:t></w:r></w:p><w:p><w:r><w:object><v:shape id="s%d"/>`+
			`<o:OLEObject Type="Embed" ProgID="Word.Document.12" ShapeID="s%d" r:id="%s"/></w:object></w:r></w:p>`, i, i, i, id)
		fmt.Fprintf(&rels, `<Relationship Id="%s" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/package" Target="embeddings/%s.docx"/>`, id, id)
		files = append(files, File{Name: "word/embeddings/" + id + ".docx", Body: string(obj)})
	}
	files = append(files,
		File{Name: "word/document.xml", Body: xmlHead + `<w:document ` + ns + `><w:body>` + body.String() + `</w:body></w:document>`},
		File{Name: "word/_rels/document.xml.rels", Body: xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			rels.String() + `</Relationships>`})
	return Zip(files...)
}
