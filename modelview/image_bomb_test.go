package modelview

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/internal/box"
	registry "github.com/botd-dev/botd/tools"
)

// The bombs of issue 13 are built here rather than checked in: a few
// hundred KB of bytes that declare 8001x4998 pixels and decode validly,
// so without a budget the decoder really allocates what they declare.

// progressiveJPEG is a valid progressive (SOF2) JPEG of w×h with a single
// DC scan of all-zero differences: a flat grey image whose entropy data is
// one bit per 8x8 block. 4:4:4 makes Go's decoder keep three full-size
// planes of int32 coefficients (12 bytes a pixel) besides the image.
func progressiveJPEG(w, h int, subsample420 bool) []byte {
	var b bytes.Buffer
	seg := func(marker byte, payload ...byte) {
		b.Write([]byte{0xff, marker, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)})
		b.Write(payload)
	}
	b.Write([]byte{0xff, 0xd8}) // SOI
	seg(0xdb, append([]byte{0x00}, bytes.Repeat([]byte{1}, 64)...)...)
	ySampling := byte(0x11)
	mcuW, mcuH, blocksPerMCU := 8, 8, 3
	if subsample420 {
		ySampling, mcuW, mcuH, blocksPerMCU = 0x22, 16, 16, 6
	}
	seg(0xc2, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 3,
		1, ySampling, 0, 2, 0x11, 0, 3, 0x11, 0)
	// DC table 0: one code, "0", for category 0 (a zero difference).
	seg(0xc4, append([]byte{0x00, 1}, append(make([]byte, 15), 0)...)...)
	seg(0xda, 3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 0, 0) // DC first scan, Ss=Se=0
	blocks := ((w + mcuW - 1) / mcuW) * ((h + mcuH - 1) / mcuH) * blocksPerMCU
	b.Write(make([]byte, (blocks+7)/8))
	b.Write([]byte{0xff, 0xd9}) // EOI
	return b.Bytes()
}

// interlacedPNG16 is a valid Adam7-interlaced 16-bit RGBA PNG of w×h, all
// transparent black: Go decodes it into an NRGBA64 (8 bytes a pixel) plus
// one image per pass. The zlib stream is written by hand, since
// compress/flate takes seconds under -race for the ~320 MB of zeros.
func interlacedPNG16(w, h int) []byte {
	var raw int64
	for _, p := range [7][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}} {
		pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
		if pw > 0 && ph > 0 {
			raw += int64(ph) * int64(1+pw*8) // filter byte + 8 bytes a pixel
		}
	}
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	chunk("IHDR", append(ihdr, 16, 6, 0, 0, 1)) // 16-bit RGBA, Adam7
	chunk("IDAT", zlibZeros(raw))
	chunk("IEND", nil)
	return b.Bytes()
}

// zlibZeros is a zlib stream of n zero bytes: one dynamic-Huffman block
// whose codes are "10" for literal 0, "0" for length 258, "0" for distance
// 1 and "11" for end of block, so every 258 bytes cost 2 bits.
func zlibZeros(n int64) []byte {
	var w bitWriter
	w.out = []byte{0x78, 0x01}
	w.bits(1, 1)  // BFINAL
	w.bits(2, 2)  // dynamic Huffman
	w.bits(29, 5) // HLIT: 286 literal/length codes
	w.bits(0, 5)  // HDIST: 1 distance code
	w.bits(14, 4) // HCLEN: 18 code-length codes
	// Code-length code lengths in RFC 1951 order; used: 18 ("0"), 1 ("10"), 2 ("11").
	for _, sym := range []int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1} {
		w.bits(map[int]uint64{18: 1, 1: 2, 2: 2}[sym], 3)
	}
	zeros := func(k uint64) { w.code(0, 1); w.bits(k-11, 7) } // code 18: k zero lengths
	w.code(3, 2)                                              // literal 0: length 2
	zeros(138)
	zeros(117)   // literals 1-255 unused
	w.code(3, 2) // end of block: length 2
	zeros(28)    // lengths 257-284 unused
	w.code(2, 2) // length 258: length 1
	w.code(2, 2) // distance 1: length 1
	w.code(2, 2) // the first zero, as a literal
	for range (n - 1) / 258 {
		w.bits(0, 2) // length 258, distance 1
	}
	for range (n - 1) % 258 {
		w.code(2, 2)
	}
	w.code(3, 2) // end of block
	w.flush()
	// Adler-32 of n zeros: a stays 1, b adds 1 per byte.
	return binary.BigEndian.AppendUint32(w.out, uint32(n%65521)<<16|1)
}

type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

// bits writes v's low n bits, least significant first, as deflate packs
// header fields.
func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	for w.n >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

