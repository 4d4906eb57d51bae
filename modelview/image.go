package modelview

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // decoders for image.Decode
	"image/jpeg"
	_ "image/png"
	"io"
	"math"
	"os"

	_ "golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/mediaregistry"
	registry "github.com/botd-dev/botd/tools"
)

// PreviewMaxSide is the longest side of a preview: the size vision models
// work at anyway, so larger previews only cost tokens.
const PreviewMaxSide = 1568

const (
	// maxInlineSide: model APIs reject images above 8000 px on a side, so
	// such an image gets a preview even when its file is small.
	maxInlineSide = 8000
	// maxDecodeSide: past JPEG's own limit nothing is a photo, and below
	// it the memory arithmetic cannot overflow.
	maxDecodeSide = 1<<16 - 1
	// maxDecodePixels bounds the time a decode and downscale take, whatever
	// the memory they need.
	maxDecodePixels = 40_000_000
	// maxImageHeader bounds what DecodeConfig may read: metadata (EXIF,
	// ICC) precedes a JPEG's frame header, never megabytes of it.
	maxImageHeader = 2 << 20
	// minPreviewSide is where shrinking to meet the budget gives up.
	minPreviewSide = 64
	// minAlphaSide is where a preview gives up its transparency (becoming
	// a JPEG on white) rather than shrink further.
	minAlphaSide = 512
)

// inlineFormats are the formats model APIs accept as image content; other
// decodable formats (bmp, tiff) are always re-encoded.
var inlineFormats = map[string]string{
	"jpeg": "image/jpeg",
	"png":  "image/png",
	"gif":  "image/gif",
	"webp": "image/webp",
}

// previewQualities are tried in order until the preview fits the budget.
var previewQualities = []int{85, 72, 60, 45, 30}

// decodeShare is the part of a preview child's memory (media.parse.
// memory_bytes) the decode may be charged, from the header alone: the
// rest is the collector's slack. With the default 256 MB, a 12 MP
// progressive JPEG (~100 MB) is still previewed.
const decodeShare = 2

