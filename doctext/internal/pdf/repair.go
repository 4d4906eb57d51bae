package pdf

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"strconv"
)

// A file whose cross-reference table is missing, cut off, or points at
// the wrong places (a file edited by hand, joined, or written by a
// careless tool) is read as mature readers read it: by scanning the file
// for "N G obj" and taking the last definition of each object, the last
// trailer that names a catalog (or the catalog itself), and the objects
// inside the object streams found.

const (
	// maxRepairScan bounds the bytes scanned: the scan is one pass at
	// disk speed, and larger files with a broken table are refused.
	maxRepairScan = 256 << 20
	repairChunk   = 1 << 20
	// maxRepairStreams bounds the object streams decoded to find their
	// objects (each counted against MaxDecoded as well).
	maxRepairStreams  = 4096
	maxRepairTrailer  = 64     // trailers parsed
	maxRepairCatalogs = 100000 // objects in object streams looked at for the catalog
)

// errNeedsRepair marks an object not where the table says.
var errNeedsRepair = errors.New("object not at its offset")

type evKind int

const (
	evObj evKind = iota
	evTrailer
	evObjStm
	evCatalog
	evXRef
)

// event is something the scan saw at offset at of a chunk.
type event struct {
	kind evKind
	at   int
	num  int32
	gen  int32
}

