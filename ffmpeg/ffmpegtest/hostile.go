package ffmpegtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// NeedReal fails (never skips: `make testdeps` installs them) when the
// real ffmpeg and ffprobe are not on PATH.
func NeedReal(t testing.TB) {
	t.Helper()
	for _, n := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s is not on PATH; `make testdeps` installs it (apt-get install -y ffmpeg)", n)
		}
	}
}

// Make writes path with the real ffmpeg: args are its input and codec
// options, e.g. a lavfi source.
func Make(t testing.TB, path string, args ...string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-nostdin"}, args...), "-y", path)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
}

// Opens records what is opened in some folders: inotify's IN_OPEN, which
// the kernel queues before open returns, so once a child has exited
// everything it opened is in the queue; no waiting decides anything.
type Opens struct {
	fd   int
	dirs map[int]string
}

// WatchOpens starts recording opens of files in dirs (not below them).
func WatchOpens(t testing.TB, dirs ...string) *Opens {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	o := &Opens{fd: fd, dirs: map[int]string{}}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN)
		if err != nil {
			t.Fatalf("inotify watch %s: %v", d, err)
		}
		o.dirs[wd] = d
	}
	return o
}

// Opened drains what was opened since the last call, as paths.
func (o *Opens) Opened(t testing.TB) []string {
	t.Helper()
	var paths []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(o.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return paths
		}
		if err != nil {
			t.Fatalf("inotify read: %v", err)
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:4]))
			l := int(binary.NativeEndian.Uint32(b[12:16]))
			name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+l], "\x00"))
			if name != "" {
				paths = append(paths, filepath.Join(o.dirs[int(wd)], name))
			}
			b = b[unix.SizeofInotifyEvent+l:]
		}
	}
}

// DisguisedHLS is the playlist of issue 38: an HLS media playlist whose
// second line is a comment of binary bytes (so sniffing its content says
// application/octet-stream and the declared video/mp4 wins), naming one
// segment, target, by its absolute path.
func DisguisedHLS(target string) []byte {
	return []byte(fmt.Sprintf("#EXTM3U\n#\x01\x02\x03\xfe\xff\x80\n#EXT-X-TARGETDURATION:10\n#EXTINF:3,\n%s\n#EXT-X-ENDLIST\n", target))
}

// WriteFile writes b to path or fails t.
func WriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ExternalDref rewrites mp4, a file ffmpeg wrote (its moov after its mdat,
// one track), so that its track's data is an external reference to
// target by absolute path: a Mac alias record ('alis') in its dref, as
// QuickTime reference movies have. ffmpeg reads such a track only when
// asked (-enable_drefs 1 -use_absolute_path 1).
func ExternalDref(mp4 []byte, target string) ([]byte, error) {
	var alis bytes.Buffer
	alis.Write(make([]byte, 10))
	alis.WriteByte(0)
	alis.Write(make([]byte, 27)) // volume
	alis.Write(make([]byte, 12))
	alis.WriteByte(0)
	alis.Write(make([]byte, 63)) // file name
	alis.Write(make([]byte, 16))
	alis.Write([]byte{0, 0, 0, 0}) // nlvl_from, nlvl_to: an absolute path
	alis.Write(make([]byte, 16))
	p := []byte(target)
	binary.Write(&alis, binary.BigEndian, [2]uint16{2, uint16(len(p))}) // 2: absolute path (no colons, so kept as is)
	alis.Write(p)
	if len(p)%2 == 1 {
		alis.WriteByte(0)
	}
	alis.Write([]byte{0xff, 0xff, 0, 0}) // the end
	var dref bytes.Buffer
	dref.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1})                   // version, flags; one entry
	binary.Write(&dref, binary.BigEndian, uint32(12+alis.Len())) // entry size
	dref.Write([]byte{'a', 'l', 'i', 's', 0, 0, 0, 0})           // not self-contained
	dref.Write(alis.Bytes())
	box := binary.BigEndian.AppendUint32(nil, uint32(8+dref.Len()))
	box = append(append(box, "dref"...), dref.Bytes()...)

	for off := 0; off+8 <= len(mp4); off += int(binary.BigEndian.Uint32(mp4[off:])) {
		if t := string(mp4[off+4 : off+8]); t == "moov" {
			return nil, errors.New("ExternalDref wants the moov after the mdat, so no chunk offset moves")
		} else if t == "mdat" || binary.BigEndian.Uint32(mp4[off:]) < 8 {
			break
		}
	}
	out, ok := replaceBox(mp4, []string{"moov", "trak", "mdia", "minf", "dinf", "dref"}, box)
	if !ok {
		return nil, errors.New("no moov/trak/mdia/minf/dinf/dref")
	}
	return out, nil
}

// replaceBox replaces the first box at path in b (a sequence of ISO media
// boxes with 32-bit sizes) with box, resizing the boxes around it.
func replaceBox(b []byte, path []string, box []byte) ([]byte, bool) {
	for off := 0; off+8 <= len(b); {
		size := int(binary.BigEndian.Uint32(b[off:]))
		if size < 8 || off+size > len(b) {
			return nil, false
		}
		if string(b[off+4:off+8]) == path[0] {
			var inner []byte
			if len(path) == 1 {
				inner = box
			} else {
				kids, ok := replaceBox(b[off+8:off+size], path[1:], box)
				if !ok {
					return nil, false
				}
				inner = binary.BigEndian.AppendUint32(nil, uint32(8+len(kids)))
				inner = append(append(inner, path[0]...), kids...)
			}
			out := append(append(append([]byte{}, b[:off]...), inner...), b[off+size:]...)
			return out, true
		}
		off += size
	}
	return nil, false
}