// imageResult returns the image inline, or a preview, or nil and a note
// saying why the model only gets the path.
func (t *Session) imageResult(ctx context.Context, f *os.File, m *mediaInfo) (*registry.Result, string) {
	size, asIs, why := m.size, true, ""
	if m.mime == "image/heic" || m.mime == "image/heif" {
		// No Go decoder and few models take it: a JPEG of it is shown.
		conv, err := t.convertHEIC(ctx, f)
		if err != nil {
			t.log.Info("mcp fetch_media: HEIC not converted", "ref", m.res.Ref, "err", err)
			return nil, fmt.Sprintf("This is a HEIC photo and it could not be converted for viewing (%v); open the saved file instead.", err)
		}
		defer conv.Close()
		fi, err := conv.Stat()
		if err != nil {
			return nil, "The converted HEIC photo could not be read; open the saved file instead."
		}
		f, size, asIs, why = conv, fi.Size(), false, "Converted from HEIC for viewing."
	}
	src := &imageSource{f: f, size: size}
	cfg, format, err := src.config()
	if err != nil {
		t.log.Info("mcp fetch_media: undecodable image", "ref", m.res.Ref, "err", err)
		return nil, "The image could not be decoded, so it is not shown; open the saved file instead."
	}
	m.width, m.height = cfg.Width, cfg.Height
	orientation := 1
	switch format {
	case "jpeg":
		if orientation = exifOrientation(src.head.buf); orientation > 1 {
			// Models do not all apply the tag: they get it upright.
			asIs, why = false, join(why, "Turned upright as its EXIF orientation says.")
			if orientation >= 5 {
				m.width, m.height = cfg.Height, cfg.Width
			}
		}
	case "gif":
		if n, err := gifFrames(f, size); err == nil && n > 1 {
			asIs, why = false, join(why, fmt.Sprintf("An animated GIF of %d frames; shown: its first frame.", n))
		}
	}
	mime, inlineOK := inlineFormats[format]
	if asIs && inlineOK && m.size <= t.inlineMax && cfg.Width <= maxInlineSide && cfg.Height <= maxInlineSide {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, "The image could not be read back, so it is not shown; open the saved file instead."
		}
		if data, err := readSmall(f, m.size, t.inlineMax); err == nil {
			img := registry.Image(base64.StdEncoding.EncodeToString(data), mime)
			// The bytes are the saved file itself: an in-process agent
			// can point its model at the file instead of writing them again.
			img.Saved = m.rel
			return registry.PartsResult(registry.Text(m.describe("")), img), ""
		}
	}

	// Weighed from the header alone: a refusal here is a better answer
	// than the child's death, and costs no process.
	cost, err := src.decodeCost()
	if err != nil || cost > t.parse.Memory/decodeShare || int64(cfg.Width)*int64(cfg.Height) > maxDecodePixels {
		t.log.Info("mcp fetch_media: image too large to preview", "ref", m.res.Ref,
			"width", cfg.Width, "height", cfg.Height, "format", format, "decode_bytes", cost, "err", err)
		need := ""
		if err == nil {
			need = ", about " + mediaregistry.FormatSize(cost) + " to decode"
		}
		return nil, join(why, fmt.Sprintf("The image is too large to preview safely (%dx%d%s); open the saved file instead.",
			cfg.Width, cfg.Height, need))
	}
	data, pmime, w, h, err := t.previewInBox(ctx, src, orientation)
	if err != nil {
		t.log.Info("mcp fetch_media: no preview", "ref", m.res.Ref, "err", err)
		var be *box.Error
		if errors.As(err, &be) && be.Kind != box.KindFailed {
			return nil, join(why, fmt.Sprintf("No preview: %v; open the saved file instead.", err))
		}
		return nil, join(why, "No preview could be made of this image; open the saved file instead.")
	}
	kind := "JPEG"
	if pmime == "image/png" {
		kind = "PNG (transparency kept)"
	}
	note := join(why, fmt.Sprintf("Shown: a %dx%d %s preview (%s); the full-size original is the saved file.",
		w, h, kind, mediaregistry.FormatSize(int64(len(data)))))
	return registry.PartsResult(
		registry.Text(m.describe(note)),
		registry.Image(base64.StdEncoding.EncodeToString(data), pmime),
	), ""
}

// imageSource makes the decode see the header that was measured: the
// group folder is writable by the agent, so the file could change between
// DecodeConfig and Decode. The bytes DecodeConfig read are kept and
// replayed; TIFF, whose directory can be anywhere, is decoded from a copy
// of the file checked against the config.
type imageSource struct {
	f      *os.File
	size   int64
	head   recorder
	tiff   bool
	cfg    image.Config
	format string
}

func (s *imageSource) config() (image.Config, string, error) {
	var magic [4]byte
	if _, err := s.f.ReadAt(magic[:], 0); err == nil && (string(magic[:]) == "II*\x00" || string(magic[:]) == "MM\x00*") {
		// Given an io.ReaderAt, tiff reads the directory in place instead
		// of buffering the file up to it.
		s.tiff, s.format = true, "tiff"
		cfg, err := tiff.DecodeConfig(io.NewSectionReader(s.f, 0, s.size))
		if err != nil {
			return cfg, s.format, fmt.Errorf("tiff config: %w", err)
		}
		s.cfg = cfg
		return cfg, s.format, nil
	}
	s.head = recorder{r: io.NewSectionReader(s.f, 0, math.MaxInt64), max: maxImageHeader}
	cfg, format, err := image.DecodeConfig(bufio.NewReader(&s.head))
	if err != nil {
		return cfg, format, fmt.Errorf("config: %w", err)
	}
	s.cfg, s.format = cfg, format
	return cfg, format, nil
}

