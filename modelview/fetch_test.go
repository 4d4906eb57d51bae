package modelview

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	registry "github.com/botd-dev/botd/tools"
)

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			i := img.PixOffset(x, y)
			copy(img.Pix[i:i+4], []byte{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
		}
	}
	return img
}

// noisy is the worst case for JPEG: random pixels, opaque. Filled in bulk
// so building a 6 MP fixture stays cheap under -race.
func noisy(w, h int, seed uint64) *image.RGBA {
	var key [32]byte
	key[0] = byte(seed)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rand.NewChaCha8(key).Read(img.Pix)
	return img // jpeg.Encode ignores alpha; previewJPEG flattens it
}

var (
	bigJPEGOnce sync.Once
	bigJPEG     []byte
)

// largeJPEG is a ~6 MB 3000x2000 noisy JPEG, built once per test binary.
func largeJPEG(t testing.TB) []byte {
	t.Helper()
	bigJPEGOnce.Do(func() {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, noisy(3000, 2000, 7), &jpeg.Options{Quality: 85}); err != nil {
			t.Fatal(err)
		}
		bigJPEG = buf.Bytes()
	})
	return bigJPEG
}

func media(ref, kind, mime, rel string, data []byte) fakeMedia {
	return fakeMedia{data: data, res: registry.FetchMediaResult{
		Ref: ref, Kind: kind, Name: filepath.Base(rel), MIME: mime, Size: int64(len(data)),
		Path: rel, Sender: "Alice", Caption: "look at this",
	}}
}