// code writes an n-bit Huffman code, most significant bit first.
func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := range n {
		r |= (c >> i & 1) << (n - 1 - i)
	}
	w.bits(r, n)
}

func (w *bitWriter) flush() {
	if w.n > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc, w.n = 0, 0
	}
}

// bomb is one input of issue 13, with what it declares.
type bomb struct {
	name, ref, mime, rel string
	data                 func() []byte
	w, h                 int
}

var bombs = []bomb{
	{"progressive-jpeg-8001x4998", "tg_BombJpeg0001", "image/jpeg", "media/tg_BombJpeg0001.jpg",
		func() []byte { return progressiveJPEG(8001, 4998, false) }, 8001, 4998},
	{"png16-interlaced-8001x4998", "tg_BombPng00001", "image/png", "media/tg_BombPng00001.png",
		func() []byte { return interlacedPNG16(8001, 4998) }, 8001, 4998},
}

func TestBombsAreWhatTheyDeclare(t *testing.T) {
	for _, b := range bombs {
		data := b.data()
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != b.w || cfg.Height != b.h {
			t.Fatalf("%s: %s %dx%d, %v", b.name, format, cfg.Width, cfg.Height, err)
		}
		t.Logf("%s: %d bytes declaring %dx%d %s", b.name, len(data), cfg.Width, cfg.Height, format)
	}
	// Small ones decode, so the big ones are valid files, not just headers.
	for _, data := range [][]byte{progressiveJPEG(37, 21, false), progressiveJPEG(37, 21, true), interlacedPNG16(37, 21)} {
		img, _, err := image.Decode(bytes.NewReader(data))
		if err != nil || img.Bounds() != image.Rect(0, 0, 37, 21) {
			t.Fatalf("decode: %v", err)
		}
	}
	if _, err := png.Decode(bytes.NewReader(interlacedPNG16(1, 1))); err != nil {
		t.Fatalf("1x1: %v", err)
	}
}

// TestFetchImageBombs: a bomb gets the path and its dimensions, no
// preview, and the call allocates nowhere near what the image declares.
// TotalAlloc counts every allocation, so the verdict does not depend on
// when the collector ran.
func TestFetchImageBombs(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			h := newFakeHost(t, "family")
			data := b.data()
			h.add(media(b.ref, "Image", b.mime, b.rel, data))
			c := connect(t, newTestServer(t, h, 0))

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": b.ref})
			runtime.ReadMemStats(&after)

			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Errorf("the call allocated %d MB for a %d KB file", grew>>20, len(data)>>10)
			}
			texts, images, emb := parts(t, res)
			if res.IsError || len(images) != 0 || len(emb) != 0 || len(texts) != 1 {
				t.Fatalf("want the path only, got error=%v images=%d embedded=%d %q", res.IsError, len(images), len(emb), texts)
			}
			for _, want := range []string{b.rel, filepath.Join(h.dir, b.rel), "8001x4998", "too large to preview safely"} {
				if !strings.Contains(texts[0], want) {
					t.Errorf("text lacks %q:\n%s", want, texts[0])
				}
			}
		})
	}
}

