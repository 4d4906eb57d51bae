package ffmpeg_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
	"github.com/botd-dev/botd/internal/box"
)

func TestMain(m *testing.M) {
	box.Main()
	os.Exit(m.Run())
}

var fakeTools = ffmpegtest.Install

var lim = ffmpeg.Options{}

// video is an opened file standing for a video: the stand-in tools do not
// read it.
func video(t *testing.T) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(p, []byte("\x00\x00\x00\x18ftypmp42"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestKeyframesSpreadOverTheVideo(t *testing.T) {
	log := fakeTools(t, "8.000000", ffmpegtest.WriteFrame)
	frames, at, err := ffmpeg.Keyframes(context.Background(), video(t), 4, lim)
	if err != nil || len(frames) != 4 {
		t.Fatalf("frames = %d, %v", len(frames), err)
	}
	var when []string
	for _, d := range at {
		when = append(when, ffmpeg.Clock(d))
	}
	if strings.Join(when, " ") != "0:01 0:03 0:05 0:07" {
		t.Errorf("frames at %v, want 0:01 0:03 0:05 0:07", when)
	}
	args, _ := os.ReadFile(log)
	if !strings.Contains(string(args), "-ss 5.00 -protocol_whitelist file -format_whitelist mov,") ||
		!strings.Contains(string(args), " -f mov -enable_drefs 0 -use_absolute_path 0 -i /dev/fd/3 -frames:v 1") {
		t.Errorf("ffmpeg was not asked for the frame at 5s of the MP4 ffprobe found, and only it:\n%s", args)
	}
}

func TestKeyframesWithoutFFprobeTakesTheFirst(t *testing.T) {
	fakeTools(t, "", ffmpegtest.WriteFrame)
	frames, at, err := ffmpeg.Keyframes(context.Background(), video(t), 4, lim)
	if err != nil || len(frames) != 1 || at[0] != 0 {
		t.Errorf("frames = %d at %v, %v; want the first one", len(frames), at, err)
	}
}

func TestWithoutFFmpeg(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, _, err := ffmpeg.Keyframes(context.Background(), video(t), 4, lim); !errors.Is(err, ffmpeg.ErrMissing) {
		t.Errorf("Keyframes: %v, want ffmpeg.ErrMissing", err)
	}
	if _, err := ffmpeg.AudioTrack(context.Background(), video(t), lim); !errors.Is(err, ffmpeg.ErrMissing) || !strings.Contains(err.Error(), "install ffmpeg") {
		t.Errorf("AudioTrack: %v, want ffmpeg.ErrMissing saying what to install", err)
	}
}

func TestAudioTrack(t *testing.T) {
	fakeTools(t, "", `printf 'OggS sound' > "$out"`)
	f, err := ffmpeg.AudioTrack(context.Background(), video(t), lim)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 10)
	n, _ := f.ReadAt(b, 0)
	if string(b[:n]) != "OggS sound" {
		t.Errorf("sound = %q", b[:n])
	}
	if _, err := os.Stat(f.Name()); err == nil {
		t.Errorf("the temporary sound file was left behind: %s", f.Name())
	}

	fakeTools(t, "", `echo "Output file #0 does not contain any stream" >&2; exit 1`)
	if _, err := ffmpeg.AudioTrack(context.Background(), video(t), lim); !errors.Is(err, ffmpeg.ErrNoSound) {
		t.Errorf("silent video: %v, want ffmpeg.ErrNoSound", err)
	}
	fakeTools(t, "", `echo "moov atom not found" >&2; exit 1`)
	if _, err := ffmpeg.AudioTrack(context.Background(), video(t), lim); err == nil || !strings.Contains(err.Error(), "moov atom not found") {
		t.Errorf("broken video: %v, want ffmpeg's complaint", err)
	}
}

func TestClock(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0:00", 1500 * time.Millisecond: "0:02", 65 * time.Second: "1:05", 3725 * time.Second: "62:05"} {
		if got := ffmpeg.Clock(d); got != want {
			t.Errorf("Clock(%v) = %s, want %s", d, got, want)
		}
	}
}