func TestFetchSmallImageInline(t *testing.T) {
	h := newFakeHost(t, "family")
	src := encodePNG(t, gradient(64, 48))
	h.add(media("tg_k3J9x2Qa7P", "Image", "image/png", "media/tg_k3J9x2Qa7P_photo.png", src))
	c := connect(t, newTestServer(t, h, 0))

	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_k3J9x2Qa7P"})
	texts, images, emb := parts(t, res)
	if res.IsError || len(images) != 1 || len(texts) != 1 || len(emb) != 0 {
		t.Fatalf("want one text and one image, got error=%v %q images=%d embedded=%d", res.IsError, texts, len(images), len(emb))
	}
	got, err := base64.StdEncoding.DecodeString(images[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) || images[0].MIMEType != "image/png" {
		t.Errorf("inline image differs from the source (%d vs %d bytes, %s)", len(got), len(src), images[0].MIMEType)
	}
	abs := filepath.Join(h.dir, "media", "tg_k3J9x2Qa7P_photo.png")
	for _, want := range []string{"Image ref:tg_k3J9x2Qa7P", "64x48", "image/png", "from Alice", "caption: look at this",
		"media/tg_k3J9x2Qa7P_photo.png", abs} {
		if !strings.Contains(texts[0], want) {
			t.Errorf("metadata lacks %q:\n%s", want, texts[0])
		}
	}
}

func TestFetchLargeImagePreview(t *testing.T) {
	const inlineMax = 1 << 20
	// Random alpha too: the preview keeps it (a smaller PNG).
	transparent := image.NewNRGBA(image.Rect(0, 0, 1700, 500))
	copy(transparent.Pix, noisy(1700, 500, 3).Pix)
	tests := []struct {
		name   string
		mime   string
		data   []byte
		w, h   int
		format string
	}{
		{"jpeg 3000x2000", "image/jpeg", largeJPEG(t), 3000, 2000, "jpeg"},
		{"png with alpha 1700x500", "image/png", encodePNG(t, transparent), 1700, 500, "png"},
		// Small file, too many pixels for a model API: previewed anyway.
		{"png 8200x120", "image/png", encodePNG(t, gradient(8200, 120)), 8200, 120, "jpeg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, "family")
			rel := "media/tg_BigPicture01.img"
			h.add(media("tg_BigPicture01", "Image", tc.mime, rel, tc.data))
			c := connect(t, newTestServer(t, h, inlineMax))
			t.Logf("source %d bytes", len(tc.data))

			res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_BigPicture01"})
			texts, images, _ := parts(t, res)
			if res.IsError || len(images) != 1 || len(texts) != 1 {
				t.Fatalf("want text + preview, got error=%v %q images=%d", res.IsError, texts, len(images))
			}
			raw, err := base64.StdEncoding.DecodeString(images[0].Data)
			if err != nil {
				t.Fatal(err)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("preview %dx%d %s, %d bytes", cfg.Width, cfg.Height, format, len(raw))
			if format != tc.format || images[0].MIMEType != "image/"+tc.format {
				t.Errorf("preview format %s / %s, want %s", format, images[0].MIMEType, tc.format)
			}
			if max(cfg.Width, cfg.Height) > PreviewMaxSide {
				t.Errorf("preview %dx%d exceeds %d px", cfg.Width, cfg.Height, PreviewMaxSide)
			}
			if len(raw) > inlineMax {
				t.Errorf("preview %d bytes exceeds the inline limit %d", len(raw), inlineMax)
			}
			// Aspect ratio kept within rounding.
			if want := cfg.Width * tc.h / tc.w; cfg.Height < want-1 || cfg.Height > want+1 {
				t.Errorf("aspect changed: %dx%d from %dx%d", cfg.Width, cfg.Height, tc.w, tc.h)
			}
			for _, want := range []string{rel, filepath.Join(h.dir, rel), "preview", "original"} {
				if !strings.Contains(texts[0], want) {
					t.Errorf("text lacks %q:\n%s", want, texts[0])
				}
			}
		})
	}
}

func TestPreviewShrinksToTinyBudget(t *testing.T) {
	for _, budget := range []int64{40 << 10, 8 << 10, 2 << 10} {
		jpg, w, h, err := previewJPEG(noisy(300, 200, 1), PreviewMaxSide, budget)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if int64(len(jpg)) > budget {
			t.Errorf("budget %d: got %d bytes", budget, len(jpg))
		}
		t.Logf("budget %d → %dx%d, %d bytes", budget, w, h, len(jpg))
	}
	if _, _, _, err := previewJPEG(noisy(300, 200, 1), PreviewMaxSide, 100); err == nil {
		t.Error("a 100-byte budget cannot be met; want an error")
	}
}

func TestFetchDocuments(t *testing.T) {
	pdf := []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	text := []byte("name,amount\nAlice,3\nBob,4\n")
	bigPDF := append(append([]byte{}, pdf...), bytes.Repeat([]byte("x"), 5000)...)
	tests := []struct {
		name     string
		kind     string
		mime     string
		rel      string
		data     []byte
		wantRes  string // "blob", "text" or ""
		wantNote string
	}{
		{"pdf", "Document", "application/pdf", "media/tg_PdfDocument1_report.pdf", pdf, "blob", "embedded resource"},
		// CSV and HTML of any size are read as text: a table, a page
		// without its markup. Other small text comes whole, as it is.
		{"csv", "Document", "text/csv; charset=utf-8", "media/tg_CsvDocument1_sums.csv", text, "", "<document name=\"tg_CsvDocument1_sums.csv\" mime=\"text/csv\">\n| name | amount |\n| Alice | 3 |\n| Bob | 4 |\n</document>"},
		{"html", "Document", "text/html", "media/tg_HtmlDocument_page.html", []byte("<html><head><title>Minutes</title><style>p{color:red}</style></head><body><h1>Budget</h1><p>Approved &amp; signed.</p><script>track()</script></body></html>"),
			"", "<document name=\"tg_HtmlDocument_page.html\" mime=\"text/html\">\n# Minutes\n# Budget\nApproved &amp; signed.\n</document>"},
		{"plain text", "Document", "text/plain", "media/tg_TxtDocument1_notes.txt", text, "text", "embedded resource"},
		{"pdf over the limit", "Document", "application/pdf", "media/tg_PdfDocument2_big.pdf", bigPDF, "", ""},
		{"voice", "Voice", "audio/ogg", "media/tg_VoiceNote01.ogg", []byte("OggS\x00\x02voice"), "", ""},
		{"video", "Video", "video/mp4", "media/tg_VideoClip01.mp4", []byte("\x00\x00\x00\x18ftypmp42"), "", ""},
		{"HEIC without a working converter", "Image", "image/heic", "media/tg_HeicPhoto01.heic", []byte("\x00\x00\x00\x18ftypheic garbage"), "", "could not be converted for viewing"},
		{"corrupt png", "Image", "image/png", "media/tg_BrokenPng01.png", []byte("\x89PNG\r\n\x1a\nnot really"), "", "could not be decoded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, "family")
			// media/tg_PdfDocument1_report.pdf → tg_PdfDocument1
			base := strings.TrimSuffix(filepath.Base(tc.rel), filepath.Ext(tc.rel))
			ref := strings.Join(strings.SplitN(base, "_", 3)[:2], "_")
			h.add(media(ref, tc.kind, tc.mime, tc.rel, tc.data))
			c := connect(t, newTestServer(t, h, 4096))
			res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": ref})
			texts, images, emb := parts(t, res)
			if res.IsError || len(texts) != 1 || len(images) != 0 {
				t.Fatalf("got error=%v %q images=%d", res.IsError, texts, len(images))
			}
			for _, want := range []string{tc.rel, filepath.Join(h.dir, tc.rel), tc.kind + " ref:" + ref, tc.wantNote} {
				if !strings.Contains(texts[0], want) {
					t.Errorf("text lacks %q:\n%s", want, texts[0])
				}
			}
			switch tc.wantRes {
			case "":
				if len(emb) != 0 {
					t.Errorf("unexpected embedded resource")
				}
			case "blob":
				if len(emb) != 1 {
					t.Fatalf("want an embedded resource")
				}
				b, ok := mcpgo.AsBlobResourceContents(emb[0].Resource)
				if !ok {
					t.Fatalf("resource is %T, want blob", emb[0].Resource)
				}
				got, _ := base64.StdEncoding.DecodeString(b.Blob)
				if !bytes.Equal(got, tc.data) || b.MIMEType != "application/pdf" || !strings.HasPrefix(b.URI, "file:///") {
					t.Errorf("blob %q %s %s", got, b.MIMEType, b.URI)
				}
			case "text":
				if len(emb) != 1 {
					t.Fatalf("want an embedded resource")
				}
				r, ok := mcpgo.AsTextResourceContents(emb[0].Resource)
				if !ok {
					t.Fatalf("resource is %T, want text", emb[0].Resource)
				}
				if r.Text != string(tc.data) || r.MIMEType != tc.mime {
					t.Errorf("text resource %q %s", r.Text, r.MIMEType)
				}
			}
		})
	}
}

