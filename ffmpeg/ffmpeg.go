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
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/internal/box"
	"github.com/botd-dev/botd/internal/textclip"
)

// input is how the tools name the file box hands them as fd 3: opened
// again through the descriptor, never by its path in the group folder.
// (The pipe protocol cannot seek, which a phone's MP4 with its index at
// the end needs, and ffmpeg 5.1 has no fd protocol: the file protocol it
// is.)
const input = "/dev/fd/3"

// containers are the demuxers ffmpeg and ffprobe may read a chat's file
// with, by their ffmpeg names, and how a sentence names them. The bytes of
// a file choose its demuxer, and some demuxers open further files by name:
// an HLS or DASH playlist its segments, a concat script the files it
// lists, image2 a numbered sequence, a QuickTime file its external data
// references. A 174-byte "clip.mp4" that was an HLS playlist had ffmpeg
// read another group's video. These read the one byte stream they are
// given and nothing else (mov's data references stay off, see
// InputArgs); images never come this way (Go decodes them, and HEIC is
// mov's from FFmpeg 7), so no image demuxer is on the list.
var containers = []struct{ Name, Says string }{
	{"mov", "MP4/MOV/M4A/3GP"},
	{"matroska", "Matroska/WebM"},
	{"mpegts", "MPEG-TS"},
	{"ogg", "Ogg"},
	{"wav", "WAV"},
	{"mp3", "MP3"},
	{"flac", "FLAC"},
	{"aac", "AAC"},
	{"avi", "AVI"},
}

// whitelist is containers as ffmpeg's -format_whitelist.
var whitelist = func() string {
	var names []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}()

// allowed reports whether name, a demuxer's name as ffprobe reports it
// ("mov,mp4,m4a,3gp,3g2,mj2"), is one of containers, and the name to pass
// to -f.
func allowed(name string) (string, bool) {
	first, _, _ := strings.Cut(name, ",")
	for _, c := range containers {
		if c.Name == first {
			return first, true
		}
	}
	return "", false
}

// InputArgs are the arguments through -i that make ffmpeg or ffprobe read
// the input of a box child, and only it: every run of either tool over a
// chat's file starts its input with them. Only the file protocol (no
// network, no data:, subfile or concat protocols, and nothing a demuxer
// opens by URL gets any other); only the demuxers of containers, the
// probe refusing any other before it reads a header; format, when known,
// named with -f so nothing is guessed again; and for mov, external data
// references off, relative or absolute (they are off by default: kept
// off whatever the default becomes).
func InputArgs(format string) []string {
	a := []string{"-protocol_whitelist", "file", "-format_whitelist", whitelist}
	if format != "" {
		a = append(a, "-f", format)
		if format == "mov" {
			a = append(a, "-enable_drefs", "0", "-use_absolute_path", "0")
		}
	}
	return append(a, "-i", input)
}

// ContainerError: the file's container is not one of containers.
type ContainerError struct {
	What   string // "this video"
	Format string // the demuxer ffmpeg would have used, "" when unknown
}

func (e *ContainerError) Error() string {
	var says []string
	for _, c := range containers {
		says = append(says, c.Says)
	}
	what := e.What
	if what == "" {
		what = "this file"
	}
	if e.Format == "" {
		return fmt.Sprintf("%s's container is not one botd reads (it reads %s)", what, strings.Join(says, ", "))
	}
	return fmt.Sprintf("%s's container (%s) is not one botd reads (it reads %s)", what, e.Format, strings.Join(says, ", "))
}

// ErrExternal: the file is a reference movie, its pictures or sound kept
// in other files it names; ffmpeg is never let open them.
var ErrExternal = errors.New("this video keeps its pictures or sound in other files it names (a reference movie); botd reads only the file itself")

// Refused reports whether err says botd will not read the file at all
// (its container, or what it refers to): no other run can do better.
func Refused(err error) bool {
	var ce *ContainerError
	return errors.As(err, &ce) || errors.Is(err, ErrExternal)
}

// refusedRe is how ffmpeg says its format whitelist refused the demuxer
// the bytes chose: "[hls @ 0x55f6…] Format not on whitelist 'mov,…'".
var refusedRe = regexp.MustCompile(`\[([a-z0-9_]{1,32}) @ 0x[0-9a-f]+\] Format not on whitelist`)

