package modelview

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/internal/box"
)

// Images as people send them: phone photos rotated by an EXIF tag, PNGs
// with transparency, HEIC from iPhones, animated GIFs.

// exifOrientation reads the EXIF Orientation tag (1-8) from the start of
// a JPEG, or 1 when there is none. It only looks at the APP1 segment.
func exifOrientation(head []byte) int {
	if len(head) < 4 || head[0] != 0xFF || head[1] != 0xD8 {
		return 1
	}
	for i := 2; i+4 <= len(head); {
		if head[i] != 0xFF {
			return 1
		}
		marker := head[i+1]
		if marker == 0xDA || marker == 0xD9 { // pixel data: no EXIF before it
			return 1
		}
		n := int(binary.BigEndian.Uint16(head[i+2:]))
		seg := head[i+4 : min(len(head), i+2+n)]
		if marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		i += 2 + n
	}
	return 1
}

func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := int(bo.Uint32(t[4:]))
	if ifd < 8 || ifd+2 > len(t) {
		return 1
	}
	count := int(bo.Uint16(t[ifd:]))
	for e := 0; e < count; e++ {
		off := ifd + 2 + 12*e
		if off+12 > len(t) {
			return 1
		}
		if bo.Uint16(t[off:]) == 0x0112 {
			if o := int(bo.Uint16(t[off+8:])); o >= 1 && o <= 8 {
				return o
			}
			return 1
		}
	}
	return 1
}

// orientFlips says, per EXIF orientation, which destination axes run
// backwards; orientations 5 to 8 also swap the axes (a transpose), so
// each of the eight is a transpose or not followed by mirrors.
var orientFlips = [9]struct{ x, y bool }{
	2: {x: true}, 3: {x: true, y: true}, 4: {y: true},
	6: {x: true}, 7: {x: true, y: true}, 8: {y: true},
}

// orient turns a decoded (small) image upright per an EXIF orientation.
func orient(src *image.RGBA, o int) *image.RGBA {
	if o <= 1 || o > 8 {
		return src
	}
	w, h := src.Rect.Dx(), src.Rect.Dy()
	transpose, flip := o >= 5, orientFlips[o]
	dw, dh := w, h
	if transpose {
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := x, y
			if transpose {
				dx, dy = y, x
			}
			if flip.x {
				dx = dw - 1 - dx
			}
			if flip.y {
				dy = dh - 1 - dy
			}
			copy(dst.Pix[dy*dst.Stride+dx*4:dy*dst.Stride+dx*4+4], src.Pix[y*src.Stride+x*4:y*src.Stride+x*4+4])
		}
	}
	return dst
}

// errNotGIF: gifFrames was given something else.
var errNotGIF = errors.New("not a GIF")

// gifFrames counts the frames of a GIF by walking its blocks, without
// decoding any: an animation is not sent as if it were a still.
func gifFrames(r io.ReaderAt, size int64) (int, error) {
	br := &blockReader{r: io.NewSectionReader(r, 0, size)}
	hdr := br.next(13)
	if br.err != nil || (string(hdr[:6]) != "GIF87a" && string(hdr[:6]) != "GIF89a") {
		return 0, errNotGIF
	}
	if hdr[10]&0x80 != 0 {
		br.skip(3 << (hdr[10]&7 + 1))
	}
	frames := 0
	for br.err == nil {
		switch b := br.next(1); {
		case br.err != nil:
		case b[0] == 0x3B: // trailer
			return frames, nil
		case b[0] == 0x21: // extension: label, then sub-blocks
			br.next(1)
			br.subBlocks()
		case b[0] == 0x2C: // image descriptor
			frames++
			d := br.next(9)
			if br.err == nil && d[8]&0x80 != 0 {
				br.skip(3 << (d[8]&7 + 1))
			}
			br.next(1) // LZW minimum code size
			br.subBlocks()
		default:
			return frames, nil // garbage after the frames: what was read counts
		}
	}
	if frames > 0 {
		return frames, nil // truncated: the decoders show what is there
	}
	return 0, br.err
}

type blockReader struct {
	r   io.Reader
	buf [256]byte
	err error
}

func (b *blockReader) next(n int) []byte {
	if b.err != nil {
		return b.buf[:n]
	}
	_, b.err = io.ReadFull(b.r, b.buf[:n])
	return b.buf[:n]
}

func (b *blockReader) skip(n int) {
	if b.err == nil {
		_, b.err = io.CopyN(io.Discard, b.r, int64(n))
	}
}

func (b *blockReader) subBlocks() {
	for b.err == nil {
		n := b.next(1)[0]
		if b.err != nil || n == 0 {
			return
		}
		b.skip(int(n))
	}
}

// previewPNG encodes a preview with its transparency, when it fits the
// budget; the caller falls back to a JPEG on white.
func previewPNG(img *image.RGBA, budget int64) ([]byte, bool) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil || int64(buf.Len()) > budget {
		return nil, false
	}
	return buf.Bytes(), true
}

// heicConverters are programs that turn HEIC into JPEG, tried in order:
// the name on PATH and its arguments around the input and output paths.
var heicConverters = []struct {
	name string
	args func(in, out string) []string
}{
	{"heif-convert", func(in, out string) []string { return []string{"-q", "90", in, out} }},
	{"magick", func(in, out string) []string { return []string{"heic:" + in, "-auto-orient", out} }},
	{"ffmpeg", func(_, out string) []string {
		// HEIF is an ISO media file, mov's to read: named, so no
		// playlist posing as a photo makes ffmpeg open other files.
		args := append([]string{"-v", "error", "-nostdin", "-y"}, ffmpeg.InputArgs("mov")...)
		return append(args, "-frames:v", "1", out)
	}},
}

// errNoHEICConverter: no converter is installed.
var errNoHEICConverter = box.Missing("heif-convert", "install libheif's heif-convert, ImageMagick or ffmpeg to see HEIC photos")

// convertHEIC writes a JPEG of the HEIC file f into a temporary file, in a
// child of package box, and returns it opened (already unlinked, so
// nothing is left behind whatever happens next).
func (t *Session) convertHEIC(ctx context.Context, f *os.File) (*os.File, error) {
	for _, c := range heicConverters {
		if _, err := exec.LookPath(c.name); err != nil {
			continue
		}
		var conv *os.File
		_, err := box.Run(ctx, box.Job{Tool: c.name, Args: c.args("/dev/fd/3", "photo.jpg"), Input: f, What: "this HEIC photo",
			Limits: t.parse, Log: t.log, Collect: func(dir string) error {
				var err error
				conv, err = os.Open(filepath.Join(dir, "photo.jpg")) // unlinked with the directory, still readable
				return err
			}})
		return conv, err
	}
	return nil, errNoHEICConverter
}