func TestFetchRefusesPathsOutsideGroup(t *testing.T) {
	h := newFakeHost(t, "family")
	outside := filepath.Join(filepath.Dir(h.dir), "secret.png")
	if err := os.WriteFile(outside, encodePNG(t, gradient(8, 8)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(h.dir, "media", "tg_SymlinkOut1.png")); err != nil {
		t.Fatal(err)
	}
	// The host is trusted, but a bug or a planted link must not turn
	// fetch_media into a reader of arbitrary files.
	h.add(fakeMedia{res: registry.FetchMediaResult{Ref: "tg_SymlinkOut1", Kind: "Image", MIME: "image/png", Path: "media/tg_SymlinkOut1.png"}})
	h.add(fakeMedia{res: registry.FetchMediaResult{Ref: "tg_DotDotPath1", Kind: "Image", MIME: "image/png", Path: "../secret.png"}})
	h.add(fakeMedia{res: registry.FetchMediaResult{Ref: "tg_AbsPath0001", Kind: "Image", MIME: "image/png", Path: outside}})
	h.add(fakeMedia{res: registry.FetchMediaResult{Ref: "tg_Missing0001", Kind: "Image", MIME: "image/png", Path: "media/gone.png"}})
	c := connect(t, newTestServer(t, h, 0))
	for _, ref := range []string{"tg_SymlinkOut1", "tg_DotDotPath1", "tg_AbsPath0001", "tg_Missing0001"} {
		res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": ref})
		texts, images, _ := parts(t, res)
		if !res.IsError || len(images) != 0 || !strings.Contains(texts[0], "[internal]") {
			t.Errorf("%s: got error=%v %q images=%d", ref, res.IsError, texts, len(images))
		}
		if strings.Contains(texts[0], "media/") || strings.Contains(texts[0], "secret") || strings.Contains(texts[0], h.dir) {
			t.Errorf("%s: the error names a path: %q", ref, texts[0])
		}
	}
}

// The group's copy is gone before fetch_media's MCP half opens it (the
// disk budget evicted it once the host let go): the fetch is asked again,
// which places it again, and the bytes are shown; gone every time, the
// error says why without naming a path.
func TestFetchAgainWhenTheCopyIsGone(t *testing.T) {
	h := newFakeHost(t, "family")
	h.add(media("tg_Evicted0001", "Document", "text/plain", "media/tg_Evicted0001_notes.txt", []byte("the owner's notes\n")))
	h.add(media("tg_Evicted0002", "Document", "text/plain", "media/tg_Evicted0002_notes.txt", []byte("more notes\n")))
	h.evict = map[string]int{"tg_Evicted0001": placeTries - 1, "tg_Evicted0002": placeTries}
	c := connect(t, newTestServer(t, h, 0))

	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_Evicted0001"})
	_, _, embedded := parts(t, res)
	if res.IsError || len(embedded) != 1 {
		t.Fatalf("fetch of a copy evicted %d times: error=%v %v", placeTries-1, res.IsError, res.Content)
	}
	if tr, ok := embedded[0].Resource.(mcpgo.TextResourceContents); !ok || tr.Text != "the owner's notes\n" {
		t.Errorf("shown %+v, want the notes", embedded[0].Resource)
	}
	if n := len(h.Calls()); n != placeTries {
		t.Errorf("%d calls to the host, want %d", n, placeTries)
	}

	res = callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_Evicted0002"})
	texts, _, _ := parts(t, res)
	if !res.IsError || !strings.Contains(texts[0], "[internal]") || !strings.Contains(texts[0], "media.max_disk_bytes") {
		t.Fatalf("a copy gone every time: error=%v %q", res.IsError, texts)
	}
	if strings.Contains(texts[0], "media/") || strings.Contains(texts[0], h.dir) {
		t.Errorf("the error names a path: %q", texts[0])
	}
	if n := len(h.Calls()); n != 2*placeTries {
		t.Errorf("%d calls to the host, want %d", n, 2*placeTries)
	}
}

func TestFetchBadRef(t *testing.T) {
	h := newFakeHost(t, "family")
	c := connect(t, newTestServer(t, h, 0))
	for _, args := range []map[string]any{{}, {"mediaRef": ""}, {"mediaRef": "../../etc/passwd"}, {"mediaRef": 12}} {
		res := callTool(t, c, registry.FetchMedia, args)
		texts, _, _ := parts(t, res)
		if !res.IsError || !strings.Contains(texts[0], "bad_request") {
			t.Errorf("%v: got error=%v %q", args, res.IsError, texts)
		}
	}
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_Unknown0001"})
	texts, _, _ := parts(t, res)
	if !res.IsError || !strings.Contains(texts[0], "not_found") {
		t.Errorf("unknown ref: got error=%v %q", res.IsError, texts)
	}
	if n := len(h.Calls()); n != 1 {
		t.Errorf("%d calls, want 1 (only the well-formed ref)", n)
	}
}

func TestFetchSniffsWhenMIMEMissing(t *testing.T) {
	h := newFakeHost(t, "family")
	src := encodePNG(t, gradient(10, 10))
	m := media("tg_NoMimeGiven1", "Image", "", "media/tg_NoMimeGiven1", src)
	h.add(m)
	c := connect(t, newTestServer(t, h, 0))
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_NoMimeGiven1"})
	_, images, _ := parts(t, res)
	if res.IsError || len(images) != 1 || images[0].MIMEType != "image/png" {
		t.Fatalf("got error=%v images=%d", res.IsError, len(images))
	}
}
