package ffmpeg_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/botd-dev/botd/ffmpeg"
	"github.com/botd-dev/botd/ffmpeg/ffmpegtest"
)

// Files that make ffmpeg open other files by name — an HLS playlist
// posing as clip.mp4, a DASH manifest, a concat script, a numbered image
// sequence, playlists, an MP4 whose track lives in another file — each
// against the real ffmpeg and ffprobe, stills and sound: none may open a
// file besides its input (inotify on the folders says), and each answers
// a sentence. Where an unrestricted ffprobe does follow the file, the
// test first shows that it does, so the fixture is a real attack.
func TestHostileInputsReadNothingElse(t *testing.T) {
	ffmpegtest.NeedReal(t)
	root := t.TempDir()
	outside, group := filepath.Join(root, "outside"), filepath.Join(root, "group")
	for _, d := range []string{outside, group} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Another group's video: red, with a 440 Hz tone.
	secretMP4, secretTS := filepath.Join(outside, "secret.mp4"), filepath.Join(outside, "secret.ts")
	red := []string{"-f", "lavfi", "-i", "color=c=red:s=64x48:d=3", "-f", "lavfi", "-i", "sine=f=440:d=3", "-shortest", "-c:v", "libx264", "-c:a", "aac"}
	ffmpegtest.Make(t, secretMP4, red...)
	ffmpegtest.Make(t, secretTS, red...)
	for i := 1; i <= 3; i++ {
		ffmpegtest.Make(t, filepath.Join(group, "img00"+string(rune('0'+i))+".jpg"), "-f", "lavfi", "-i", "color=c=red:s=64x48", "-frames:v", "1")
	}
	// An MP4 of one blue track whose data is secret.mp4.
	blue := filepath.Join(root, "blue.mp4")
	ffmpegtest.Make(t, blue, "-f", "lavfi", "-i", "color=c=blue:s=64x48:d=3", "-c:v", "libx264")
	b, err := os.ReadFile(blue)
	if err != nil {
		t.Fatal(err)
	}
	dref, err := ffmpegtest.ExternalDref(b, secretMP4)
	if err != nil {
		t.Fatal(err)
	}
	jpeg, err := os.ReadFile(filepath.Join(group, "img001.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	probe := []string{"-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0"}

	for _, c := range []struct {
		name, file string
		data       []byte
		// control is an ffprobe command line (the input last) that
		// follows the file to the outside; nil when no ffmpeg does.
		control []string
		says    string
	}{
		{"HLS playlist as clip.mp4", "clip.mp4", ffmpegtest.DisguisedHLS(secretTS),
			append(probe, "/dev/fd/3"), `this video's container \(hls\) is not one botd reads \(it reads MP4/MOV`},
		{"HLS master playlist", "clip.mp4", []byte("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\n" + secretTS + "\n"),
			append(probe, "/dev/fd/3"), `container \(hls\) is not one botd reads`},
		{"DASH manifest", "clip.mp4", []byte(`<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011" type="static" mediaPresentationDuration="PT3S" minBufferTime="PT1S">
<Period><AdaptationSet mimeType="video/mp4"><Representation id="1" bandwidth="1000" codecs="avc1.64000a" width="64" height="48"><BaseURL>` + secretMP4 + `</BaseURL></Representation></AdaptationSet></Period></MPD>
`), append(probe, "/dev/fd/3"), `container \(dash\) is not one botd reads`},
		{"concat script", "clip.mp4", []byte("ffconcat version 1.0\nfile '" + secretMP4 + "'\n"),
			append(append(probe, "-safe", "0"), "/dev/fd/3"), `container \(concat\) is not one botd reads`},
		{"image2 sequence name", "img%03d.jpg", jpeg,
			append(probe, filepath.Join(group, "img%03d.jpg")), `container \(jpeg_pipe\) is not one botd reads`},
		{"m3u playlist", "clip.mp4", []byte("#EXTM3U\n#EXTINF:3,secret\n" + secretMP4 + "\n"),
			nil, `this video could not be read|this video's container \(\w+\) is not one botd reads`},
		{"pls playlist", "clip.mp4", []byte("[playlist]\nFile1=" + secretMP4 + "\nNumberOfEntries=1\nVersion=2\n"),
			nil, `this video could not be read|this video's container \(\w+\) is not one botd reads`},
		{"MP4 with an external data reference", "clip.mp4", dref,
			append(append(probe, "-enable_drefs", "1", "-use_absolute_path", "1"), "/dev/fd/3"), `this video keeps its pictures or sound in other files it names \(a reference movie\); botd reads only the file itself`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(group, c.file)
			ffmpegtest.WriteFile(t, path, c.data)
			t.Cleanup(func() { os.Remove(path) })
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			opens := ffmpegtest.WatchOpens(t, outside, group)
			elsewhere := func() []string {
				return slices.DeleteFunc(opens.Opened(t), func(p string) bool { return p == path })
			}
			if c.control != nil {
				cmd := exec.Command("ffprobe", c.control...)
				cmd.ExtraFiles = []*os.File{f}
				out, _ := cmd.CombinedOutput()
				if got := elsewhere(); len(got) == 0 {
					t.Fatalf("the fixture is no attack: ffprobe %s opened nothing else (%s)", strings.Join(c.control, " "), out)
				}
			}

			frames, _, err := ffmpeg.Keyframes(context.Background(), f, 4, lim)
			said := "stills: "
			if err != nil {
				said += err.Error()
			}
			if len(frames) == 0 {
				said += " (no frames)"
			}
			if len(frames) != 0 || !regexp.MustCompile(c.says).MatchString(said) {
				t.Errorf("%d stills, %q; want none and %q", len(frames), said, c.says)
			}
			sound, err := ffmpeg.AudioTrack(context.Background(), f, lim)
			if sound != nil {
				sound.Close()
				t.Errorf("AudioTrack gave a sound track")
			}
			if err == nil || !regexp.MustCompile(c.says).MatchString(err.Error()) {
				t.Errorf("AudioTrack: %v, want %q", err, c.says)
			}
			t.Logf("stills: %s; sound: %v", said, err)
			if got := elsewhere(); len(got) > 0 {
				t.Errorf("ffmpeg or ffprobe opened %v", got)
			}
		})
	}
}

// Without ffprobe there is no container to name, and ffmpeg's own format
// whitelist refuses the playlist: the stills and the sound say so, and
// the segment is never opened.
func TestWithoutFFprobeTheWhitelistHolds(t *testing.T) {
	ffmpegtest.NeedReal(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.ts")
	ffmpegtest.Make(t, secret, "-f", "lavfi", "-i", "color=c=red:s=64x48:d=3", "-c:v", "libx264")
	bin := t.TempDir()
	ffmpegBin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ffmpegBin, filepath.Join(bin, "ffmpeg")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	path := filepath.Join(t.TempDir(), "clip.mp4")
	ffmpegtest.WriteFile(t, path, ffmpegtest.DisguisedHLS(secret))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opens := ffmpegtest.WatchOpens(t, outside)
	want := regexp.MustCompile(`^this video's container \(hls\) is not one botd reads`)
	if frames, _, err := ffmpeg.Keyframes(context.Background(), f, 4, lim); len(frames) != 0 || err == nil || !want.MatchString(err.Error()) {
		t.Errorf("stills: %d, %v; want none and %q", len(frames), err, want)
	}
	if sound, err := ffmpeg.AudioTrack(context.Background(), f, lim); sound != nil || err == nil || !want.MatchString(err.Error()) {
		t.Errorf("sound: %v, %v; want none and %q", sound, err, want)
	}
	if got := opens.Opened(t); len(got) > 0 {
		t.Errorf("ffmpeg opened %v", got)
	}
}