// scanChunk finds, in order, the object headers ("N G obj"), trailers and
// the /Type of object streams, catalogs and cross-reference streams that
// start in the first repairChunk bytes of chunk (the rest is the next
// chunk's, seen here so that what crosses the boundary is whole). prev is
// the byte before the chunk. bytes.Index is used, not a regexp: the scan
// must run at the speed of memory.
func scanChunk(chunk []byte, prev byte) []event {
	var evs []event
	limit := min(len(chunk), repairChunk)
	for i := 0; ; {
		j := bytes.Index(chunk[i:], []byte("obj"))
		if j < 0 {
			break
		}
		at := i + j
		i = at + 3
		if at+3 < len(chunk) && !isSpace(chunk[at+3]) && !isDelim(chunk[at+3]) {
			continue
		}
		// Back over: white space, the generation, white space, the number.
		k := at
		sp := func() bool {
			s := k
			for k > 0 && isSpace(chunk[k-1]) {
				k--
			}
			return k < s
		}
		digits := func(max int) (int64, bool) {
			e := k
			for k > 0 && e-k < max && chunk[k-1] >= '0' && chunk[k-1] <= '9' {
				k--
			}
			if k == e {
				return 0, false
			}
			v, err := strconv.ParseInt(string(chunk[k:e]), 10, 64)
			return v, err == nil
		}
		if !sp() {
			continue
		}
		gen, ok := digits(5)
		if !ok || !sp() {
			continue
		}
		num, ok := digits(10)
		if !ok || num > 1<<31-1 || k >= limit {
			continue
		}
		before := prev
		if k > 0 {
			before = chunk[k-1]
		}
		if before >= '0' && before <= '9' {
			continue
		}
		evs = append(evs, event{kind: evObj, at: k, num: int32(num), gen: int32(gen)})
	}
	for i := 0; ; {
		j := bytes.Index(chunk[i:], []byte("trailer"))
		if j < 0 || i+j >= limit {
			break
		}
		evs = append(evs, event{kind: evTrailer, at: i + j})
		i += j + 7
	}
	for i := 0; ; {
		j := bytes.Index(chunk[i:], []byte("/Type"))
		if j < 0 || i+j >= limit {
			break
		}
		at := i + j
		i = at + 5
		k := i
		for k < len(chunk) && isSpace(chunk[k]) {
			k++
		}
		for _, t := range []struct {
			s    string
			kind evKind
		}{{"/ObjStm", evObjStm}, {"/Catalog", evCatalog}, {"/XRef", evXRef}} {
			if e := k + len(t.s); bytes.HasPrefix(chunk[k:], []byte(t.s)) && (e >= len(chunk) || isSpace(chunk[e]) || isDelim(chunk[e])) {
				evs = append(evs, event{kind: t.kind, at: at})
			}
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs
}

// repair rebuilds the cross-reference table by scanning the file. It runs
// once per document.
func (d *Doc) repair() error {
	if d.repaired {
		return d.repairErr
	}
	d.repaired = true
	d.repairErr = d.rebuild()
	return d.repairErr
}

func (d *Doc) rebuild() error {
	if d.size > maxRepairScan {
		return tooLarge("the cross-reference table of this PDF is broken, and at %d MB it is too large to rebuild (botd rebuilds files of up to %d MB)",
			mb(d.size), mb(maxRepairScan))
	}
	found := map[int32]xent{}
	var trailers []int64
	var catalogs, objstms, xrefs []int32
	last := int32(-1) // the object whose header was seen last
	buf := make([]byte, repairChunk+64)
	var prev byte = '\n'
	for pos := int64(0); pos < d.size; pos += repairChunk {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		n, err := d.f.ReadAt(buf, pos)
		if n == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		chunk := buf[:n]
		for _, ev := range scanChunk(chunk, prev) {
			switch ev.kind {
			case evObj:
				last = ev.num
				// A later definition is a newer one (incremental updates).
				if _, ok := found[last]; ok || int64(len(found)) < d.maxEntries() {
					found[last] = xent{typ: 1, off: pos + int64(ev.at), gen: ev.gen}
				}
			case evTrailer:
				trailers = append(trailers[max(0, len(trailers)-maxRepairTrailer+1):], pos+int64(ev.at)+int64(len("trailer")))
			case evObjStm:
				if last >= 0 && len(objstms) < maxRepairStreams {
					objstms = append(objstms, last)
				}
			case evCatalog:
				if last >= 0 {
					catalogs = append(catalogs[max(0, len(catalogs)-15):], last)
				}
			case evXRef:
				if last >= 0 {
					xrefs = append(xrefs[max(0, len(xrefs)-15):], last)
				}
			}
		}
		prev = chunk[min(n, repairChunk)-1]
		if err != nil {
			break
		}
	}
	if len(found) == 0 {
		return malformed("no objects found")
	}
	old := d.xref
	d.xref = found
	for num, e := range old {
		if _, ok := d.xref[num]; !ok && e.typ == 2 {
			d.xref[num] = e
		}
	}
	clear(d.objs)
	// The trailers found, newest first: the one read from the table,
	// the "trailer" dictionaries, the cross-reference streams'.
	cands := []dict{d.trailer}
	for i := len(trailers) - 1; i >= 0; i-- {
		l := newLexer(io.NewSectionReader(d.f, trailers[i], d.size-trailers[i]), trailers[i], true)
		l.parsed = &d.parsed
		if t, err := l.object(0); err == nil {
			if td, ok := t.(dict); ok {
				cands = append(cands, td)
			}
		}
	}
	for i := len(xrefs) - 1; i >= 0; i-- {
		if s, ok := d.resolve(ref{xrefs[i], found[xrefs[i]].gen}).(*stream); ok {
			cands = append(cands, s.d)
		}
	}
	// An encrypted file's object streams need its key.
	if d.crypt == nil {
		for _, t := range cands {
			if t == nil || t["Encrypt"] == nil {
				continue
			}
			old := d.trailer
			d.trailer = t
			c, err := d.openCrypt()
			d.trailer = old
			if err == nil {
				d.crypt = c
				break
			}
		}
	}
	// The objects kept in object streams: those the scan cannot see.
	d.objstms, d.stmOrder, d.stmBytes, d.badStm = map[int32]*objStm{}, nil, 0, nil
	clear(d.objs)
	for _, stm := range objstms {
		if d.stopped() != nil {
			return d.stopped()
		}
		if _, err := d.fromObjStm(xent{typ: 2, stm: stm, idx: 0}); err != nil && errors.Is(err, ErrTooLarge) {
			return err
		}
		if os := d.objstms[stm]; os != nil {
			for idx, num := range os.nums {
				if _, ok := d.xref[num]; !ok && num >= 0 && int64(len(d.xref)) < d.maxEntries() {
					d.xref[num] = xent{typ: 2, stm: stm, idx: int32(idx)}
				}
			}
		}
	}
	// The trailer: the newest whose catalog can be read, else the last
	// catalog found, else one inside an object stream.
	for _, t := range cands {
		if d.useTrailer(t) {
			return nil
		}
	}
	for i := len(catalogs) - 1; i >= 0; i-- {
		if d.useTrailer(withRoot(d.trailer, ref{catalogs[i], found[catalogs[i]].gen})) {
			return nil
		}
	}
	// A catalog inside an object stream, which the scan cannot see.
	n := 0
	for num, e := range d.xref {
		if e.typ != 2 || d.stopped() != nil {
			continue
		}
		if n++; n > maxRepairCatalogs {
			break
		}
		r := ref{num, 0}
		if cat := d.dictOf(r); cat != nil && cat["Type"] == name("Catalog") && d.useTrailer(withRoot(d.trailer, r)) {
			return nil
		}
	}
	return malformed("no document catalog (/Root), even after scanning the file")
}

// catalogOK is whether trailer t names a catalog that can be read.
func (d *Doc) catalogOK(t dict) bool {
	if t == nil {
		return false
	}
	root := d.dictOf(t["Root"])
	return root != nil && root["Pages"] != nil
}

// useTrailer takes t as the trailer if its catalog can be read, with its
// encryption (a catalog in an encrypted object stream needs the key).
func (d *Doc) useTrailer(t dict) bool {
	if t == nil || t["Root"] == nil {
		return false
	}
	old, oldCrypt := d.trailer, d.crypt
	d.trailer = t
	if t["Encrypt"] != nil && d.crypt == nil {
		if c, err := d.openCrypt(); err == nil {
			d.crypt = c
		}
	}
	if d.catalogOK(t) {
		return true
	}
	if d.crypt != oldCrypt {
		// What was decoded with another key is no good.
		d.objstms, d.stmOrder, d.stmBytes, d.badStm = map[int32]*objStm{}, nil, 0, nil
	}
	d.trailer, d.crypt = old, oldCrypt
	clear(d.objs)
	return false
}

// withRoot is a trailer for catalog r, with the encryption and file
// identifier of trailer t.
func withRoot(t dict, r ref) dict {
	td := dict{"Root": r}
	for _, k := range []name{"Encrypt", "ID", "Info"} {
		if v, ok := t[k]; ok {
			td[k] = v
		}
	}
	return td
}

// looksBroken is whether err is the file's fault in a way a rebuilt
// table may mend (not a limit, not the deadline, not a password).
func (d *Doc) looksBroken(err error) bool {
	return err != nil && !d.repaired && d.stopped() == nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrEncrypted)
}
