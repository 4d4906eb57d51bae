package pdf

import (
	"bufio"
	"compress/flate"
	"compress/zlib"
	"encoding/ascii85"
	"io"
)

// flateReader inflates a FlateDecode stream. Producers get the zlib
// wrapper wrong at times (no header, a bad checksum, a cut-off end), so
// it falls back to raw deflate and treats an error after some data as
// the end of the data: what came out before it is still worth reading.
type flateReader struct {
	r   io.Reader
	got bool
}

func newFlate(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	h, _ := br.Peek(2)
	var zr io.Reader
	if len(h) == 2 && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		z, err := zlib.NewReader(br)
		if err != nil {
			return &errReader{malformed("flate: %v", err)}
		}
		zr = z
	} else {
		zr = flate.NewReader(br)
	}
	return &flateReader{r: zr}
}

func (f *flateReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 {
		f.got = true
	}
	if err != nil && err != io.EOF {
		if f.got {
			return n, io.EOF
		}
		return n, malformed("flate: %v", err)
	}
	return n, err
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// pngPredictor undoes the PNG row filters (predictors 10-15).
type pngPredictor struct {
	r         io.Reader
	bpp       int
	prev, cur []byte
	pend      []byte
	err       error
}

func newPNGPredictor(r io.Reader, rowLen, bpp int) io.Reader {
	return &pngPredictor{r: r, bpp: bpp, prev: make([]byte, rowLen), cur: make([]byte, rowLen+1)}
}

func (p *pngPredictor) Read(b []byte) (int, error) {
	for len(p.pend) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		if _, err := io.ReadFull(p.r, p.cur); err != nil {
			if err == io.ErrUnexpectedEOF {
				err = io.EOF // a short last row: drop it
			}
			p.err = err
			continue
		}
		row := p.cur[1:]
		switch p.cur[0] {
		case 0:
		case 1:
			for i := p.bpp; i < len(row); i++ {
				row[i] += row[i-p.bpp]
			}
		case 2:
			for i := range row {
				row[i] += p.prev[i]
			}
		case 3:
			for i := range row {
				var left byte
				if i >= p.bpp {
					left = row[i-p.bpp]
				}
				row[i] += byte((int(left) + int(p.prev[i])) / 2)
			}
		case 4:
			for i := range row {
				var a, c byte
				if i >= p.bpp {
					a, c = row[i-p.bpp], p.prev[i-p.bpp]
				}
				row[i] += paeth(a, p.prev[i], c)
			}
		default:
			p.err = malformed("bad PNG predictor %d", p.cur[0])
			continue
		}
		copy(p.prev, row)
		p.pend = p.prev
	}
	n := copy(b, p.pend)
	p.pend = p.pend[n:]
	return n, nil
}

func paeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := abs(p-int(a)), abs(p-int(b)), abs(p-int(c))
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type asciiHex struct {
	r    *bufio.Reader
	done bool
	hi   byte
	half bool // hi holds the first digit of a pair
}

func newASCIIHex(r io.Reader) io.Reader { return &asciiHex{r: bufio.NewReader(r)} }

func (a *asciiHex) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && !a.done {
		c, err := a.r.ReadByte()
		if err != nil || c == '>' {
			a.done = true
			break
		}
		v, ok := unhex(c)
		if !ok {
			continue
		}
		if a.half {
			b[n] = a.hi<<4 | v
			n++
		} else {
			a.hi = v
		}
		a.half = !a.half
	}
	if a.done && a.half && n < len(b) {
		b[n] = a.hi << 4
		n++
		a.half = false
	}
	if n == 0 && a.done {
		return 0, io.EOF
	}
	return n, nil
}

// newASCII85 strips what encoding/ascii85 does not expect: white space,
// the "<~" some producers add and everything from the "~>" end marker.
func newASCII85(r io.Reader) io.Reader {
	return ascii85.NewDecoder(&a85Clean{r: bufio.NewReader(r)})
}

type a85Clean struct {
	r     *bufio.Reader
	done  bool
	start bool
}

func (a *a85Clean) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && !a.done {
		c, err := a.r.ReadByte()
		if err != nil {
			a.done = true
			break
		}
		if isSpace(c) {
			continue
		}
		if c == '~' {
			a.done = true
			break
		}
		if c == '<' && !a.start {
			if nx, _ := a.r.Peek(1); len(nx) == 1 && nx[0] == '~' {
				a.r.ReadByte()
				a.start = true
				continue
			}
		}
		a.start = true
		b[n] = c
		n++
	}
	if n == 0 && a.done {
		return 0, io.EOF
	}
	return n, nil
}

type runLength struct {
	r    *bufio.Reader
	pend []byte
	buf  [128]byte
	done bool
}

func newRunLength(r io.Reader) io.Reader { return &runLength{r: bufio.NewReader(r)} }

func (rl *runLength) Read(b []byte) (int, error) {
	for len(rl.pend) == 0 {
		if rl.done {
			return 0, io.EOF
		}
		c, err := rl.r.ReadByte()
		if err != nil || c == 128 {
			rl.done = true
			continue
		}
		if c < 128 {
			n, _ := io.ReadFull(rl.r, rl.buf[:int(c)+1])
			rl.pend = rl.buf[:n]
			if n < int(c)+1 {
				rl.done = true
			}
			continue
		}
		v, err := rl.r.ReadByte()
		if err != nil {
			rl.done = true
			continue
		}
		k := 257 - int(c)
		for i := range k {
			rl.buf[i] = v
		}
		rl.pend = rl.buf[:k]
	}
	n := copy(b, rl.pend)
	rl.pend = rl.pend[n:]
	return n, nil
}
