package mcp

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for image.Decode
	"image/jpeg"
	_ "image/png"
	"io"
	"math"
	"os"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/mediaregistry"
)

// MetaSavedPath is the _meta key of image content whose bytes are exactly
// the file saved in the group folder, at this group-relative path.
const MetaSavedPath = "botd/savedPath"

// PreviewMaxSide is the longest side of a preview: the size vision models
// work at anyway, so larger previews only cost tokens.
const PreviewMaxSide = 1568

const (
	// maxInlineSide: model APIs reject images above 8000 px on a side, so
	// such an image gets a preview even when its file is small.
	maxInlineSide = 8000
	// maxDecodePixels bounds the memory a decode may take (a 40 MP JPEG is
	// ~60 MB decoded): a small file can declare huge dimensions.
	maxDecodePixels = 40_000_000
	// minPreviewSide is where shrinking to meet the budget gives up.
	minPreviewSide = 64
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

// decodeSlots limits concurrent full decodes: each can take tens of MB,
// and the stdio server runs several tool calls at once.
var decodeSlots = make(chan struct{}, 2)

// imageResult returns the image inline, or a preview, or nil and a note
// saying why the model only gets the path.
func (t *tools) imageResult(f *os.File, m *mediaInfo) (*mcpgo.CallToolResult, string) {
	cfg, format, err := image.DecodeConfig(bufio.NewReader(f))
	if err != nil {
		return nil, "The image could not be decoded, so it is not shown; open the saved file instead."
	}
	m.width, m.height = cfg.Width, cfg.Height
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, "The image could not be read back, so it is not shown; open the saved file instead."
	}
	mime, inlineOK := inlineFormats[format]
	if inlineOK && m.size <= t.inlineMax && cfg.Width <= maxInlineSide && cfg.Height <= maxInlineSide {
		data, err := readSmall(f, m.size, t.inlineMax)
		if err == nil {
			img := mcpgo.NewImageContent(base64.StdEncoding.EncodeToString(data), mime)
			// The bytes are the saved file itself: an in-process agent
			// can point its model at the file instead of writing them again.
			img.Meta = &mcpgo.Meta{AdditionalFields: map[string]any{MetaSavedPath: m.rel}}
			return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(m.describe("")), img}}, ""
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, "The image could not be read back, so it is not shown; open the saved file instead."
		}
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxDecodePixels {
		return nil, fmt.Sprintf("The image is too large to preview (%dx%d); open the saved file instead.", cfg.Width, cfg.Height)
	}
	decodeSlots <- struct{}{}
	img, _, err := image.Decode(bufio.NewReader(f))
	var jpg []byte
	var w, h int
	if err == nil {
		jpg, w, h, err = previewJPEG(img, PreviewMaxSide, t.inlineMax)
	}
	<-decodeSlots
	if err != nil {
		t.log.Info("mcp fetch_media: no preview", "ref", m.res.Ref, "err", err)
		return nil, "No preview could be made of this image; open the saved file instead."
	}
	note := fmt.Sprintf("Shown: a downscaled %dx%d JPEG preview (%s); the full-size original is the saved file.",
		w, h, mediaregistry.FormatSize(int64(len(jpg))))
	return &mcpgo.CallToolResult{Content: []mcpgo.Content{
		mcpgo.NewTextContent(m.describe(note)),
		mcpgo.NewImageContent(base64.StdEncoding.EncodeToString(jpg), "image/jpeg"),
	}}, ""
}

// previewJPEG scales src to fit maxSide and encodes it as a JPEG of at most
// budget bytes, lowering quality first and then size until it fits.
// Transparent areas become white, as JPEG has no alpha.
func previewJPEG(src image.Image, maxSide int, budget int64) ([]byte, int, int, error) {
	b := src.Bounds()
	if b.Empty() {
		return nil, 0, 0, errors.New("empty image")
	}
	base := toRGBA(src)
	// Compositing commutes with averaging, so flatten once, not per try.
	flattenOnWhite(base)
	w, h := fitWithin(b.Dx(), b.Dy(), maxSide)
	var buf bytes.Buffer
	for {
		dst := resizeArea(base, w, h)
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
