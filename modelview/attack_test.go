//go:build linux

package modelview

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/botd-dev/botd/doctext/doctexttest"
	"github.com/botd-dev/botd/internal/box"
	registry "github.com/botd-dev/botd/tools"
)

// attackGoalMB is issue 27's goal for every child, whatever arrives.
const attackGoalMB = 300

// giantJPEG is a valid baseline grey JPEG of side×side uniform mid-grey
// pixels, about 3 MB for 16000², written without holding the image: Go
// encodes an 8×8 one for the headers, and every block of a uniform
// mid-grey image is the same six bits (DC difference 0 "00", EOB "1010").
func giantJPEG(t *testing.T, side int) []byte {
	t.Helper()
	if side%32 != 0 {
		t.Fatalf("side %d: want a multiple of 32 (whole bytes of blocks)", side)
	}
	small := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range small.Pix {
		small.Pix[i] = 128
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, small, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	sof := bytes.Index(b, []byte{0xff, 0xc0})
	sos := bytes.Index(b, []byte{0xff, 0xda})
	if sof < 0 || sos < 0 {
		t.Fatal("no SOF0 or SOS in Go's JPEG")
	}
	head := append([]byte(nil), b[:sos+2+(int(b[sos+2])<<8|int(b[sos+3]))]...)
	head[sof+5], head[sof+6] = byte(side>>8), byte(side) // height
	head[sof+7], head[sof+8] = byte(side>>8), byte(side) // width
	blocks := (side / 8) * (side / 8)
	out := bytes.NewBuffer(head)
	for range blocks / 4 { // 4 blocks = 24 bits = 3 bytes
		out.Write([]byte{0x28, 0xa2, 0x8a})
	}
	out.Write([]byte{0xff, 0xd9})
	// The frame decodes: checked at a side Go can afford here.
	if side <= 1024 {
		img, err := jpeg.Decode(bytes.NewReader(out.Bytes()))
		if err != nil || img.Bounds().Dx() != side || color.GrayModel.Convert(img.At(side/2, side/2)).(color.Gray).Y != 128 {
			t.Fatalf("the hand-made JPEG does not decode as uniform grey: %v", err)
		}
	}
	return out.Bytes()
}

func TestGiantJPEGDecodes(t *testing.T) {
	giantJPEG(t, 1024)
}

// rssLog keeps the peak RSS of every box child that reports one.
type rssLog struct {
	mu   sync.Mutex
	peak map[string]int64 // by job
}

func (l *rssLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *rssLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "box: child done" {
		return nil
	}
	var job string
	var rss int64
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "job":
			job = a.Value.String()
		case "max_rss":
			rss = a.Value.Int64()
		}
		return true
	})
	l.mu.Lock()
	l.peak[job] = max(l.peak[job], rss)
	l.mu.Unlock()
	return nil
}
func (l *rssLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *rssLog) WithGroup(string) slog.Handler      { return l }

// fetchHostile saves data in a group folder and fetches it as the agent
// would, returning the texts, the image count and each child's peak RSS.
func fetchHostile(t *testing.T, name, kind, mime string, data []byte, parse box.Limits) (string, int, map[string]int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "groups", "family")
	if err := os.MkdirAll(filepath.Join(dir, "media"), 0o750); err != nil {
		t.Fatal(err)
	}
	rel := "media/" + name
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o640); err != nil {
		t.Fatal(err)
	}
	rl := &rssLog{peak: map[string]int64{}}
	tl, err := New(Options{GroupDir: dir, Log: slog.New(rl), InlineMaxBytes: 1 << 20, Parse: parse, Caller: instantHost{registry.FetchMediaResult{
		Ref: "tg_Hostile00001", Kind: kind, MIME: mime, Size: int64(len(data)), Path: rel, Name: name}}})
	if err != nil {
		t.Fatal(err)
	}
	req := registry.Args(map[string]any{"mediaRef": "tg_Hostile00001"})
	res, err := fetchMCP(tl, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	images := 0
	for _, c := range res.Content {
		switch v := c.(type) {
		case mcpgo.TextContent:
			texts = append(texts, v.Text)
		case mcpgo.ImageContent:
			images++
		}
	}
	return strings.Join(texts, "\n"), images, rl.peak
}

func checkPeaks(t *testing.T, peaks map[string]int64, want ...string) {
	t.Helper()
	for _, job := range want {
		rss, ok := peaks[job]
		if !ok {
			t.Errorf("no %s child ran (peaks: %v)", job, peaks)
			continue
		}
		t.Logf("%s: peak RSS %d MB", job, rss>>20)
		if rss > attackGoalMB<<20 {
			t.Errorf("%s peaked at %d MB, goal ≤ %d MB", job, rss>>20, attackGoalMB)
		}
	}
}

// A video whose frames are 16000×16000 JPEGs: each ffmpeg decode would
// take over 2 GB. It is answered with a sentence, and no child passes the
// goal.
func TestGiantFrameVideoIsAnsweredWithinMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ffmpeg over a giant frame")
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed")
	}
	frames := t.TempDir()
	frame := giantJPEG(t, 16000)
	for i := 1; i <= 3; i++ {
		if err := os.WriteFile(filepath.Join(frames, fmt.Sprintf("f%d.jpg", i)), frame, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	video := filepath.Join(frames, "giant.avi")
	// Muxed as they are: nothing here decodes a frame.
	if out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-framerate", "1", "-f", "image2", "-i", filepath.Join(frames, "f%d.jpg"),
		"-c", "copy", video).CombinedOutput(); err != nil {
		t.Fatalf("mux: %v\n%s", err, out)
	}
	data, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	text, images, peaks := fetchHostile(t, "giant.avi", "Video", "video/x-msvideo", data, box.Limits{})
	t.Logf("answer: %s", text)
	if images != 0 {
		t.Errorf("%d frames shown of a video no frame of which fits", images)
	}
	if !strings.Contains(text, "needs more memory than botd allows for one file (256 MB; media.parse.memory_bytes)") {
		t.Errorf("want the memory sentence:\n%s", text)
	}
	checkPeaks(t, peaks, "ffprobe")
	if _, ok := peaks["ffmpeg"]; ok {
		checkPeaks(t, peaks, "ffmpeg")
	}
}

// A scanned PDF whose one page is a 16000×16000 JPEG: pdftoppm would take
// 1.5 GB to draw it.
func TestGiantScannedPDFIsAnsweredWithinMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pdftoppm over a giant page")
	}
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm is not installed")
	}
	const side = 16000
	w := doctexttest.NewPDF(false)
	catalog, pages, page, content, img := w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve(), w.Reserve()
	w.Stream(img, fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode",
		side, side), giantJPEG(t, side))
	w.Stream(content, "", []byte("q 612 0 0 792 0 0 cm /Im1 Do Q\n"))
	w.Obj(page, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /XObject << /Im1 %d 0 R >> >> >>",
		pages, content, img))
	w.Obj(pages, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page))
	w.Obj(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	pdf := w.Finish(catalog, "")

	// Poppler streams the DCT image into the scaled page line by line: at
	// the default limits the page is drawn, well within them.
	text, images, peaks := fetchHostile(t, "scan.pdf", "Document", "application/pdf", pdf, box.Limits{})
	t.Logf("answer: %s", text)
	if !strings.Contains(text, "scanned") || (images != 1 && !strings.Contains(text, "needs more memory")) {
		t.Errorf("want the scan noted, and its page or the memory sentence (%d images):\n%s", images, text)
	}
	checkPeaks(t, peaks, jobDocText, "pdftoppm")
}
