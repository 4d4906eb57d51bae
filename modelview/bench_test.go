package modelview

import (
	"context"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	registry "github.com/botd-dev/botd/tools"
)

// instantHost answers fetch_media at once for a file already in place,
// so the benchmark measures the tool's own work: argument checks, opening
// the file inside the group folder, DecodeConfig, base64.
type instantHost struct{ res registry.FetchMediaResult }

func (h instantHost) Call(_ context.Context, _ string, _, result any) error {
	*(result.(*registry.FetchMediaResult)) = h.res
	return nil
}

// tenKBPNG is a noisy 58x58 PNG of about 10 KB.
func tenKBPNG(b *testing.B) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	img := image.NewNRGBA(image.Rect(0, 0, 58, 58))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	return encodePNG(b, img)
}

func BenchmarkFetchMediaInline10KB(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "groups", "family")
	if err := os.MkdirAll(filepath.Join(dir, "media"), 0o750); err != nil {
		b.Fatal(err)
	}
	data := tenKBPNG(b)
	rel := "media/tg_Bench0000001_photo.png"
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o640); err != nil {
		b.Fatal(err)
	}
	tl, err := New(Options{GroupDir: dir, Caller: instantHost{registry.FetchMediaResult{
		Ref: "tg_Bench0000001", Kind: "Image", MIME: "image/png", Size: int64(len(data)), Path: rel, Name: "photo.png",
	}}, Log: testLoggerB()})
	if err != nil {
		b.Fatal(err)
	}
	req := registry.Args(map[string]any{"mediaRef": "tg_Bench0000001"})
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := fetchMCP(tl, ctx, req)
		if err != nil || res.IsError || len(res.Content) != 2 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(len(data)), "src_bytes")
}

// BenchmarkFetchMediaPreview3000x2000 is the large-image path: decode a
// ~5 MB noisy JPEG, scale to 1568 px, re-encode under 1 MB.
func BenchmarkFetchMediaPreview3000x2000(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "groups", "family")
	if err := os.MkdirAll(filepath.Join(dir, "media"), 0o750); err != nil {
		b.Fatal(err)
	}
	data := largeJPEG(b)
	rel := "media/tg_Bench0000002_big.jpg"
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o640); err != nil {
		b.Fatal(err)
	}
	tl, err := New(Options{GroupDir: dir, Caller: instantHost{registry.FetchMediaResult{
		Ref: "tg_Bench0000002", Kind: "Image", MIME: "image/jpeg", Size: int64(len(data)), Path: rel,
	}}, Log: testLoggerB(), InlineMaxBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	req := registry.Args(map[string]any{"mediaRef": "tg_Bench0000002"})
	b.ReportAllocs()
	for b.Loop() {
		res, err := fetchMCP(tl, context.Background(), req)
		if err != nil || res.IsError || len(res.Content) != 2 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(len(data)), "src_bytes")
}