// decodeCost bounds the memory the decode and the preview take, from the
// header alone. Go's decoders allocate the whole image before reading the
// pixels, and some far more than 4 bytes a pixel (a progressive JPEG
// about 15, an interlaced 16-bit PNG 16). The first-frame-only GIF
// decoder, PNG's check of the zlib stream against the declared size, and
// the VP8X and SOF checks in webp and jpeg make the declared size the
// decoded size.
func (s *imageSource) decodeCost() (int64, error) {
	w, h := s.cfg.Width, s.cfg.Height
	if w <= 0 || h <= 0 || w > maxDecodeSide || h > maxDecodeSide {
		return 0, fmt.Errorf("%dx%d is out of range", w, h)
	}
	px := int64(w) * int64(h)
	var dec int64
	switch s.format {
	case "jpeg":
		dec = jpegCost(s.head.buf, s.cfg)
	case "png":
		c, err := s.pngCost()
		if err != nil {
			return 0, err
		}
		dec = c
	case "gif":
		// The first frame, within the logical screen; uninterlacing copies it.
		dec = 2 * px
	case "webp":
		// VP8 is 4:2:0 YCbCr padded to macroblocks; VP8L is 4 bytes a
		// pixel plus a transform's copy, and alpha one more. Either reads
		// its chunk into memory whole.
		dec = 9*px + s.size
		if len(s.head.buf) >= 16 && string(s.head.buf[12:16]) == "VP8 " {
			dec = 2*px + s.size
		}
	case "bmp":
		dec = bytesPerPixel(s.cfg.ColorModel) * px
	case "tiff":
		// The copy of the file, the image, and a strip inflating into a
		// growing buffer (up to 8 bytes a pixel, doubled).
		dec = s.size + (bytesPerPixel(s.cfg.ColorModel)+16)*px
	default:
		return 0, fmt.Errorf("no memory model for %s images", s.format)
	}
	const decoderState = 1 << 20 // tables, buffers, a palette
	return dec + decoderState + previewCost(w, h), nil
}

// previewCost is what previewJPEG holds beside the decoded image: the
// first preview, the smaller retries and the JPEG being encoded (at most
// 12 bytes a preview pixel), and rows and taps as wide as the source.
func previewCost(w, h int) int64 {
	pw, ph := fitWithin(w, h, PreviewMaxSide)
	return 12*int64(pw)*int64(ph) + 64*int64(w+h)
}

func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.YCbCrModel:
		return 4
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// jpegCost: Go's decoder holds a byte per sample of every component,
// padded to whole MCUs, plus for a progressive JPEG every coefficient as
// an int32 until the last scan; RGB and CMYK are then converted into a
// new 4-byte-a-pixel image.
func jpegCost(head []byte, cfg image.Config) int64 {
	blocks, progressive, ok := jpegBlocks(head, cfg.Width, cfg.Height)
	if !ok {
		// A header Go's lenient parser accepts and this one does not:
		// assume the worst, progressive and unsubsampled.
		comps := int64(3)
		switch cfg.ColorModel {
		case color.GrayModel:
			comps = 1
		case color.CMYKModel:
			comps = 4
		}
		blocks, progressive = comps*int64((cfg.Width+31)/32*4)*int64((cfg.Height+31)/32*4), true
	}
	cost := 64 * blocks
	if progressive {
		cost += 256 * blocks
	}
	if cfg.ColorModel == color.RGBAModel || cfg.ColorModel == color.CMYKModel {
		cost += 4 * int64(cfg.Width) * int64(cfg.Height)
	}
	return cost
}

// jpegBlocks finds the frame header (SOF0-2, the ones Go decodes) and
// counts the 8x8 blocks the decoder allocates for a w×h image.
func jpegBlocks(b []byte, w, h int) (blocks int64, progressive, ok bool) {
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
		return 0, false, false
	}
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return 0, false, false
		}
		m := b[i+1]
		switch {
		case m == 0xff: // fill byte
			i++
			continue
		case m == 0x01 || (m >= 0xd0 && m <= 0xd8): // no length
			i += 2
			continue
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if n < 2 {
			return 0, false, false
		}
		if m != 0xc0 && m != 0xc1 && m != 0xc2 {
			i += 2 + n
			continue
		}
		seg := b[i+4 : min(len(b), i+2+n)]
		if len(seg) < 6 {
			return 0, false, false
		}
		nc := int(seg[5])
		if (nc != 1 && nc != 3 && nc != 4) || len(seg) < 6+3*nc {
			return 0, false, false
		}
		var hv [4][2]int
		hmax, vmax := 1, 1
		for c := range nc {
			hv[c] = [2]int{int(seg[7+3*c] >> 4), int(seg[7+3*c] & 0x0f)}
			if nc == 1 {
				hv[c] = [2]int{1, 1} // one component is never interleaved
			}
			if hv[c][0] < 1 || hv[c][0] > 4 || hv[c][1] < 1 || hv[c][1] > 4 {
				return 0, false, false
			}
			hmax, vmax = max(hmax, hv[c][0]), max(vmax, hv[c][1])
		}
		mcus := int64((w+8*hmax-1)/(8*hmax)) * int64((h+8*vmax-1)/(8*vmax))
		for c := range nc {
			blocks += mcus * int64(hv[c][0]*hv[c][1])
		}
		return blocks, m == 0xc2, true
	}
	return 0, false, false
}

