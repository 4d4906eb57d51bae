// Command cmapgen builds the compact CMap tables the PDF reader embeds
// (doctext/internal/pdf/cmaps) from Adobe's published CMap resources:
// the predefined encoding CMaps a CID font's /Encoding may name (code to
// CID) and the Adobe-*-UCS2 maps of the character collections (CID to
// Unicode), which give the text of CJK fonts that carry no ToUnicode map.
//
// The sources are Adobe's cmap-resources (BSD-3-Clause), as Debian's
// poppler-data installs them:
//
//	go run ./cmapgen -src /usr/share/poppler/cMap -out cmaps
//
// Each table is written as one DEFLATE-compressed file of varint-coded
// ranges (see table.go in the reader for the format), with usecmap
// resolved, so the reader decodes one table when a font first needs it.
package main

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// encodings are the predefined CMaps of PDF 32000-1 table 118 (Identity-H
// and -V are built into the reader).
var encodings = map[string][]string{
	"Adobe-GB1": {"GB-EUC-H", "GB-EUC-V", "GBpc-EUC-H", "GBpc-EUC-V", "GBK-EUC-H", "GBK-EUC-V", "GBKp-EUC-H",
		"GBKp-EUC-V", "GBK2K-H", "GBK2K-V", "UniGB-UCS2-H", "UniGB-UCS2-V", "UniGB-UTF16-H", "UniGB-UTF16-V"},
	"Adobe-CNS1": {"B5pc-H", "B5pc-V", "HKscs-B5-H", "HKscs-B5-V", "ETen-B5-H", "ETen-B5-V", "ETenms-B5-H",
		"ETenms-B5-V", "CNS-EUC-H", "CNS-EUC-V", "UniCNS-UCS2-H", "UniCNS-UCS2-V", "UniCNS-UTF16-H", "UniCNS-UTF16-V"},
	"Adobe-Japan1": {"83pv-RKSJ-H", "90ms-RKSJ-H", "90ms-RKSJ-V", "90msp-RKSJ-H", "90msp-RKSJ-V", "90pv-RKSJ-H",
		"Add-RKSJ-H", "Add-RKSJ-V", "EUC-H", "EUC-V", "Ext-RKSJ-H", "Ext-RKSJ-V", "H", "V", "UniJIS-UCS2-H",
		"UniJIS-UCS2-V", "UniJIS-UCS2-HW-H", "UniJIS-UCS2-HW-V", "UniJIS-UTF16-H", "UniJIS-UTF16-V"},
	"Adobe-Korea1": {"KSC-EUC-H", "KSC-EUC-V", "KSCms-UHC-H", "KSCms-UHC-V", "KSCms-UHC-HW-H", "KSCms-UHC-HW-V",
		"KSCpc-EUC-H", "UniKS-UCS2-H", "UniKS-UCS2-V", "UniKS-UTF16-H", "UniKS-UTF16-V"},
}

// collections are the CID to Unicode maps.
var collections = []string{"Adobe-GB1", "Adobe-CNS1", "Adobe-Japan1", "Adobe-Korea1", "Adobe-KR"}

