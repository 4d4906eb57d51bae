package ffmpeg_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
)

// The files chats send still work with the real tools, each read by the
// demuxer its probe named: stills of the videos (green, as made) and the
// sound of all of them.
func TestRealInputs(t *testing.T) {
	ffmpegtest.NeedReal(t)
	green := []string{"-f", "lavfi", "-i", "color=c=green:s=64x48:d=3"}
	tone := []string{"-f", "lavfi", "-i", "sine=f=440:d=3"}
	both := slices.Concat(green, tone, []string{"-shortest"})
	with := func(base []string, more ...string) []string { return slices.Concat(base, more) }
	for _, c := range []struct {
		file   string
		args   []string
		format string
		video  bool
	}{
		{"phone.mp4", with(both, "-c:v", "libx264", "-c:a", "aac"), "mov", true}, // its index at the end
		{"web.mp4", with(both, "-c:v", "libx264", "-c:a", "aac", "-movflags", "+faststart"), "mov", true},
		{"clip.mov", with(both, "-c:v", "libx264", "-c:a", "aac"), "mov", true},
		{"clip.webm", with(both, "-c:v", "libvpx-vp9", "-c:a", "libopus"), "matroska", true},
		{"clip.mkv", with(both, "-c:v", "libx264", "-c:a", "flac"), "matroska", true},
		{"clip.ts", with(both, "-c:v", "libx264", "-g", "10", "-c:a", "aac"), "mpegts", true}, // keyframes as often as broadcasts have them: a TS seeks to the next one
		{"clip.avi", with(both, "-c:v", "mjpeg", "-c:a", "libmp3lame"), "avi", true},
		{"voice.ogg", with(tone, "-c:a", "libopus"), "ogg", false},
		{"song.mp3", with(tone, "-c:a", "libmp3lame"), "mp3", false},
		{"memo.wav", tone, "wav", false},
		{"memo.m4a", with(tone, "-c:a", "aac"), "mov", false},
		{"memo.flac", tone, "flac", false},
		{"memo.aac", with(tone, "-c:a", "aac"), "aac", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.file)
			ffmpegtest.Make(t, path, c.args...)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx := context.Background()
			p, err := ffmpeg.ProbeFile(ctx, f, lim)
			if err != nil || p.Format != c.format || p.Duration < 2e9 {
				t.Fatalf("probe = %+v, %v; want %s of about 3 s", p, err, c.format)
			}
			if c.video {
				frames, _, err := ffmpeg.Keyframes(ctx, f, 4, lim)
				if err != nil || len(frames) != 4 {
					t.Fatalf("%d stills, %v; want 4", len(frames), err)
				}
				img, err := jpeg.Decode(bytes.NewReader(frames[2]))
				if err != nil {
					t.Fatalf("still: %v", err)
				}
				if !greenish(img) {
					t.Errorf("still's middle is %v, not the video's green", img.At(32, 24))
				}
			}
			sound, err := ffmpeg.AudioTrack(ctx, f, lim)
			if err != nil {
				t.Fatalf("AudioTrack: %v", err)
			}
			defer sound.Close()
			head := make([]byte, 4)
			if _, err := io.ReadFull(sound, head); err != nil || string(head) != "OggS" {
				t.Errorf("sound starts %q, %v; want an Ogg file", head, err)
			}
		})
	}
}

func greenish(img image.Image) bool {
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Dx()/2, b.Dy()/2).RGBA()
	return g>>8 > 100 && r>>8 < 60 && bl>>8 < 60
}
