package modelview

import (
	"image"
	"image/color"
	"testing"
)

func TestAreaTapsSumToOne(t *testing.T) {
	for _, tc := range [][2]int{{3000, 1568}, {2000, 1045}, {9000, 1568}, {7, 3}, {5, 5}, {1568, 1}} {
		for i, tp := range areaTaps(tc[0], tc[1]) {
			var sum uint32
			for _, w := range tp.weights {
				sum += w
			}
			if sum != weightOne || tp.start < 0 || tp.start+len(tp.weights) > tc[0] {
				t.Fatalf("%v dst %d: start %d, %d taps, sum %d", tc, i, tp.start, len(tp.weights), sum)
			}
		}
	}
}

func TestResizeArea(t *testing.T) {
	t.Run("flat colour stays exact", func(t *testing.T) {
		src := image.NewRGBA(image.Rect(0, 0, 301, 199))
		for i := 0; i < len(src.Pix); i += 4 {
			copy(src.Pix[i:], []byte{200, 100, 7, 255})
		}
		dst := resizeArea(src, 97, 64)
		for i := 0; i < len(dst.Pix); i += 4 {
			if got := dst.Pix[i : i+4]; got[0] != 200 || got[1] != 100 || got[2] != 7 || got[3] != 255 {
				t.Fatalf("pixel %d = %v", i/4, got)
			}
		}
	})
	t.Run("2x2 blocks average", func(t *testing.T) {
		src := image.NewRGBA(image.Rect(0, 0, 4, 2))
		// Left block black/white checker → grey; right block all white.
		for x := range 4 {
			for y := range 2 {
				v := uint8(255)
				if x < 2 && (x+y)%2 == 0 {
					v = 0
				}
				src.SetRGBA(x, y, color.RGBA{v, v, v, 255})
			}
		}
		dst := resizeArea(src, 2, 1)
		if l, r := dst.RGBAAt(0, 0), dst.RGBAAt(1, 0); l.R < 127 || l.R > 128 || r.R != 255 {
			t.Errorf("left %v right %v", l, r)
		}
	})
	t.Run("transparent becomes white", func(t *testing.T) {
		src := image.NewNRGBA(image.Rect(0, 0, 4, 4))
		src.SetNRGBA(0, 0, color.NRGBA{255, 0, 0, 255}) // one opaque red pixel
		rgba := toRGBA(src)
		flattenOnWhite(rgba)
		if c := rgba.RGBAAt(0, 0); c != (color.RGBA{255, 0, 0, 255}) {
			t.Errorf("opaque pixel %v", c)
		}
		if c := rgba.RGBAAt(3, 3); c != (color.RGBA{255, 255, 255, 255}) {
			t.Errorf("transparent pixel %v, want white", c)
		}
	})
}
