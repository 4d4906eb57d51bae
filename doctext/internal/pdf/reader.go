package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrEncrypted is returned by Open for an encrypted file.
var ErrEncrypted = errors.New("encrypted PDF")

const (
	maxXrefSections = 64      // a /Prev chain longer than this is a loop or an attack
	maxXrefEntries  = 1 << 20 // objects in one file
	maxObjCache     = 8192    // parsed objects kept
	maxRefHops      = 8       // a reference to a reference to …
)

type xent struct {
	typ byte  // 1: at off in the file; 2: object idx of object stream stm
	off int64 // type 1
	stm int32 // type 2
	idx int32 // type 2
	gen int32
}

// Doc is an open PDF.
type Doc struct {
	f       io.ReaderAt
	size    int64
	xref    map[int32]xent
	trailer dict
	objs    map[ref]object
	objstms map[int32]*objStm
	// stmOrder is objstms by age, and stmBytes their size: the cache is
	// bounded by bytes, as one stream may be small or 8 MiB.
	stmOrder []int32
	stmBytes int64
	pages    []page
	fonts    map[ref]*font
	// fontEntries counts the code→text and width entries of the fonts
	// kept, which a small file can make many of (a CMap range of 256
	// codes is twenty bytes).
	fontEntries int
	loading     map[int32]bool // object streams being decoded, against loops
	crypt       *crypt         // nil unless encrypted
	// ctx is the context of the call under way (Open, then PageText).
	ctx context.Context
	// decoded counts the bytes all streams decoded to (see spend); fatal
	// is set once that is past MaxDecoded.
	decoded int64
	fatal   error
	// parsed counts the elements of the objects parsed (see maxParsed).
	parsed int64
	// limitErr is the first ErrTooLarge met, which resolve hides: when
	// the page tree cannot be read it says why. badStm are object
	// streams refused, not decoded again for each object in them.
	limitErr error
	badStm   map[int32]error
	// repaired: the table was rebuilt by scanning the file (see repair),
	// with repairErr the outcome.
	repaired  bool
	repairErr error
	// seen records the kinds of fonts met, for the corpus test's figures.
	seen fontKinds
	// reorderedPages counts the pages read out of drawing order, for the
	// corpus test's figures.
	reorderedPages int
	// trueTypeMaps counts the font programs read for the text of their
	// glyphs (TrueType cmaps and post tables, CFF encodings and charsets).
	trueTypeMaps int
}

type fontKinds struct{ cid, cidByCollection, type3 bool }

type objStm struct {
	data  []byte
	first int64
	offs  map[int32]int64
	nums  []int32 // the object numbers, by index
}

// Open reads the file structure and the page tree. It reads no page
// contents. It stops when ctx ends, with ctx's error.
func Open(ctx context.Context, f io.ReaderAt, size int64) (*Doc, error) {
	d := &Doc{f: f, size: size, xref: map[int32]xent{}, objs: map[ref]object{},
		objstms: map[int32]*objStm{}, fonts: map[ref]*font{}, loading: map[int32]bool{}, ctx: ctx}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	head := make([]byte, 1024)
	n, _ := f.ReadAt(head, 0)
	if !bytes.Contains(head[:n], []byte("%PDF-")) {
		return nil, malformed("no %%PDF- header")
	}
	start, err := d.startxref()
	if err == nil {
		err = d.readXrefChain(start)
	}
	if err != nil {
		if !d.looksBroken(err) {
			return nil, err
		}
		if e := d.repair(); e != nil {
			if errors.Is(e, ErrTooLarge) || d.stopped() != nil {
				return nil, e
			}
			return nil, err
		}
	}
	if d.trailer["Encrypt"] != nil && d.crypt == nil {
		if d.crypt, err = d.openCrypt(); err != nil {
			return nil, err
		}
	}
	if !d.catalogOK(d.trailer) && !d.repaired {
		if e := d.repair(); e != nil && (errors.Is(e, ErrTooLarge) || d.stopped() != nil) {
			return nil, e
		}
	}
	err = d.loadPages()
	if d.looksBroken(err) && d.repair() == nil {
		d.pages = d.pages[:0]
		err = d.loadPages()
	}
	if err != nil {
		// Past a limit or the deadline, a page tree cut short is not the
		// file's fault: say what stopped it.
		if e := d.ctx.Err(); e != nil {
			return nil, e
		}
		if d.limitErr != nil {
			return nil, d.limitErr
		}
		if e := d.stopped(); e != nil {
			return nil, e
		}
		return nil, err
	}
	if err := d.stopped(); err != nil {
		return nil, err
	}
	return d, nil
}

