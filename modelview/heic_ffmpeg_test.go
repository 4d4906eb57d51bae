package modelview

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
	registry "github.com/botd-dev/botd/tools"
)

// With ffmpeg the only HEIC converter, an HLS playlist saved as a HEIC
// photo (its second line binary, so the declared type wins) does not make
// ffmpeg read the segment it names: the converter is told the container
// (mov), the segment is never opened and no picture of it is shown.
func TestHEICThroughFFmpegReadsOnlyThePhoto(t *testing.T) {
	ffmpegtest.NeedReal(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.ts")
	ffmpegtest.Make(t, secret, "-f", "lavfi", "-i", "color=c=red:s=64x48:d=1", "-c:v", "libx264")
	bin := t.TempDir()
	if err := os.Symlink(mustLookPath(t, "ffmpeg"), filepath.Join(bin, "ffmpeg")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)

	h := newFakeHost(t, "family")
	h.add(media("tg_IphonePhoto1", "Image", "image/heic", "media/tg_IphonePhoto1.heic", ffmpegtest.DisguisedHLS(secret)))
	c := connect(t, newTestServer(t, h, 1<<20))
	opens := ffmpegtest.WatchOpens(t, outside)
	res := callTool(t, c, registry.FetchMedia, map[string]any{"mediaRef": "tg_IphonePhoto1"})
	texts, images, _ := parts(t, res)
	if got := opens.Opened(t); len(got) > 0 {
		t.Errorf("ffmpeg opened %v", got)
	}
	if len(images) != 0 {
		t.Errorf("%d images shown of a playlist posing as a photo", len(images))
	}
	if len(texts) == 0 || !strings.Contains(texts[0], "media/tg_IphonePhoto1.heic") {
		t.Errorf("texts: %q", texts)
	}
	t.Logf("said: %q", texts)
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
