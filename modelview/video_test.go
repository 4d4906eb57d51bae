package modelview

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
	registry "github.com/botd-dev/botd/tools"
)

// A video is shown as stills spread over it when ffmpeg is installed, and
// says what to install when it is not.
func TestVideoFrames(t *testing.T) {
	clip := []byte("\x00\x00\x00\x18ftypmp42 not a real movie")
	t.Run("ffmpeg installed", func(t *testing.T) {
		ffmpegtest.Install(t, "20.0", ffmpegtest.WriteFrame)
		h := newFakeHost(t, "family")
		h.add(media("tg_VideoClip01", "Video", "video/mp4", "media/tg_VideoClip01.mp4", clip))
		res := callTool(t, connect(t, newTestServer(t, h, 1<<20)), registry.FetchMedia, map[string]any{"mediaRef": "tg_VideoClip01"})
		texts, images, _ := parts(t, res)
		if res.IsError || len(images) != 4 {
			t.Fatalf("error=%v images=%d %q", res.IsError, len(images), texts)
		}
		if !strings.Contains(texts[0], "Shown: 4 frames of the video, at 0:03, 0:08, 0:13, 0:18.") {
			t.Errorf("text: %s", texts[0])
		}
		if b, _ := base64.StdEncoding.DecodeString(images[0].Data); string(b) != ffmpegtest.Frame || images[0].MIMEType != "image/jpeg" {
			t.Errorf("frame %q %s", b, images[0].MIMEType)
		}
		if l := links(res); len(l) != 1 || l[0].MIMEType != "video/mp4" || l[0].Name != "media/tg_VideoClip01.mp4" {
			t.Errorf("links = %+v, want the saved video", l)
		}
	})
	t.Run("no ffmpeg", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		h := newFakeHost(t, "family")
		h.add(media("tg_VideoClip01", "Video", "video/mp4", "media/tg_VideoClip01.mp4", clip))
		res := callTool(t, connect(t, newTestServer(t, h, 1<<20)), registry.FetchMedia, map[string]any{"mediaRef": "tg_VideoClip01"})
		texts, images, _ := parts(t, res)
		if res.IsError || len(images) != 0 || !strings.Contains(texts[0], "install ffmpeg") || !strings.Contains(texts[0], "media/tg_VideoClip01.mp4") {
			t.Errorf("error=%v images=%d %q", res.IsError, len(images), texts)
		}
	})
}