// NumPages is the number of pages.
func (d *Doc) NumPages() int { return len(d.pages) }

func (d *Doc) startxref() (int64, error) {
	tail := int64(2048)
	if tail > d.size {
		tail = d.size
	}
	buf := make([]byte, tail)
	n, err := d.f.ReadAt(buf, d.size-tail)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	buf = buf[:n]
	i := bytes.LastIndex(buf, []byte("startxref"))
	if i < 0 {
		return 0, malformed("no startxref at the end (truncated?)")
	}
	l := newLexer(bytes.NewReader(buf[i+len("startxref"):]), 0, false)
	t, err := l.token()
	off, ok := t.(int64)
	if err != nil || !ok || off < 0 || off >= d.size {
		return 0, malformed("bad startxref")
	}
	return off, nil
}

// readXrefChain reads the newest cross-reference section and the older
// ones it links to. Entries already known (newer) win.
func (d *Doc) readXrefChain(off int64) error {
	seen := map[int64]bool{}
	first := true
	queue := []int64{off}
	for len(queue) > 0 {
		if err := d.stopped(); err != nil {
			return err
		}
		off, queue = queue[0], queue[1:]
		if seen[off] {
			continue
		}
		if len(seen) >= maxXrefSections {
			return malformed("too many cross-reference sections")
		}
		seen[off] = true
		trailer, err := d.readXref(off)
		if err != nil {
			if first || d.stopped() != nil || errors.Is(err, ErrTooLarge) {
				return err
			}
			break // an older section that cannot be read: keep what we have
		}
		if first {
			d.trailer = trailer
			first = false
		}
		// A hybrid file's table points at a stream holding the objects it
		// keeps in object streams; read it before the older sections.
		if x, ok := trailer["XRefStm"].(int64); ok && x >= 0 && x < d.size {
			queue = append([]int64{x}, queue...)
		}
		if p, ok := trailer["Prev"].(int64); ok && p >= 0 && p < d.size {
			queue = append(queue, p)
		}
	}
	if _, ok := d.trailer["Root"]; !ok {
		return malformed("no document catalog (/Root)")
	}
	return nil
}

// maxEntries is how many objects the file can hold: each takes at least a
// byte of it, so a larger /Size is a lie told to make the reader allocate.
func (d *Doc) maxEntries() int64 {
	return min(maxXrefEntries, d.size+xrefSlack)
}

func (d *Doc) add(num int64, e xent) {
	if num < 0 || num > 1<<31-1 || int64(len(d.xref)) >= d.maxEntries() {
		return
	}
	if _, ok := d.xref[int32(num)]; !ok {
		d.xref[int32(num)] = e
	}
}

func (d *Doc) readXref(off int64) (dict, error) {
	l := newLexer(io.NewSectionReader(d.f, off, d.size-off), off, true)
	l.parsed = &d.parsed
	t, err := l.token()
	if err != nil {
		return nil, malformed("cross-reference section: %v", err)
	}
	if t == keyword("xref") {
		return d.readXrefTable(l)
	}
	// An xref stream: "n g obj << … >> stream".
	l.back = append(l.back, t)
	obj, err := d.readIndirect(l, -1)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*stream)
	if !ok || s.d["Type"] != name("XRef") {
		return nil, malformed("startxref points at neither a table nor a stream")
	}
	return s.d, d.readXrefStream(s)
}