// pngCost: Go's decoder allocates the image at the file's depth (8 bytes
// a pixel at 16 bits), grey with a tRNS chunk as NRGBA, and for Adam7 an
// image per pass, which add up to a second full image.
func (s *imageSource) pngCost() (int64, error) {
	b := s.head.buf
	if len(b) < 33 || string(b[12:16]) != "IHDR" {
		return 0, errors.New("png: no IHDR where DecodeConfig read it")
	}
	depth, colorType, interlaced := b[24], b[25], b[28] != 0
	var bpp int64
	switch colorType {
	case 0: // grey
		bpp = 1
		if depth == 16 {
			bpp = 2
		}
		if s.pngHasTRNS() {
			bpp *= 4
		}
	case 3: // paletted
		bpp = 1
	default:
		bpp = 4
		if depth == 16 {
			bpp = 8
		}
	}
	w := int64(s.cfg.Width)
	cost := bpp * w * int64(s.cfg.Height)
	if interlaced {
		cost *= 2
	}
	return cost + 2*(8*w+1), nil // and the current and previous row
}

// pngHasTRNS looks for a tRNS chunk before the image data, reading on
// from the header if needed; when it cannot tell it says yes.
func (s *imageSource) pngHasTRNS() bool {
	for off := int64(33); ; {
		if !s.head.have(off + 8) {
			return true
		}
		b := s.head.buf[off:]
		switch string(b[4:8]) {
		case "tRNS":
			return true
		case "IDAT":
			return false
		}
		off += 12 + int64(binary.BigEndian.Uint32(b))
	}
}

// decode reads the image whose config was taken, and stops when ctx ends
// so that an abandoned call does not hold decode memory.
func (s *imageSource) decode(ctx context.Context) (image.Image, error) {
	var img image.Image
	var format string
	if s.tiff {
		data := make([]byte, s.size)
		if _, err := io.ReadFull(io.NewSectionReader(s.f, 0, s.size), data); err != nil {
			return nil, fmt.Errorf("read tiff: %w", err)
		}
		cfg, err := tiff.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("tiff config: %w", err)
		}
		if cfg.Width != s.cfg.Width || cfg.Height != s.cfg.Height {
			return nil, fmt.Errorf("tiff changed while being read: %dx%d, was %dx%d", cfg.Width, cfg.Height, s.cfg.Width, s.cfg.Height)
		}
		if img, err = tiff.Decode(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("decode tiff: %w", err)
		}
		format = "tiff"
	} else {
		head := int64(len(s.head.buf))
		r := io.MultiReader(bytes.NewReader(s.head.buf), io.NewSectionReader(s.f, head, math.MaxInt64-head))
		var err error
		if img, format, err = image.Decode(mediaregistry.ContextReader(ctx, r)); err != nil {
			return nil, fmt.Errorf("decode %s: %w", s.format, err)
		}
	}
	// A GIF's first frame may cover part of the screen; nothing may be
	// larger than measured.
	if b := img.Bounds(); format != s.format || !b.In(image.Rect(0, 0, s.cfg.Width, s.cfg.Height)) {
		return nil, fmt.Errorf("decoded a %v %s where the header said %dx%d %s",
			b, format, s.cfg.Width, s.cfg.Height, s.format)
	}
	return img, nil
}

