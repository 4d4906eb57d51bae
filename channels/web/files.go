package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/botd-dev/botd/mediaregistry"
)

// FileInfo is a file shown in a room: one posted there, or sent by the
// assistant.
type FileInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	MIME string `json:"mime"`
	Size int64  `json:"size"`
}

// Inline reports whether a page may show the file itself: raster images,
// audio and video. Anything else (SVG and HTML above all, which could run
// script in the page's origin) is only offered as a download.
func (f FileInfo) Inline() bool { return inlineMIME(f.MIME) }

// Image reports whether the page shows the file as an image.
func (f FileInfo) Image() bool {
	return inlineMIME(f.MIME) && strings.HasPrefix(f.MIME, "image/")
}

// SizeText is the size as placeholders write it.
func (f FileInfo) SizeText() string { return mediaregistry.FormatSize(f.Size) }

func inlineMIME(m string) bool {
	switch m {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp",
		"audio/mpeg", "audio/ogg", "audio/wav", "audio/webm", "audio/mp4", "audio/aac", "audio/flac",
		"video/mp4", "video/webm", "video/ogg":
		return true
	}
	return false
}

// fileStore keeps the channel's files: <dir>/<room>/<id> and, beside it,
// <id>.json with the name and type. Ids are random, so nothing a sender
// wrote ever becomes part of a path; every access goes through os.Root.
type fileStore struct {
	root *os.Root

	mu    sync.Mutex
	rooms map[string]*os.Root // each room's folder, opened once
}

var fileIDRule = regexp.MustCompile(`^[0-9a-f]{32}$`)

func openFileStore(dir string) (*fileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &fileStore{root: root, rooms: map[string]*os.Root{}}, nil
}

// room is the folder of a room's files, made on first use.
func (s *fileStore) room(name string) (*os.Root, error) {
	if ValidRoom(name) != nil {
		return nil, fmt.Errorf("no such room: %w", channels.ErrUnavailable)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rooms[name]; ok {
		return r, nil
	}
	if err := s.root.MkdirAll(name, 0o700); err != nil {
		return nil, err
	}
	r, err := s.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	s.rooms[name] = r
	return r, nil
}

// errTooLarge is a file over the cap; the upload answers 413.
var errTooLarge = errors.New("file too large")

// save copies at most max bytes of r into a new file of room. The type is
// decided from the bytes (mediaregistry.DecideMIME), the declared type and
// the name only break ties; the name must already be clean.
func (s *fileStore) save(room string, src io.Reader, max int64, name, declared string) (FileInfo, error) {
	dir, err := s.room(room)
	if err != nil {
		return FileInfo{}, err
	}
	fi := FileInfo{ID: newID(), Name: name}
	// Written under a partial name and renamed once whole, so the disk
	// budget's sweeper (DiskArea) sees an upload in progress as busy.
	// Not fsynced: an upload lost to a power cut is posted again.
	var n int64
	var sniffed string
	err = atomicfile.WriteRoot(dir, fi.ID, partialName(fi.ID), 0o600, false, func(f *os.File) error {
		var err error
		if n, err = io.Copy(f, io.LimitReader(src, max+1)); err != nil {
			return err
		}
		if n > max {
			return fmt.Errorf("%w: over %d bytes", errTooLarge, max)
		}
		// Sniffed from the file, not the stream's head: an Office file
		// posted as x.bin is told from a plain zip by the directory at
		// its end.
		sniffed, err = mediaregistry.SniffAt(f, n)
		return err
	})
	if err != nil {
		return FileInfo{}, err
	}
	fi.Size = n
	fi.MIME = mediaregistry.DecideMIME(mediaregistry.Declared(declared, name), sniffed)
	meta, _ := json.Marshal(fi)
	if err := dir.WriteFile(fi.ID+".json", meta, 0o600); err != nil {
		dir.Remove(fi.ID)
		return FileInfo{}, err
	}
	return fi, nil
}

// open returns a file of room and what is known about it. An id of the
// wrong shape, or of another room, is simply not found.
func (s *fileStore) open(room, id string) (*os.File, FileInfo, error) {
	if !fileIDRule.MatchString(id) {
		return nil, FileInfo{}, fmt.Errorf("no such file: %w", channels.ErrUnavailable)
	}
	dir, err := s.room(room)
	if err != nil {
		return nil, FileInfo{}, err
	}
	raw, err := dir.ReadFile(id + ".json")
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("file no longer kept: %w", channels.ErrUnavailable)
	}
	var fi FileInfo
	if err := json.Unmarshal(raw, &fi); err != nil || fi.ID != id {
		return nil, FileInfo{}, fmt.Errorf("file record damaged: %w", channels.ErrUnavailable)
	}
	f, err := dir.Open(id)
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("file no longer kept: %w", channels.ErrUnavailable)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, FileInfo{}, fmt.Errorf("not a regular file: %w", channels.ErrUnavailable)
	}
	fi.Size = st.Size()
	return f, fi, nil
}

