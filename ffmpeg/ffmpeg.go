// Package ffmpeg runs the ffmpeg and ffprobe found on PATH over media
// files from chats: stills of a video, its sound as a voice note. They are
// optional: without them, the caller says what to install.
package ffmpeg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Timeout bounds one ffmpeg or ffprobe run over a chat member's file.
const Timeout = 60 * time.Second

// ErrMissing: ffmpeg is not installed.
var ErrMissing = errors.New("ffmpeg is not on PATH (install ffmpeg to see frames of videos and hear their sound)")

// Keyframes takes up to n JPEG stills spread over the video at path, with
// the time of each. Without ffprobe to tell the length, it takes the
// first frame only.
func Keyframes(ctx context.Context, path string, n int) ([][]byte, []time.Duration, error) {
	ff, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, nil, ErrMissing
	}
	dir, err := os.MkdirTemp("", "botd-frames-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	at := []time.Duration{0}
	if d, err := Length(ctx, path); err == nil && d > time.Second {
		at = at[:0]
		for i := 0; i < n; i++ {
			at = append(at, d*time.Duration(2*i+1)/time.Duration(2*n))
		}
	}
	var frames [][]byte
	var times []time.Duration
	for i, t := range at {
		out := filepath.Join(dir, fmt.Sprintf("f%d.jpg", i))
		cctx, cancel := context.WithTimeout(ctx, Timeout)
		msg, err := exec.CommandContext(cctx, ff, "-v", "error", "-nostdin", "-ss", strconv.FormatFloat(t.Seconds(), 'f', 2, 64),
			"-i", path, "-frames:v", "1", "-vf", "scale='min(1024,iw)':-2", "-q:v", "5", "-y", out).CombinedOutput()
		cancel()
		if err != nil {
			return frames, times, fmt.Errorf("ffmpeg: %w: %s", err, bytes.TrimSpace(msg[:min(len(msg), 300)]))
		}
		b, err := os.ReadFile(out)
		if err != nil || len(b) == 0 {
			continue // past the end of a short or broken video
		}
		frames, times = append(frames, b), append(times, t)
	}
	return frames, times, nil
}

// Length asks ffprobe how long the video is.
func Length(ctx context.Context, path string) (time.Duration, error) {
	fp, err := exec.LookPath("ffprobe")
	if err != nil {
		return 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	out, err := exec.CommandContext(cctx, fp, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path).Output()
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || s <= 0 || s > 24*3600 {
		return 0, fmt.Errorf("ffprobe: no usable duration in %q", out)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// Clock renders a time in a video as m:ss.
func Clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// AudioTrack writes the sound of the video at path as an OGG/Opus voice
// note into a temporary file and returns it opened (already unlinked).
// A video without sound answers ErrNoSound.
func AudioTrack(ctx context.Context, path string) (*os.File, error) {
	ff, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, ErrMissing
	}
	dir, err := os.MkdirTemp("", "botd-sound-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "sound.ogg")
	cctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	msg, err := exec.CommandContext(cctx, ff, "-v", "error", "-nostdin", "-i", path, "-vn", "-ac", "1", "-c:a", "libopus", "-b:a", "24k", "-y", out).CombinedOutput()
	if err != nil {
		if bytes.Contains(msg, []byte("does not contain any stream")) || bytes.Contains(msg, []byte("matches no streams")) {
			return nil, ErrNoSound
		}
		return nil, fmt.Errorf("ffmpeg: %w: %s", err, bytes.TrimSpace(msg[:min(len(msg), 300)]))
	}
	f, err := os.Open(out) // unlinked by the deferred RemoveAll, still readable
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
		f.Close()
		return nil, ErrNoSound
	}
	return f, nil
}

// ErrNoSound: the video has no audio track.
var ErrNoSound = errors.New("the video has no sound")