func main() {
	src := flag.String("src", "/usr/share/poppler/cMap", "directory of Adobe's CMap resources, one folder per collection")
	out := flag.String("out", "cmaps", "directory to write the tables to")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	var total int
	write := func(name string, t *table) {
		b := t.encode()
		var z bytes.Buffer
		w, _ := flate.NewWriter(&z, flate.BestCompression)
		w.Write(b)
		w.Close()
		if err := os.WriteFile(filepath.Join(*out, name), z.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		total += z.Len()
	}
	for coll, names := range encodings {
		for _, n := range names {
			t, err := load(filepath.Join(*src, coll), n, 0)
			if err != nil {
				log.Fatalf("%s: %v", n, err)
			}
			t.coll = coll
			write(n, t)
		}
	}
	for _, coll := range collections {
		t, err := load(filepath.Join(*src, coll), coll+"-UCS2", 0)
		if err != nil {
			log.Fatalf("%s: %v", coll, err)
		}
		t.unicode, t.coll = true, coll
		write(coll+"-UCS2", t)
	}
	fmt.Fprintf(os.Stderr, "cmapgen: %d bytes\n", total)
}

type entry struct {
	n      int // code length in bytes
	lo, hi uint32
	dst    uint32   // first CID or code point
	seq    []uint32 // a destination of several code points (one code)
}

type table struct {
	coll    string // the character collection, as "Adobe-Japan1"
	unicode bool
	wmode   int
	spaces  []entry
	entries [5][]entry // by code length, sorted, not overlapping
}

// add puts e in the table over what it covers: a vertical CMap changes
// single codes inside the ranges of the horizontal one it uses.
func (t *table) add(e entry) {
	es := t.entries[e.n]
	if len(es) == 0 || es[len(es)-1].hi < e.lo {
		t.entries[e.n] = append(es, e) // files list their codes in order
		return
	}
	i := sort.Search(len(es), func(i int) bool { return es[i].hi >= e.lo })
	var keep []entry
	j := i
	for ; j < len(es) && es[j].lo <= e.hi; j++ {
		o := es[j]
		if o.lo < e.lo {
			left := o
			left.hi = e.lo - 1
			keep = append(keep, left)
		}
		if o.hi > e.hi {
			right := o
			right.lo = e.hi + 1
			if right.seq == nil {
				right.dst = o.dst + (right.lo - o.lo)
			}
			keep = append(keep, right)
		}
	}
	var mid []entry
	for _, k := range keep {
		if k.hi < e.lo {
			mid = append(mid, k)
		}
	}
	mid = append(mid, e)
	for _, k := range keep {
		if k.lo > e.hi {
			mid = append(mid, k)
		}
	}
	out := append(append(append([]entry(nil), es[:i]...), mid...), es[j:]...)
	t.entries[e.n] = out
}

// load reads CMap file name from dir, with the CMap it uses.
func load(dir, name string, depth int) (*table, error) {
	if depth > 4 {
		return nil, fmt.Errorf("usecmap too deep")
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	t := &table{}
	toks := tokens(data)
	var stack []string
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		switch tok {
		case "usecmap":
			if len(stack) == 0 || !strings.HasPrefix(stack[len(stack)-1], "/") {
				return nil, fmt.Errorf("bad usecmap")
			}
			base, err := load(dir, stack[len(stack)-1][1:], depth+1)
			if err != nil {
				return nil, err
			}
			t.spaces = append(t.spaces, base.spaces...)
			t.entries = base.entries
		case "def":
			if len(stack) >= 2 && stack[len(stack)-2] == "/WMode" {
				t.wmode, _ = strconv.Atoi(stack[len(stack)-1])
			}
		case "begincodespacerange", "begincidrange", "begincidchar", "beginbfchar", "beginbfrange":
			end := "end" + strings.TrimPrefix(tok, "begin")
			j := i + 1
			for j < len(toks) && toks[j] != end {
				j++
			}
			if err := t.section(tok, toks[i+1:j]); err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
			i = j
		}
		stack = append(stack, tok)
	}
	return t, nil
}

func (t *table) section(kind string, toks []string) error {
	per := map[string]int{"begincodespacerange": 2, "begincidrange": 3, "begincidchar": 2, "beginbfchar": 2, "beginbfrange": 3}[kind]
	if len(toks)%per != 0 {
		return fmt.Errorf("%s: %d tokens", kind, len(toks))
	}
	for i := 0; i < len(toks); i += per {
		lo, n, err := hexCode(toks[i])
		if err != nil {
			return err
		}
		hi, dstTok := lo, toks[i+1]
		if per == 3 {
			if hi, _, err = hexCode(toks[i+1]); err != nil {
				return err
			}
			dstTok = toks[i+2]
		}
		switch kind {
		case "begincodespacerange":
			if hi, _, err = hexCode(toks[i+1]); err != nil {
				return err
			}
			t.spaces = append(t.spaces, entry{n: n, lo: lo, hi: hi})
			continue
		case "begincidrange", "begincidchar":
			cid, err := strconv.ParseUint(dstTok, 10, 32)
			if err != nil {
				return err
			}
			t.add(entry{n: n, lo: lo, hi: hi, dst: uint32(cid)})
		default: // bf: UTF-16BE destinations
			b, err := hexBytes(dstTok)
			if err != nil {
				return err
			}
			var u []uint16
			for k := 0; k+1 < len(b); k += 2 {
				u = append(u, uint16(b[k])<<8|uint16(b[k+1]))
			}
			rs := utf16.Decode(u)
			if len(rs) == 0 {
				continue
			}
			if len(rs) == 1 {
				t.add(entry{n: n, lo: lo, hi: hi, dst: uint32(rs[0])})
				continue
			}
			for c := lo; c <= hi; c++ { // sequences: the last code point counts up
				seq := make([]uint32, len(rs))
				for k, r := range rs {
					seq[k] = uint32(r)
				}
				seq[len(seq)-1] += c - lo
				t.add(entry{n: n, lo: c, hi: c, seq: seq})
			}
		}
	}
	return nil
}

// encode writes the table: magic, flags (1: vertical, 2: to Unicode),
// the collection's name (a length byte first), code spaces, then ranges sorted
// by code length and code, each as the gap from the last one's end, its
// length, and its destination as a change from what would follow the
// last one's (zigzag). Adjacent ranges that continue each other merge.
func (t *table) encode() []byte {
	var es []entry
	for _, byLen := range t.entries {
		es = append(es, byLen...)
	}
	var merged []entry
	for _, e := range es {
		if k := len(merged) - 1; k >= 0 && e.seq == nil && merged[k].seq == nil && merged[k].n == e.n &&
			merged[k].hi+1 == e.lo && merged[k].dst+(merged[k].hi-merged[k].lo)+1 == e.dst {
			merged[k].hi = e.hi
			continue
		}
		merged = append(merged, e)
	}
	var b []byte
	b = append(b, "BCM1"...)
	flags := byte(t.wmode & 1)
	if t.unicode {
		flags |= 2
	}
	b = append(b, flags, byte(len(t.coll)))
	b = append(b, t.coll...)
	b = binary.AppendUvarint(b, uint64(len(t.spaces)))
	for _, s := range t.spaces {
		b = append(b, byte(s.n))
		b = binary.AppendUvarint(b, uint64(s.lo))
		b = binary.AppendUvarint(b, uint64(s.hi))
	}
	b = binary.AppendUvarint(b, uint64(len(merged)))
	n, next, nextDst := 0, uint32(0), uint32(0)
	for _, e := range merged {
		if e.n != n {
			n, next, nextDst = e.n, 0, 0
		}
		b = append(b, byte(e.n))
		b = binary.AppendUvarint(b, uint64(e.lo-next))
		b = binary.AppendUvarint(b, uint64(e.hi-e.lo))
		if e.seq != nil {
			b = binary.AppendUvarint(b, uint64(len(e.seq)))
			for _, r := range e.seq {
				b = binary.AppendUvarint(b, uint64(r))
			}
		} else {
			b = binary.AppendUvarint(b, 0)
			b = binary.AppendVarint(b, int64(e.dst)-int64(nextDst))
			nextDst = e.dst + (e.hi - e.lo) + 1
		}
		next = e.hi + 1
	}
	return b
}

// tokens splits PostScript into the tokens a CMap uses: <hex>, /names,
// numbers and keywords; comments and (strings) are dropped.
func tokens(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '%'); i >= 0 {
			line = line[:i]
		}
		for len(line) > 0 {
			line = strings.TrimLeft(line, " \t\r")
			if line == "" {
				break
			}
			switch line[0] {
			case '<':
				j := strings.IndexByte(line, '>')
				if j < 0 {
					j = len(line) - 1
				}
				out = append(out, strings.ReplaceAll(line[:j+1], " ", ""))
				line = line[j+1:]
			case '(':
				j := strings.IndexByte(line, ')')
				if j < 0 {
					j = len(line) - 1
				}
				line = line[j+1:]
			case '[', ']', '{', '}':
				out = append(out, line[:1])
				line = line[1:]
			default:
				j := strings.IndexAny(line[1:], " \t\r<([]{}/")
				if j < 0 {
					j = len(line) - 1
				}
				out = append(out, line[:j+1])
				line = line[j+1:]
			}
		}
	}
	return out
}

func hexBytes(tok string) ([]byte, error) {
	if len(tok) < 2 || tok[0] != '<' || tok[len(tok)-1] != '>' {
		return nil, fmt.Errorf("not a hex string: %q", tok)
	}
	h := tok[1 : len(tok)-1]
	if len(h)%2 == 1 {
		h += "0"
	}
	b := make([]byte, len(h)/2)
	for i := range b {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, err
		}
		b[i] = byte(v)
	}
	return b, nil
}

func hexCode(tok string) (uint32, int, error) {
	b, err := hexBytes(tok)
	if err != nil || len(b) == 0 || len(b) > 4 {
		return 0, 0, fmt.Errorf("bad code %q", tok)
	}
	var c uint32
	for _, x := range b {
		c = c<<8 | uint32(x)
	}
	return c, len(b), nil
}