func (d *Doc) readXrefTable(l *lexer) (dict, error) {
	for {
		t, err := l.token()
		if err != nil {
			return nil, malformed("cross-reference table: %v", err)
		}
		if t == keyword("trailer") {
			tr, err := l.object(0)
			if err != nil {
				return nil, malformed("trailer: %v", err)
			}
			td, ok := tr.(dict)
			if !ok {
				return nil, malformed("trailer is not a dictionary")
			}
			return td, nil
		}
		start, ok1 := t.(int64)
		t, err = l.token()
		count, ok2 := t.(int64)
		if err != nil || !ok1 || !ok2 || start < 0 || count < 0 || count > d.size/18 {
			return nil, malformed("bad cross-reference subsection")
		}
		for i := range count {
			if i%(1<<16) == 0 {
				if err := d.ctx.Err(); err != nil {
					return nil, err
				}
			}
			a, b, c, err := l.tokens3()
			if err != nil {
				return nil, malformed("cross-reference entry: %v", err)
			}
			o, ok1 := a.(int64)
			g, ok2 := b.(int64)
			k, ok3 := c.(keyword)
			if !ok1 || !ok2 || !ok3 {
				return nil, malformed("bad cross-reference entry")
			}
			if k == "n" && o > 0 && o < d.size {
				d.add(start+i, xent{typ: 1, off: o, gen: int32(g)})
			}
		}
	}
}

func (d *Doc) readXrefStream(s *stream) error {
	index, _ := s.d["Index"].(array)
	if index == nil {
		size, _ := s.d["Size"].(int64)
		index = array{int64(0), size}
	}
	// The counts are checked before anything is decoded or allocated.
	var claimed int64
	for i := 1; i < len(index); i += 2 {
		if n, _ := index[i].(int64); n > 0 {
			claimed += min(n, 1<<40)
		}
	}
	if claimed > d.maxEntries() {
		return tooLarge("this PDF claims %d objects in a file of %d bytes, which cannot hold them", claimed, d.size)
	}
	data, err := d.streamBytes(s, maxXrefStream)
	if err != nil {
		return err
	}
	w, _ := s.d["W"].(array)
	if len(w) != 3 {
		return malformed("xref stream without /W")
	}
	var ws [3]int
	for i, v := range w {
		n, _ := v.(int64)
		if n < 0 || n > 8 {
			return malformed("bad /W in xref stream")
		}
		ws[i] = int(n)
	}
	rec := ws[0] + ws[1] + ws[2]
	if rec == 0 {
		return malformed("bad /W in xref stream")
	}
	field := func(b []byte) int64 {
		var v int64
		for _, c := range b {
			v = v<<8 | int64(c)
		}
		return v
	}
	for i := 0; i+1 < len(index); i += 2 {
		start, _ := index[i].(int64)
		count, _ := index[i+1].(int64)
		for j := int64(0); j < count; j++ {
			if len(data) < rec {
				return nil // short data: keep what was read
			}
			if j%(1<<16) == 0 {
				if err := d.ctx.Err(); err != nil {
					return err
				}
			}
			e := data[:rec]
			data = data[rec:]
			typ := int64(1) // the default when the type field is absent
			if ws[0] > 0 {
				typ = field(e[:ws[0]])
			}
			f2 := field(e[ws[0] : ws[0]+ws[1]])
			f3 := field(e[ws[0]+ws[1]:])
			switch typ {
			case 1:
				if f2 > 0 && f2 < d.size {
					d.add(start+j, xent{typ: 1, off: f2, gen: int32(f3)})
				}
			case 2:
				if f2 <= 1<<31-1 && f3 <= 1<<31-1 {
					d.add(start+j, xent{typ: 2, stm: int32(f2), idx: int32(f3)})
				}
			}
		}
	}
	return nil
}