// TestFetchActiveContentIsPlainText: SVG and HTML can carry scripts, and
// MCP clients render some types (MCP-UI renders text/html and
// text/uri-list resources). What a stranger sent reaches the client as
// plain text or not at all, never under a type that renders; HTML comes
// as the text of the page, its scripts left out.
func TestFetchActiveContentIsPlainText(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(document.cookie)</script><rect width="10" height="10"/></svg>`
	tests := []struct {
		name, mime, rel string
		data            string
		wantText        bool // the source comes along as a text/plain resource
		wantDoc         bool // the text of the page, without its script
	}{
		{"svg", "image/svg+xml", "media/tg_SvgDrawing01.svg", svg, true, false},
		{"svg with xml prolog", "text/xml", "media/tg_SvgDrawing02.svg", `<?xml version="1.0"?>` + svg, true, false},
		{"svg declared as png", "image/svg+xml", "media/tg_SvgDrawing03.png", svg, true, false},
		{"svg not utf-8", "image/svg+xml", "media/tg_SvgDrawing04.svg", strings.Replace(svg, "rect", "r\xe9ct", 1), false, false},
		{"html", "text/html", "media/tg_HtmlPage0001.html.txt", "<html><body><script>alert(1)</script>hello</body></html>", false, true},
		{"xhtml", "application/xhtml+xml", "media/tg_XhtmlPage001.bin", "<html xmlns=\"http://www.w3.org/1999/xhtml\"><script>alert(1)</script>hello</html>", false, true},
		{"uri list", "text/uri-list", "media/tg_UriList00001.bin", "https://example.com/phish\n", true, false},
		{"html not utf-8", "text/html", "media/tg_HtmlPage0002.html.txt", "<html><script>alert('\xe9')</script>caf\xe9</html>", false, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, "family")
			ref := "tg_Active" + strings.Repeat("0", 6) + strconv.Itoa(i)
			h.add(media(ref, "Document", tc.mime, tc.rel, []byte(tc.data)))
			c := connect(t, newTestServer(t, h, 0))
			res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": ref})
			texts, images, emb := parts(t, res)
			if res.IsError || len(images) != 0 || len(texts) != 1 {
				t.Fatalf("got error=%v images=%d %q", res.IsError, len(images), texts)
			}
			for _, want := range []string{tc.rel, filepath.Join(h.dir, tc.rel)} {
				if !strings.Contains(texts[0], want) {
					t.Errorf("text lacks %q:\n%s", want, texts[0])
				}
			}
			for _, e := range emb {
				switch r := e.Resource.(type) {
				case mcpgo.TextResourceContents:
					if r.MIMEType != "text/plain" {
						t.Errorf("text resource typed %q, want text/plain", r.MIMEType)
					}
				case mcpgo.BlobResourceContents:
					t.Errorf("blob resource typed %q: a client may render it", r.MIMEType)
				default:
					t.Errorf("resource %T", e.Resource)
				}
			}
			if tc.wantDoc && (!strings.Contains(texts[0], "<document ") || !strings.Contains(texts[0], "caf") && !strings.Contains(texts[0], "hello") ||
				strings.Contains(texts[0], "alert")) {
				t.Errorf("want the page's text without its script:\n%s", texts[0])
			}
			if tc.wantText {
				if len(emb) != 1 {
					t.Fatalf("want the source as one text/plain resource, got %d resources", len(emb))
				}
				if r, _ := emb[0].Resource.(mcpgo.TextResourceContents); r.Text != tc.data {
					t.Errorf("source changed: %q", r.Text)
				}
			} else if len(emb) != 0 {
				t.Errorf("want the path only, got %d resources", len(emb))
			}
		})
	}
}

// sourceFor opens data as a saved file and reads its config the way
// imageResult does.
func sourceFor(t *testing.T, data []byte) *imageSource {
	t.Helper()
	p := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	src := &imageSource{f: f, size: int64(len(data))}
	if _, _, err := src.config(); err != nil {
		t.Fatal(err)
	}
	return src
}

// withChunk inserts a chunk right after a PNG's IHDR.
func withChunk(pngData []byte, typ string, data []byte) []byte {
	var c bytes.Buffer
	binary.Write(&c, binary.BigEndian, uint32(len(data)))
	c.WriteString(typ)
	c.Write(data)
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	binary.Write(&c, binary.BigEndian, crc.Sum32())
	return append(append(append([]byte(nil), pngData[:33]...), c.Bytes()...), pngData[33:]...)
}

func encodeWith(t *testing.T, img image.Image, enc func(io.Writer, image.Image) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := enc(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeCostBoundsDecode: what decodeCost charges covers everything
// the decode and the preview allocate, for every format and layout the
// model distinguishes. TotalAlloc sums all allocations, so it bounds the
// peak from above whatever the collector did.
func TestDecodeCostBoundsDecode(t *testing.T) {
	// Wider than a preview, so the downscale runs too.
	photo := noisy(1600, 200, 5)
	gray := image.NewGray(image.Rect(0, 0, 1600, 200))
	copy(gray.Pix, photo.Pix)
	pal := image.NewPaletted(image.Rect(0, 0, 1600, 200), palette.Plan9)
	copy(pal.Pix, photo.Pix)
	deep := image.NewNRGBA64(image.Rect(0, 0, 1600, 200))
	copy(deep.Pix, photo.Pix)
	jpg := func(q int) func(io.Writer, image.Image) error {
		return func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, &jpeg.Options{Quality: q}) }
	}
	tests := []struct {
		name  string
		data  []byte
		tight bool // the estimate is within 2x of the allocations
		grows bool // the decoder inflates into a growing bytes.Buffer
	}{
		{"jpeg baseline 4:2:0", encodeWith(t, photo, jpg(90)), true, false},
		{"jpeg gray", encodeWith(t, gray, jpg(90)), true, false},
		{"jpeg progressive 4:4:4", progressiveJPEG(1600, 200, false), true, false},
		{"jpeg progressive 4:2:0", progressiveJPEG(1600, 200, true), true, false},
		{"png rgba", encodePNG(t, photo), true, false},
		{"png 16-bit", encodePNG(t, deep), true, false},
		{"png 16-bit interlaced", interlacedPNG16(1600, 200), true, false},
		{"png gray", encodePNG(t, gray), true, false},
		{"png gray with tRNS", withChunk(encodePNG(t, gray), "tRNS", []byte{0, 0}), true, false},
		{"png paletted", encodePNG(t, pal), false, false},
		{"gif", encodeWith(t, pal, func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }), false, false},
		{"gif, first frame inside the screen", encodeWith(t, pal.SubImage(image.Rect(100, 50, 900, 150)), func(w io.Writer, m image.Image) error {
			return gif.EncodeAll(w, &gif.GIF{Image: []*image.Paletted{m.(*image.Paletted)}, Delay: []int{0},
				Config: image.Config{ColorModel: color.Palette(palette.Plan9), Width: 1600, Height: 200}})
		}), false, false},
		{"bmp", encodeWith(t, photo, bmp.Encode), false, false},
		{"tiff deflate", encodeWith(t, photo, func(w io.Writer, m image.Image) error {
			return tiff.Encode(w, m, &tiff.Options{Compression: tiff.Deflate})
		}), false, true},
	}
	allocs := func(f func()) int64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc - before.TotalAlloc)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := sourceFor(t, tc.data)
			cost, err := src.decodeCost()
			if err != nil {
				t.Fatal(err)
			}
			preview := previewCost(src.cfg.Width, src.cfg.Height)
			var img image.Image
			decoded := allocs(func() { img, err = src.decode(context.Background()) })
			if err != nil {
				t.Fatal(err)
			}
			previewed := allocs(func() { _, _, _, err = previewJPEG(img, PreviewMaxSide, 1<<20) })
			if err != nil {
				t.Fatal(err)
			}
			mb := func(n int64) float64 { return float64(n) / (1 << 20) }
			t.Logf("%s: decode charged %.1f MB, allocated %.1f MB; preview charged %.1f MB, allocated %.1f MB",
				src.format, mb(cost-preview), mb(decoded), mb(preview), mb(previewed))
			allowed := cost - preview
			if tc.grows && raceBuild() {
				// -race keeps the compiler from fusing bytes.Buffer's
				// append(nil, make(...)...), so each growth allocates twice
				// (one copy is garbage at once, the peak is unchanged).
				allowed *= 2
			}
			if decoded > allowed || previewed > preview {
				t.Errorf("allocated more than charged")
			}
			if tc.tight && cost-preview > 2*decoded+1<<20 {
				t.Errorf("decode charged %d bytes for %d allocated: previews would be refused needlessly", cost-preview, decoded)
			}
		})
	}
}

func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

func TestDecodeCostRefusesAbsurdSizes(t *testing.T) {
	header := func(w, h uint32) []byte { // IHDR only: all DecodeConfig reads
		p := encodePNG(t, gradient(1, 1))
		binary.BigEndian.PutUint32(p[16:], w)
		binary.BigEndian.PutUint32(p[20:], h)
		binary.BigEndian.PutUint32(p[29:], crc32.ChecksumIEEE(p[12:29]))
		return p
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"png 100000x1", header(100000, 1)},
		{"png 70000x70000", header(70000, 70000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cost, err := sourceFor(t, tc.data).decodeCost(); err == nil {
				t.Errorf("charged %d bytes, want a refusal", cost)
			}
		})
	}
	for _, b := range bombs {
		cost, err := sourceFor(t, b.data()).decodeCost()
		if limit := int64(box.DefaultMemory / decodeShare); err != nil || cost <= limit {
			t.Errorf("%s: charged %d (%v), want more than the %d a preview may be charged", b.name, cost, err, limit)
		}
	}
}

// TestDecodeSeesTheMeasuredHeader: a file swapped for a bomb after its
// config was read (the agent can write the group folder) does not get
// decoded at the bomb's size.
func TestDecodeSeesTheMeasuredHeader(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			// Larger than what DecodeConfig reads, so the decode takes the
			// rest from the swapped file.
			small := encodePNG(t, noisy(200, 150, 1))
			if b.mime == "image/jpeg" {
				small = encodeWith(t, noisy(200, 150, 1), func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) })
			}
			src := sourceFor(t, small)
			if int64(len(src.head.buf)) >= src.size {
				t.Fatalf("DecodeConfig read all %d bytes", src.size)
			}
			if err := os.WriteFile(src.f.Name(), b.data(), 0o600); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, w, h, err := src.preview(context.Background(), 1<<20, 1)
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("decoding the swapped file allocated %d MB", grew>>20)
			}
			if err == nil && (w != 200 || h != 150) {
				t.Errorf("previewed %dx%d", w, h)
			}
			t.Logf("preview of the swapped file: %v", err)
		})
	}
}