// refused turns a run that failed because the container is not allowed
// into a *ContainerError, naming the container when ffmpeg did.
func refused(err error, what string) error {
	var e *box.Error
	if !errors.As(err, &e) || e.Kind != box.KindFailed || !strings.Contains(e.Detail, "Format not on whitelist") {
		return err
	}
	ce := &ContainerError{What: what}
	if m := refusedRe.FindStringSubmatch(e.Detail); m != nil {
		ce.Format = m[1]
	}
	return ce
}

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
	p, err := probe(ctx, f, o)
	switch {
	case Refused(err), box.IsLimit(err), errors.Is(err, box.ErrBusy):
		// Refused, or the same file would hit the same wall again for
		// every still.
		return nil, nil, err
	case err == nil && p.Duration > time.Second:
		at = at[:0]
		for i := 0; i < n; i++ {
			at = append(at, p.Duration*time.Duration(2*i+1)/time.Duration(2*n))
		}
	}
	var frames [][]byte
	var times []time.Duration
	for _, t := range at {
		var b []byte
		args := append([]string{"-v", "error", "-nostdin", "-ss", strconv.FormatFloat(t.Seconds(), 'f', 2, 64)}, InputArgs(p.Format)...)
		_, err := box.Run(ctx, box.Job{Tool: "ffmpeg", Install: ErrMissing.Detail, Input: f, What: video, Limits: o.Limits, Log: o.Log,
			Args: append(args, "-frames:v", "1", "-vf", "scale='min(1024,iw)':-2", "-q:v", "5", "-y", "frame.jpg"),
			Collect: func(dir string) error {
				b, _ = os.ReadFile(filepath.Join(dir, "frame.jpg")) // none: past the end of a short or broken video
				return nil
			}})
		if err != nil {
			return frames, times, refused(err, video)
		}
		if len(b) > 0 {
			frames, times = append(frames, b), append(times, t)
		}
	}
	return frames, times, nil
}

// video is what the sentences call the input.
const video = "this video"

// Probe is what ffprobe tells of a file.
type Probe struct {
	// Format is the container, as -f names it: one of containers.
	Format   string
	Duration time.Duration // 0 when unknown
}

// probe asks ffprobe which container the file in f is and how long it
// lasts. A container not in containers answers a *ContainerError, a
// reference movie ErrExternal; a
// missing ffprobe, a KindMissing *box.Error (the callers go on without:
// ffmpeg's own format whitelist still holds then).
func probe(ctx context.Context, f *os.File, o Options) (Probe, error) {
	// Warnings too: mov says on stderr which external tracks it skipped.
	args := append([]string{"-v", "warning"}, InputArgs("")...)
	r, err := box.Run(ctx, box.Job{Tool: "ffprobe", Install: "install ffmpeg to know how long videos are", Input: f, What: video,
		Limits: o.Limits, Log: o.Log, Args: append(args, "-show_entries", "format=format_name,duration", "-of", "default=noprint_wrappers=1")})
	if err != nil {
		return Probe{}, refused(err, video)
	}
	if strings.Contains(r.Stderr, "Skipped opening external track") {
		return Probe{}, ErrExternal
	}
	var p Probe
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "format_name":
			name, ok := allowed(v)
			if !ok {
				// The whitelist already refused it; never pass an
				// unknown name on to -f.
				return Probe{}, &ContainerError{What: video, Format: textclip.OneLine(v, 40)}
			}
			p.Format = name
		case "duration":
			if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s <= 24*3600 {
				p.Duration = time.Duration(s * float64(time.Second))
			}
		}
	}
	if p.Format == "" {
		return Probe{}, fmt.Errorf("ffprobe: no container named in %q", textclip.OneLine(string(r.Stdout), 200))
	}
	return p, nil
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
	p, err := probe(ctx, f, o)
	if Refused(err) || box.IsLimit(err) || errors.Is(err, box.ErrBusy) {
		return nil, err
	}
	o.Limits.Output = max(o.Limits.Output, soundOutput)
	var sound *os.File
	args := append([]string{"-v", "error", "-nostdin"}, InputArgs(p.Format)...)
	_, err = box.Run(ctx, box.Job{Tool: "ffmpeg", Install: ErrMissing.Detail, Input: f, What: video, Limits: o.Limits, Log: o.Log,
		Args: append(args, "-vn", "-ac", "1", "-c:a", "libopus", "-b:a", "24k", "-y", "sound.ogg"),
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
		return nil, refused(err, video)
	}
	if fi, err := sound.Stat(); err != nil || fi.Size() == 0 {
		sound.Close()
		return nil, ErrNoSound
	}
	return sound, nil
}

// ErrNoSound: the video has no audio track.
var ErrNoSound = errors.New("the video has no sound")
