// Package ffmpegtest installs stand-ins for ffmpeg and ffprobe on PATH, so
// tests of what botd does with them need neither installed.
package ffmpegtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/botd-dev/botd/internal/box"
)

// Frame is what the stand-in writes for a still: a JPEG's first bytes.
const Frame = "\xff\xd8\xff\xe0 stand-in frame"

// Install puts shell scripts named ffmpeg (and ffprobe, when probe is not
// empty) first on PATH for the test. Each logs its arguments to the
// returned file; ffmpeg runs script with $out set to its last argument
// (the output file), ffprobe says the file is an MP4 of probe seconds.
func Install(t testing.TB, probe, script string) (argsLog string) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the stand-in tools")
	}
	bin := t.TempDir()
	box.WritableInTests(t, bin) // the log is outside the child's own directory
	argsLog = filepath.Join(bin, "args.log")
	write := func(name, body string) {
		s := "#!/bin/sh\necho \"$@\" >> " + argsLog + "\nfor a; do out=$a; done\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("ffmpeg", script)
	if probe != "" {
		write("ffprobe", "echo format_name=mov,mp4,m4a,3gp,3g2,mj2; echo duration="+probe)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin:/bin")
	return argsLog
}

// WriteFrame is an ffmpeg script that writes Frame to its output.
const WriteFrame = `printf '\377\330\377\340 stand-in frame' > "$out"`