// preview decodes and scales down in a frame of its own: once it returns,
// nothing of the decoded image is reachable and a collection frees it.
func (s *imageSource) preview(ctx context.Context, budget int64, orientation int) ([]byte, string, int, int, error) {
	img, err := s.decode(ctx)
	if err != nil {
		return nil, "", 0, 0, err
	}
	return previewImage(img, PreviewMaxSide, budget, orientation)
}

// previewImage scales src to fit maxSide, turns it upright per its EXIF
// orientation, and encodes it: a PNG when it has transparency and that
// fits the budget (a logo stays a logo), else a JPEG on white.
func previewImage(src image.Image, maxSide int, budget int64, orientation int) ([]byte, string, int, int, error) {
	b := src.Bounds()
	if b.Empty() {
		return nil, "", 0, 0, errors.New("empty image")
	}
	w, h := fitWithin(b.Dx(), b.Dy(), maxSide)
	small := orient(resize(src, w, h, false), orientation)
	if !small.Opaque() {
		// Smaller before giving the transparency up, but not so small
		// that a JPEG of the full preview size would show more.
		for cur := small; ; {
			if data, ok := previewPNG(cur, budget); ok {
				return data, "image/png", cur.Rect.Dx(), cur.Rect.Dy(), nil
			}
			cw, ch := cur.Rect.Dx()*2/3, cur.Rect.Dy()*2/3
			if max(cw, ch) < minAlphaSide {
				break
			}
			cur = resize(cur, max(1, cw), max(1, ch), false)
		}
		flattenOnWhite(small)
	}
	data, w, h, err := previewJPEG(small, maxSide, budget)
	return data, "image/jpeg", w, h, err
}

// recorder passes on what it reads from r and keeps it, up to max bytes.
type recorder struct {
	r   io.Reader
	buf []byte
	max int
}

var errHeaderTooLong = errors.New("image header too long")

func (r *recorder) Read(p []byte) (int, error) {
	if len(r.buf) >= r.max {
		return 0, fmt.Errorf("more than %d bytes before the pixel data: %w", r.max, errHeaderTooLong)
	}
	p = p[:min(len(p), r.max-len(r.buf))]
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// have reads on until n bytes are kept, and reports whether they are.
func (r *recorder) have(n int64) bool {
	if missing := n - int64(len(r.buf)); missing > 0 && n <= int64(r.max) {
		io.CopyN(io.Discard, r, missing)
	}
	return int64(len(r.buf)) >= n
}

// previewJPEG scales src to fit maxSide and encodes it as a JPEG of at most
// budget bytes, lowering quality first and then size until it fits.
// Transparent areas become white, as JPEG has no alpha.
func previewJPEG(src image.Image, maxSide int, budget int64) ([]byte, int, int, error) {
	b := src.Bounds()
	if b.Empty() {
		return nil, 0, 0, errors.New("empty image")
	}
	w, h := fitWithin(b.Dx(), b.Dy(), maxSide)
	first := resizeArea(src, w, h)
	dst := first
	var buf bytes.Buffer
	for {
		for _, q := range previewQualities {
			buf.Reset()
			if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: q}); err != nil {
				return nil, 0, 0, fmt.Errorf("encode preview: %w", err)
			}
			if int64(buf.Len()) <= budget {
				return buf.Bytes(), w, h, nil
			}
		}
		if w <= minPreviewSide && h <= minPreviewSide {
			return nil, 0, 0, fmt.Errorf("no preview fits in %d bytes", budget)
		}
		w, h = max(1, w*2/3), max(1, h*2/3)
		// From the first preview, not the source: reading the source again
		// costs a full pass, and the smaller size loses nothing by it.
		dst = resizeArea(first, w, h)
	}
}

// fitWithin scales w×h down (never up) so the longest side is at most max.
func fitWithin(w, h, maxSide int) (int, int) {
	if w <= maxSide && h <= maxSide {
		return w, h
	}
	s := float64(maxSide) / float64(max(w, h))
	return max(1, int(math.Round(float64(w)*s))), max(1, int(math.Round(float64(h)*s)))
}

// join puts two notes together.
func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}
