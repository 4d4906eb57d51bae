package pdf

import (
	"bytes"
	"compress/flate"
	"embed"
	"encoding/binary"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
)

//go:generate go run ./cmapgen -src /usr/share/poppler/cMap -out cmaps

// cmapFiles are Adobe's predefined CMaps and the CID to Unicode maps of
// the CJK character collections, compacted by cmapgen (cmaps/README.md).
//
//go:embed cmaps
var cmapFiles embed.FS

// cmapTable maps codes (of 1 to 4 bytes) to CIDs, or CIDs to Unicode.
type cmapTable struct {
	coll     string // "Adobe-Japan1"
	vertical bool
	toUni    bool // CIDs to Unicode, not codes to CIDs
	spaces   []csRange
	ranges   [5][]cmapRange // by code length
	seqs     map[uint32]string
	size     int // bytes held, for the cache
}

// cmapRange maps lo…hi to dst, dst+1, …
type cmapRange struct{ lo, hi, dst uint32 }

// lookup is the destination of code, n bytes long.
func (t *cmapTable) lookup(code uint32, n int) (uint32, bool) {
	if n < 1 || n > 4 {
		return 0, false
	}
	rs := t.ranges[n]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].hi >= code })
	if i < len(rs) && rs[i].lo <= code {
		return rs[i].dst + code - rs[i].lo, true
	}
	return 0, false
}

// text is the Unicode text of cid in a to-Unicode table.
func (t *cmapTable) text(cid uint32) string {
	if s, ok := t.seqs[cid]; ok {
		return s
	}
	r, ok := t.lookup(cid, 2)
	if !ok || r == 0xFFFD || r > 0x10FFFF || (r >= 0xD800 && r < 0xE000) {
		return ""
	}
	return string(rune(r))
}

// The decoded tables are kept for the life of the process: there are 65
// of them, a few megabytes if every one were asked for, and decoding one
// takes a millisecond.
var predefined struct {
	sync.Mutex
	m map[string]*cmapTable
}

// predefinedCMap is the embedded table of that name, or nil.
func predefinedCMap(name string) *cmapTable {
	if name == "" || strings.ContainsAny(name, "/\\.") || len(name) > 64 {
		return nil
	}
	predefined.Lock()
	defer predefined.Unlock()
	if t, ok := predefined.m[name]; ok {
		return t
	}
	if predefined.m == nil {
		predefined.m = map[string]*cmapTable{}
	}
	var t *cmapTable
	if z, err := cmapFiles.ReadFile("cmaps/" + name); err == nil {
		if t, err = decodeCMap(z); err != nil {
			t = nil // a table that does not decode is a bug in cmapgen: read as without it
		}
	}
	predefined.m[name] = t
	return t
}

// maxCMapTable bounds a decoded table (the largest is under 1 MiB).
const maxCMapTable = 4 << 20

var errCMapTable = errors.New("bad cmap table")

// decodeCMap reads cmapgen's format (see its encode).
func decodeCMap(z []byte) (*cmapTable, error) {
	data, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), maxCMapTable))
	if err != nil {
		return nil, err
	}
	r := bytes.NewReader(data)
	magic := make([]byte, 4)
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "BCM1" {
		return nil, errCMapTable
	}
	flags, _ := r.ReadByte()
	cl, _ := r.ReadByte()
	coll := make([]byte, cl)
	if _, err := io.ReadFull(r, coll); err != nil {
		return nil, errCMapTable
	}
	t := &cmapTable{coll: string(coll), vertical: flags&1 != 0, toUni: flags&2 != 0, size: len(data)}
	uv := func() uint32 {
		v, e := binary.ReadUvarint(r)
		if e != nil && err == nil {
			err = e
		}
		return uint32(v)
	}
	ns := uv()
	for range min(ns, 64) {
		n, _ := r.ReadByte()
		lo, hi := uv(), uv()
		t.spaces = append(t.spaces, csRange{n: int(n), lo: lo, hi: hi})
	}
	count := uv()
	n, next, nextDst := 0, uint32(0), uint32(0)
	for i := uint32(0); i < count && err == nil; i++ {
		b, e := r.ReadByte()
		if e != nil || b < 1 || b > 4 {
			return nil, errCMapTable
		}
		if int(b) != n {
			n, next, nextDst = int(b), 0, 0
		}
		lo := next + uv()
		hi := lo + uv()
		if seq := uv(); seq > 0 {
			var s strings.Builder
			for range min(seq, 16) {
				s.WriteRune(rune(uv()))
			}
			if t.seqs == nil {
				t.seqs = map[uint32]string{}
			}
			t.seqs[lo] = s.String()
			t.size += 32
		} else {
			d, e := binary.ReadVarint(r)
			if e != nil {
				return nil, errCMapTable
			}
			dst := uint32(int64(nextDst) + d)
			t.ranges[n] = append(t.ranges[n], cmapRange{lo: lo, hi: hi, dst: dst})
			nextDst = dst + hi - lo + 1
			t.size += 12
		}
		next = hi + 1
	}
	if err != nil {
		return nil, errCMapTable
	}
	return t, nil
}

// collectionToUnicode is the CID to Unicode table of a character
// collection named by its registry and ordering, or nil.
func collectionToUnicode(registry, ordering string) *cmapTable {
	if registry != "Adobe" {
		return nil
	}
	switch ordering {
	case "Japan1", "GB1", "CNS1", "Korea1", "KR":
		return predefinedCMap("Adobe-" + ordering + "-UCS2")
	}
	return nil
}
