package modelview

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	registry "github.com/botd-dev/botd/tools"
)

// halves is a w×h image, left half red, right half blue.
func halves(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{R: 255, A: 255}
			if x >= w/2 {
				c = color.RGBA{B: 255, A: 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

// withOrientation encodes img as a JPEG carrying an EXIF APP1 segment with
// the Orientation tag, the way phone cameras write it.
func withOrientation(t *testing.T, img image.Image, o uint16, order binary.ByteOrder) []byte {
	t.Helper()
	var j bytes.Buffer
	if err := jpeg.Encode(&j, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	var tiff bytes.Buffer
	if order == binary.LittleEndian {
		tiff.WriteString("II")
	} else {
		tiff.WriteString("MM")
	}
	binary.Write(&tiff, order, uint16(42))
	binary.Write(&tiff, order, uint32(8))
	binary.Write(&tiff, order, uint16(2)) // two entries: a decoy, then Orientation
	for _, e := range [][2]uint16{{0x010F, 0}, {0x0112, o}} {
		binary.Write(&tiff, order, e[0])
		binary.Write(&tiff, order, uint16(3)) // SHORT
		binary.Write(&tiff, order, uint32(1))
		binary.Write(&tiff, order, e[1])
		binary.Write(&tiff, order, uint16(0))
	}
	binary.Write(&tiff, order, uint32(0))
	app1 := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	var out bytes.Buffer
	out.Write(j.Bytes()[:2]) // SOI
	out.Write([]byte{0xFF, 0xE1})
	binary.Write(&out, binary.BigEndian, uint16(len(app1)+2))
	out.Write(app1)
	out.Write(j.Bytes()[2:])
	return out.Bytes()
}

func TestExifOrientation(t *testing.T) {
	for o := uint16(1); o <= 8; o++ {
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if got := exifOrientation(withOrientation(t, halves(8, 4), o, bo)); got != int(o) {
				t.Errorf("orientation %d (%v) read as %d", o, bo, got)
			}
		}
	}
	var plain bytes.Buffer
	jpeg.Encode(&plain, halves(8, 4), nil)
	for name, data := range map[string][]byte{"no exif": plain.Bytes(), "not a jpeg": []byte("GIF89a"), "truncated": withOrientation(t, halves(8, 4), 6, binary.BigEndian)[:30], "empty": nil} {
		if got := exifOrientation(data); got != 1 {
			t.Errorf("%s: orientation %d, want 1", name, got)
		}
	}
}

// A phone photo taken sideways (orientation 6) reaches the model upright:
// 40×20 red|blue becomes 20×40 with red on top.
func TestPhotoIsTurnedUpright(t *testing.T) {
	h := newFakeHost(t, "family")
	data := withOrientation(t, halves(40, 20), 6, binary.LittleEndian)
	h.add(media("tg_SidewaysPic1", "Image", "image/jpeg", "media/tg_SidewaysPic1.jpg", data))
	c := connect(t, newTestServer(t, h, 1<<20))
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_SidewaysPic1"})
	texts, images, _ := parts(t, res)
	if res.IsError || len(images) != 1 {
		t.Fatalf("error=%v texts=%q images=%d", res.IsError, texts, len(images))
	}
	if !strings.Contains(texts[0], "Turned upright") || !strings.Contains(texts[0], "20x40") {
		t.Errorf("text does not say it was turned, or names the stored dimensions:\n%s", texts[0])
	}
	raw, _ := base64.StdEncoding.DecodeString(images[0].Data)
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 20 || b.Dy() != 40 {
		t.Fatalf("preview is %v, want 20x40", b)
	}
	top, bottom := img.At(10, 5), img.At(10, 35)
	if r, _, b, _ := top.RGBA(); r < 0xC000 || b > 0x4000 {
		t.Errorf("top is %v, want red", top)
	}
	if r, _, b, _ := bottom.RGBA(); b < 0xC000 || r > 0x4000 {
		t.Errorf("bottom is %v, want blue", bottom)
	}
}

func TestOrientAllEight(t *testing.T) {
	// A 3×2 image with distinct pixels; each orientation maps the source's
	// top-left pixel to where the upright image has it.
	src := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for i := range src.Pix {
		src.Pix[i] = uint8(i)
	}
	tl := src.Pix[0:4]
	corner := map[int]image.Point{1: {0, 0}, 2: {2, 0}, 3: {2, 1}, 4: {0, 1}, 5: {0, 0}, 6: {1, 0}, 7: {1, 2}, 8: {0, 2}}
	for o := 1; o <= 8; o++ {
		dst := orient(src, o)
		wantW, wantH := 3, 2
		if o >= 5 {
			wantW, wantH = 2, 3
		}
		if dst.Rect.Dx() != wantW || dst.Rect.Dy() != wantH {
			t.Errorf("orientation %d: %v", o, dst.Rect)
			continue
		}
		p := corner[o]
		if got := dst.Pix[p.Y*dst.Stride+p.X*4 : p.Y*dst.Stride+p.X*4+4]; !bytes.Equal(got, tl) {
			t.Errorf("orientation %d: top-left source pixel not at %v", o, p)
		}
	}
}

func animatedGIF(t *testing.T, frames int) []byte {
	t.Helper()
	pal := color.Palette{color.White, color.Black}
	g := &gif.GIF{}
	for i := 0; i < frames; i++ {
		f := image.NewPaletted(image.Rect(0, 0, 16, 16), pal)
		f.SetColorIndex(i%16, i%16, 1)
		g.Image = append(g.Image, f)
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGIFFrames(t *testing.T) {
	for _, n := range []int{1, 2, 12} {
		data := animatedGIF(t, n)
		if got, err := gifFrames(bytes.NewReader(data), int64(len(data))); err != nil || got != n {
			t.Errorf("%d frames counted as %d (%v)", n, got, err)
		}
	}
	data := animatedGIF(t, 5)
	if got, _ := gifFrames(bytes.NewReader(data), int64(len(data)-20)); got < 1 {
		t.Errorf("a truncated animation counts %d frames", got)
	}
	if _, err := gifFrames(bytes.NewReader([]byte("PNG")), 3); err == nil {
		t.Errorf("a non-GIF was counted")
	}
}

// An animated GIF is shown as its first frame and said to be animated.
func TestAnimatedGIFIsDescribedAsSuch(t *testing.T) {
	h := newFakeHost(t, "family")
	h.add(media("tg_AnimatedGif1", "Animation", "image/gif", "media/tg_AnimatedGif1.gif", animatedGIF(t, 7)))
	c := connect(t, newTestServer(t, h, 1<<20))
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_AnimatedGif1"})
	texts, images, _ := parts(t, res)
	if res.IsError || len(images) != 1 || images[0].MIMEType == "image/gif" {
		t.Fatalf("error=%v images=%d (want one still preview, not the GIF)", res.IsError, len(images))
	}
	if !strings.Contains(texts[0], "animated GIF of 7 frames") {
		t.Errorf("text does not say it is animated:\n%s", texts[0])
	}
}

// A PNG with transparency too wide to send as is (a banner logo) is
// previewed as a PNG that keeps it.
func TestTransparentPreviewKeepsAlpha(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 9000, 600))
	for y := 0; y < 600; y++ {
		for x := 0; x < 9000; x++ {
			if (x/300+y/300)%2 == 0 {
				img.SetNRGBA(x, y, color.NRGBA{R: 200, G: 30, B: 90, A: 255})
			}
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	h := newFakeHost(t, "family")
	h.add(media("tg_LogoWithAlpha", "Document", "image/png", "media/tg_LogoWithAlpha.png", b.Bytes()))
	c := connect(t, newTestServer(t, h, 1<<20))
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_LogoWithAlpha"})
	texts, images, _ := parts(t, res)
	if res.IsError || len(images) != 1 || images[0].MIMEType != "image/png" {
		t.Fatalf("error=%v images=%d %q", res.IsError, len(images), texts)
	}
	raw, _ := base64.StdEncoding.DecodeString(images[0].Data)
	p, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := p.At(p.Bounds().Dx()-1, 0).RGBA(); a != 0 {
		t.Errorf("a transparent corner came out with alpha %d", a)
	}
	if !strings.Contains(texts[0], "transparency kept") {
		t.Errorf("text: %s", texts[0])
	}
}

// A HEIC photo is converted by the converter on PATH (here a stand-in
// heif-convert that writes a known JPEG) and previewed; the note says so.
func TestHEICIsConvertedWhenAConverterIsInstalled(t *testing.T) {
	bin := t.TempDir()
	var j bytes.Buffer
	jpeg.Encode(&j, halves(64, 32), nil)
	jpgPath := filepath.Join(bin, "known.jpg")
	if err := os.WriteFile(jpgPath, j.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// heif-convert -q 90 IN OUT, IN being the photo's opened descriptor.
	script := "#!/bin/sh\ngrep -q ftypheic \"$3\" || exit 3\ncp " + jpgPath + " \"$4\"\n"
	if err := os.WriteFile(filepath.Join(bin, "heif-convert"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := newFakeHost(t, "family")
	h.add(media("tg_IphonePhoto1", "Image", "image/heic", "media/tg_IphonePhoto1.heic", []byte("\x00\x00\x00\x18ftypheic not decoded here")))
	c := connect(t, newTestServer(t, h, 1<<20))
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_IphonePhoto1"})
	texts, images, _ := parts(t, res)
	if res.IsError || len(images) != 1 || images[0].MIMEType != "image/jpeg" {
		t.Fatalf("error=%v images=%d %q", res.IsError, len(images), texts)
	}
	if !strings.Contains(texts[0], "Converted from HEIC") || !strings.Contains(texts[0], "64x32") {
		t.Errorf("text: %s", texts[0])
	}
	r := c.Run(context.Background(), registry.FetchMedia, map[string]any{"mediaRef": "tg_IphonePhoto1"})
	for _, p := range r.Parts {
		if p.Kind == registry.PartImage && p.Saved != "" {
			t.Errorf("a converted preview claims to be the saved file's bytes")
		}
	}
}
