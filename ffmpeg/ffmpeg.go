// Package ffmpeg runs the ffmpeg and ffprobe found on PATH over media
// files from chats: stills of a video, its sound as a voice note. They are
// optional: without them, the caller says what to install. Each run is a
// child of package box, under the media.parse limits: a video made to
// exhaust memory costs botd at most those.
package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/box"
)

// input is how the tools name the file box hands them as fd 3: opened
// again through the descriptor, never by its path in the group folder.
const input = "/dev/fd/3"

// Options are the media.parse limits of each run, and where it logs.
type Options struct {
	Limits box.Limits
	Log    *slog.Logger
}

// ErrMissing: ffmpeg is not installed.
var ErrMissing = box.Missing("ffmpeg", "install ffmpeg to see frames of videos and hear their sound")

// Keyframes takes up to n JPEG stills spread over the video in f, with
// the time of each. Without ffprobe to tell the length, it takes the
// first frame only.
func Keyframes(ctx context.Context, f *os.File, n int, o Options) ([][]byte, []time.Duration, error) {
	at := []time.Duration{0}
	d, err := Length(ctx, f, o)
	switch {
	case box.IsLimit(err), errors.Is(err, box.ErrBusy):
		// The same file would hit the same wall again for every still.
		return nil, nil, err
	case err == nil && d > time.Second:
		at = at[:0]
		for i := 0; i < n; i++ {
			at = append(at, d*time.Duration(2*i+1)/time.Duration(2*n))
		}
	}
	var frames [][]byte
	var times []time.Duration
	for _, t := range at {
		var b []byte
		_, err := box.Run(ctx, box.Job{Tool: "ffmpeg", Install: ErrMissing.Detail, Input: f, What: "this video", Limits: o.Limits, Log: o.Log,
			Args: []string{"-v", "error", "-nostdin", "-ss", strconv.FormatFloat(t.Seconds(), 'f', 2, 64),
				"-i", input, "-frames:v", "1", "-vf", "scale='min(1024,iw)':-2", "-q:v", "5", "-y", "frame.jpg"},
			Collect: func(dir string) error {
				b, _ = os.ReadFile(filepath.Join(dir, "frame.jpg")) // none: past the end of a short or broken video
				return nil
			}})
		if err != nil {
			return frames, times, err
		}
		if len(b) > 0 {
			frames, times = append(frames, b), append(times, t)
		}
	}
	return frames, times, nil
}

// Length asks ffprobe how long the video in f is.
func Length(ctx context.Context, f *os.File, o Options) (time.Duration, error) {
	r, err := box.Run(ctx, box.Job{Tool: "ffprobe", Install: "install ffmpeg to know how long videos are", Input: f, What: "this video",
		Limits: o.Limits, Log: o.Log, Args: []string{"-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", input}})
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(string(r.Stdout)), 64)
	if err != nil || s <= 0 || s > 24*3600 {
		return 0, fmt.Errorf("ffprobe: no usable duration in %q", r.Stdout)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// Clock renders a time in a video as m:ss.
func Clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// soundOutput is the least AudioTrack may write: 24 kbit/s of Opus is
// 64 MB in six hours, more than any video botd downloads lasts.
const soundOutput = 64 << 20

// AudioTrack writes the sound of the video in f as an OGG/Opus voice note
// into a temporary file and returns it opened (already unlinked). A video
// without sound answers ErrNoSound.
func AudioTrack(ctx context.Context, f *os.File, o Options) (*os.File, error) {
	o.Limits.Output = max(o.Limits.Output, soundOutput)
	var sound *os.File
	_, err := box.Run(ctx, box.Job{Tool: "ffmpeg", Install: ErrMissing.Detail, Input: f, What: "this video", Limits: o.Limits, Log: o.Log,
		Args: []string{"-v", "error", "-nostdin", "-i", input, "-vn", "-ac", "1", "-c:a", "libopus", "-b:a", "24k", "-y", "sound.ogg"},
		Collect: func(dir string) error {
			var err error
			sound, err = os.Open(filepath.Join(dir, "sound.ogg")) // unlinked with the directory, still readable
			return err
		}})
	if err != nil {
		var e *box.Error
		if errors.As(err, &e) && e.Kind == box.KindFailed &&
			(strings.Contains(e.Detail, "does not contain any stream") || strings.Contains(e.Detail, "matches no streams")) {
			return nil, ErrNoSound
		}
		return nil, err
	}
	if fi, err := sound.Stat(); err != nil || fi.Size() == 0 {
		sound.Close()
		return nil, ErrNoSound
	}
	return sound, nil
}

// ErrNoSound: the video has no audio track.
var ErrNoSound = errors.New("the video has no sound")