// readIndirect reads "num gen obj <object> [stream]" at the lexer; want is
// the object number expected, or -1 for any.
func (d *Doc) readIndirect(l *lexer, want int32) (object, error) {
	t1, t2, t3, err := l.tokens3()
	if err != nil {
		return nil, fmt.Errorf("%w: %w: object header: %v", ErrMalformed, errNeedsRepair, err)
	}
	num, ok1 := t1.(int64)
	gen, ok2 := t2.(int64)
	if !ok1 || !ok2 || t3 != keyword("obj") || num < 0 || num > 1<<31-1 || gen < 0 || gen > 1<<31-1 {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, errNeedsRepair)
	}
	if want >= 0 && num != int64(want) {
		return nil, fmt.Errorf("%w: %w: object %d found where %d was expected", ErrMalformed, errNeedsRepair, num, want)
	}
	obj, err := l.object(0)
	if err != nil {
		return nil, err
	}
	dd, ok := obj.(dict)
	if !ok {
		return obj, nil
	}
	t, err := l.token()
	if err != nil || t != keyword("stream") {
		return dd, nil // "endobj", or a missing one: the dictionary stands
	}
	// The data starts after the end of line that follows "stream".
	if c, ok := l.peek(); ok && c == '\r' {
		l.i++
	}
	if c, ok := l.peek(); ok && c == '\n' {
		l.i++
	}
	return &stream{d: dd, off: l.pos(), num: int32(num), gen: int32(gen)}, nil
}

// get returns the object a reference points to, or nil when there is none.
func (d *Doc) get(r ref) (object, error) {
	if o, ok := d.objs[r]; ok {
		return o, nil
	}
	e, ok := d.xref[r.num]
	if !ok {
		return nil, nil
	}
	var obj object
	var err error
	switch e.typ {
	case 1:
		l := newLexer(io.NewSectionReader(d.f, e.off, d.size-e.off), e.off, true)
		l.parsed = &d.parsed
		obj, err = d.readIndirect(l, r.num)
		// Not where the table says: the table is wrong, rebuild it once.
		if errors.Is(err, errNeedsRepair) && d.looksBroken(err) && d.repair() == nil {
			return d.get(r)
		}
	case 2:
		obj, err = d.fromObjStm(e)
	}
	if err != nil {
		if errors.Is(err, ErrTooLarge) && d.limitErr == nil {
			d.limitErr = err
		}
		if d.parsed > maxParsed && d.fatal == nil {
			d.fatal = err // every object from now on would fail: the document is done for
		}
		return nil, err
	}
	if len(d.objs) >= maxObjCache {
		clear(d.objs)
	}
	d.objs[r] = obj
	return obj, nil
}

func (d *Doc) fromObjStm(e xent) (object, error) {
	if err := d.badStm[e.stm]; err != nil {
		return nil, err
	}
	os, ok := d.objstms[e.stm]
	if !ok {
		// Its /Length may live in an object stream, even this one.
		if d.loading[e.stm] {
			return nil, malformed("object stream %d needs itself", e.stm)
		}
		d.loading[e.stm] = true
		defer delete(d.loading, e.stm)
		if _, isStm := d.xref[e.stm]; !isStm || d.xref[e.stm].typ != 1 {
			return nil, malformed("object stream %d missing", e.stm)
		}
		o, err := d.get(ref{e.stm, 0})
		if err != nil {
			return nil, err
		}
		s, ok := o.(*stream)
		if !ok {
			return nil, malformed("object stream %d is not a stream", e.stm)
		}
		data, err := d.streamBytes(s, maxObjStm)
		if err != nil {
			// A stream that does not decode is not decoded again for each
			// object in it (the repair may ask for many); a deadline is
			// no fault of the stream's.
			if d.ctx.Err() == nil {
				if d.badStm == nil {
					d.badStm = map[int32]error{}
				}
				d.badStm[e.stm] = err
			}
			return nil, err
		}
		n, _ := s.d["N"].(int64)
		first, _ := s.d["First"].(int64)
		if n < 0 || first < 0 || first > int64(len(data)) {
			return nil, malformed("bad object stream %d", e.stm)
		}
		os = &objStm{data: data, first: first, offs: map[int32]int64{}}
		l := newLexer(bytes.NewReader(data[:first]), 0, false)
		for i := int64(0); i < n; i++ {
			a, err1 := l.token()
			b, err2 := l.token()
			num, ok1 := a.(int64)
			off, ok2 := b.(int64)
			if err1 != nil || err2 != nil || !ok1 || !ok2 {
				break
			}
			if num >= 0 && num <= 1<<31-1 && off >= 0 && first+off < int64(len(data)) {
				os.offs[int32(i)] = first + off
				os.nums = append(os.nums, int32(num))
			} else {
				os.nums = append(os.nums, -1)
			}
		}
		d.cacheObjStm(e.stm, os)
	}
	off, ok := os.offs[e.idx]
	if !ok {
		return nil, nil
	}
	l := newLexer(bytes.NewReader(os.data[off:]), 0, true)
	l.parsed = &d.parsed
	obj, err := l.object(0)
	if err != nil {
		return nil, err
	}
	if _, isKw := obj.(keyword); isKw {
		return nil, nil
	}
	return obj, nil
}