// remove deletes a file and its record (an upload whose message was
// refused).
func (s *fileStore) remove(room, id string) {
	if fileIDRule.MatchString(id) && ValidRoom(room) == nil {
		s.root.Remove(path.Join(room, id))
		s.root.Remove(path.Join(room, id) + ".json")
	}
}

// sweep removes every file last written before cutoff, with its record.
func (s *fileStore) sweep(cutoff time.Time) (int, error) {
	n := 0
	err := fs.WalkDir(s.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			return nil
		}
		if s.root.Remove(p) == nil && !strings.HasSuffix(p, ".json") {
			n++
		}
		return nil
	})
	return n, err
}

// maxNameRunes caps a file name shown in a room.
const maxNameRunes = 120

// cleanFileName makes a name a browser sent safe to show, to put in a
// placeholder and in a Content-Disposition header: mediaregistry.CleanName
// (the last path element, no control, format or line-break characters, no
// leading dots) with a capped length that keeps the extension. It is never
// used as a path.
func cleanFileName(name string) string {
	s := mediaregistry.CleanName(name)
	if rs := []rune(s); len(rs) > maxNameRunes {
		ext := ""
		if i := strings.LastIndexByte(s, '.'); i > 0 && len(s)-i <= 10 {
			ext = s[i:]
		}
		keep := maxNameRunes - utf8.RuneCountInString(ext) - 1
		s = string([]rune(strings.TrimSuffix(s, ext))[:keep]) + "…" + ext
	}
	if s == "" {
		s = "file"
	}
	return s
}

// partialName is an upload's name while it is being written.
func partialName(id string) string { return "." + id + ".part" }

// DiskAreaName names the web channel's files in disk reports; the dot
// keeps it apart from every group folder name.
const DiskAreaName = "web.files"

// DiskAreas are the web channel's bytes for the disk budget: web.files,
// the uploads and the assistant's files (<dataDir>/web/files), each
// counted against the share of the group whose chat is the room and
// evicted least recently written first when over the budget (the ref then
// answers that the file is no longer kept). An upload is the only copy
// of its bytes, so it goes only while its own room is past its share,
// never to make room for another group; an upload still being written is
// busy, never evicted. The rooms' messages are in the database, not on
// this disk.
func DiskAreas(dataDir string, gs []*groups.Group) []diskbudget.Area {
	dir := filepath.Join(dataDir, "web")
	folders := map[string]string{}
	for _, g := range gs {
		if room, ok := RoomOf(g.Chat); ok {
			folders[room] = g.Folder
		}
	}
	open := func(sub string) func() (*os.Root, error) {
		return func() (*os.Root, error) {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
				return nil, err
			}
			return os.OpenRoot(dir)
		}
	}
	return []diskbudget.Area{{
		Name: DiskAreaName,
		Open: open("files"),
		Dir:  "files",
		Busy: func(rel string) bool {
			b := path.Base(rel)
			return strings.HasPrefix(b, ".") && strings.HasSuffix(b, ".part")
		},
		// files/<room>/<id>
		GroupOf: func(rel string) string {
			parts := strings.Split(rel, "/")
			if len(parts) != 3 {
				return ""
			}
			return folders[parts[1]]
		},
		Sole: func(string) bool { return true },
	}}
}