// cacheObjStm keeps os, dropping the oldest streams kept while they take
// more than maxObjStmCache bytes. Pages spread over more object streams
// than fit decode them again, each time counted against MaxDecoded: a
// file built to thrash the cache runs out of budget, not of time.
func (d *Doc) cacheObjStm(num int32, os *objStm) {
	size := int64(len(os.data)) + 16*int64(len(os.offs))
	for d.stmBytes+size > maxObjStmCache && len(d.stmOrder) > 0 {
		old := d.stmOrder[0]
		d.stmOrder = d.stmOrder[1:]
		if o := d.objstms[old]; o != nil {
			d.stmBytes -= int64(len(o.data)) + 16*int64(len(o.offs))
			delete(d.objstms, old)
		}
	}
	d.objstms[num] = os
	d.stmOrder = append(d.stmOrder, num)
	d.stmBytes += size
}

// resolve follows references to the object they stand for. Errors on the
// way make it nil: one broken object should not lose a whole page.
func (d *Doc) resolve(o object) object {
	for range maxRefHops {
		r, ok := o.(ref)
		if !ok {
			return o
		}
		var err error
		if o, err = d.get(r); err != nil {
			return nil
		}
	}
	return nil
}

func (d *Doc) dictOf(o object) dict {
	switch v := d.resolve(o).(type) {
	case dict:
		return v
	case *stream:
		return v.d
	}
	return nil
}

func (d *Doc) intOf(o object) (int64, bool) {
	switch v := d.resolve(o).(type) {
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}

func (d *Doc) numOf(o object, def float64) float64 {
	switch v := d.resolve(o).(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return def
}

// streamData is the raw (still encoded) data of s.
func (d *Doc) streamData(s *stream) (*io.SectionReader, error) {
	n, ok := d.intOf(s.d["Length"])
	if ok && n >= 0 && s.off+n <= d.size && d.endstreamAt(s.off+n) {
		return io.NewSectionReader(d.f, s.off, n), nil
	}
	// A wrong /Length: look for the endstream keyword instead.
	end, err := d.findEndstream(s.off)
	if err != nil {
		return nil, err
	}
	return io.NewSectionReader(d.f, s.off, end-s.off), nil
}

func (d *Doc) endstreamAt(off int64) bool {
	buf := make([]byte, 32)
	n, _ := d.f.ReadAt(buf, off)
	return bytes.Contains(buf[:n], []byte("endstream"))
}

func (d *Doc) findEndstream(off int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk+16)
	for pos := off; pos < d.size && pos-off < MaxDecoded; pos += chunk {
		n, err := d.f.ReadAt(buf, pos)
		// Scanning counts as decoding: a file of many streams with wrong
		// lengths and no end would have each scan the rest of the file.
		if e := d.spend(n); e != nil {
			return 0, e
		}
		if i := bytes.Index(buf[:n], []byte("endstream")); i >= 0 {
			end := pos + int64(i)
			// The end of line before endstream is not data.
			for end > off {
				var c [1]byte
				if _, err := d.f.ReadAt(c[:], end-1); err != nil || (c[0] != '\n' && c[0] != '\r') {
					break
				}
				end--
			}
			return end, nil
		}
		if err != nil {
			break
		}
	}
	return 0, malformed("stream without an end")
}

// streamBytes decodes all of s, at most limit bytes.
func (d *Doc) streamBytes(s *stream, limit int64) ([]byte, error) {
	r, err := d.streamReader(s)
	if err != nil {
		return nil, err
	}
	// Read in chunks and joined once: io.ReadAll's doubling would leave
	// twice the stream as garbage, and a file may ask for many streams
	// just under the limit.
	var chunks [][]byte
	var total int64
	for size := 4 << 10; ; size = min(2*size, 256<<10) {
		c := make([]byte, size)
		n, err := io.ReadFull(r, c)
		total += int64(n)
		if total > limit {
			return nil, tooLarge("this PDF has a stream of more than %d MB, more than botd reads for one file", mb(limit))
		}
		if n > 0 {
			chunks = append(chunks, c[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrTooLarge) || d.ctx.Err() != nil {
				return nil, err
			}
			return nil, malformed("stream: %v", err)
		}
	}
	b := make([]byte, 0, total)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b, nil
}

// streamReader decodes s as it is read.
func (d *Doc) streamReader(s *stream) (io.Reader, error) {
	if err := d.stopped(); err != nil {
		return nil, err
	}
	raw, err := d.streamData(s)
	if err != nil {
		return nil, err
	}
	var r io.Reader = raw
	if d.crypt != nil && s.d["Type"] != name("XRef") {
		r = d.crypt.decrypt(r, s.num, s.gen)
	}
	filters := d.resolve(s.d["Filter"])
	params := d.resolve(s.d["DecodeParms"])
	var fs, ps array
	switch f := filters.(type) {
	case name:
		fs = array{f}
		ps = array{params}
	case array:
		fs = f
		ps, _ = params.(array)
	}
	if len(fs) > maxFilters {
		return nil, tooLarge("this PDF passes one stream through %d filters; botd decodes at most %d", len(fs), maxFilters)
	}
	for i, f := range fs {
		var p dict
		if i < len(ps) {
			p = d.dictOf(ps[i])
		}
		fn, _ := d.resolve(f).(name)
		if r, err = d.filter(r, fn, p); err != nil {
			return nil, err
		}
		r = &counted{r: r, d: d}
	}
	return r, nil
}

// ErrUnsupportedFilter marks a stream this reader cannot decode (an image
// codec, or a rare one).
var ErrUnsupportedFilter = errors.New("unsupported PDF filter")

func (d *Doc) filter(r io.Reader, f name, p dict) (io.Reader, error) {
	switch f {
	case "FlateDecode", "Fl":
		r = newFlate(r)
		if pred, _ := d.intOf(p["Predictor"]); pred >= 10 {
			cols, ok := d.intOf(p["Columns"])
			if !ok {
				cols = 1
			}
			colors, ok := d.intOf(p["Colors"])
			if !ok {
				colors = 1
			}
			bpc, ok := d.intOf(p["BitsPerComponent"])
			if !ok {
				bpc = 8
			}
			if cols < 1 || colors < 1 || colors > 32 || bpc < 1 || bpc > 16 {
				return nil, malformed("bad predictor parameters")
			}
			// A row is allocated before any data is read: its size is
			// checked against what the whole document may decode to.
			row := (min(cols, 1<<40)*colors*bpc + 7) / 8
			if row > MaxDecoded-d.decoded {
				return nil, overBudget()
			}
			if row > maxPredictorRow {
				return nil, tooLarge("this PDF asks for rows of %d MB in one stream; botd decodes rows of at most %d MB",
					max(1, mb(row)), mb(maxPredictorRow))
			}
			return newPNGPredictor(r, int(row), int((colors*bpc+7)/8)), nil
		} else if pred > 1 {
			return nil, malformed("unsupported predictor %d", pred)
		}
		return r, nil
	case "ASCIIHexDecode", "AHx":
		return newASCIIHex(r), nil
	case "ASCII85Decode", "A85":
		return newASCII85(r), nil
	case "RunLengthDecode", "RL":
		return newRunLength(r), nil
	case "Crypt":
		return r, nil // the stream's own crypt filter: Identity, or what decrypt already did
	}
	return nil, fmt.Errorf("%w %q", ErrUnsupportedFilter, string(f))
}
