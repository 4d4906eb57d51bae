package ipc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/botd-dev/botd/tools"
)

// Bounds of a group's failed/ folder. A quarantined file keeps at most its
// first FailedKeepBytes as evidence (the rest is dropped, not moved), and
// failed/ holds at most FailedMaxEntries quarantined files (each with its
// .reason) and FailedMaxBytes: the oldest go first. The bound is enforced
// by the sweep on every rescan tick, at start, and by a quarantine that
// would exceed it.
const (
	FailedKeepBytes  = 64 << 10
	FailedMaxEntries = 100
	FailedMaxBytes   = 8 << 20
)

var errGone = errors.New("gone")

// quarantine moves dir/name of group g to failed/ with a .reason file and,
// when the id is known, answers so the caller does not wait for its
// deadline.
func (h *Host) quarantine(g *group, dir, name, id, reason string) {
	g.failedMu.Lock()
	dest, kept, note, err := h.toFailed(g, dir+"/"+name, name)
	if errors.Is(err, errGone) {
		g.failedMu.Unlock()
		return
	}
	text := reason + note + "\n"
	if err := writeAtomicRoot(g.root, dirFailed, dest+".reason", []byte(text), false); err != nil {
		h.opts.Log.Warn("ipc: cannot write the quarantine reason", "group", g.name, "file", name, "err", err)
	}
	g.failedN++
	g.failedBytes += kept + int64(len(text))
	if g.failedN > FailedMaxEntries || g.failedBytes > FailedMaxBytes {
		h.pruneFailedLocked(g)
	}
	g.failedMu.Unlock()
	h.opts.Log.Warn("ipc: request quarantined", "group", g.name, "file", name, "reason", reason+note)
	if id != "" {
		h.respond(g, &Response{Version: Version, ID: id, Error: tools.Errorf(tools.CodeBadRequest, "%s", reason)})
	}
}

// toFailed moves src into failed/ under a free name, keeping at most
// FailedKeepBytes of a regular file. It returns the name used, the bytes
// kept, and a note for the reason.
func (h *Host) toFailed(g *group, src, name string) (dest string, kept int64, note string, err error) {
	fi, err := g.root.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, "", errGone
	}
	dest = name
	if _, err := g.root.Lstat(dirFailed + "/" + dest); err == nil {
		dest = fmt.Sprintf("%s.%d", name, time.Now().UnixNano())
	}
	if err == nil && fi.Mode().IsRegular() && fi.Size() > FailedKeepBytes {
		n, cerr := copyHead(g.root, src, dirFailed+"/"+dest, fi)
		if rerr := g.root.Remove(src); errors.Is(rerr, fs.ErrNotExist) && cerr != nil {
			return "", 0, "", errGone
		}
		if cerr != nil {
			h.opts.Log.Error("ipc: cannot keep the head of a quarantined file; removed it", "group", g.name, "file", name, "err", cerr)
			return dest, 0, fmt.Sprintf(" (the %d byte file was removed without keeping it: %v)", fi.Size(), cerr), nil
		}
		return dest, n, fmt.Sprintf(" (the file was %d bytes; only its first %d are kept)", fi.Size(), n), nil
	}
	if err := g.root.Rename(src, dirFailed+"/"+dest); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, "", errGone
		}
		h.opts.Log.Error("ipc: cannot quarantine a request, removing it", "group", g.name, "file", name, "err", err)
		g.root.RemoveAll(src)
		return dest, 0, fmt.Sprintf(" (it could not be kept: %v)", err), nil
	}
	return dest, entrySize(g.root, dirFailed+"/"+dest), "", nil
}

// copyHead copies the first FailedKeepBytes of src (the regular file fi
// described) to a new file dst.
func copyHead(r *os.Root, src, dst string, fi fs.FileInfo) (int64, error) {
	f, err := r.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !ofi.Mode().IsRegular() || !os.SameFile(fi, ofi) {
		return 0, errors.New("the file changed while being quarantined")
	}
	out, err := r.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(f, FailedKeepBytes))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(dst)
		return 0, err
	}
	return n, nil
}

// entrySize is the bytes an entry of failed/ holds: a file's size, or the
// sum of the regular files below a folder (symlinks are not followed).
func entrySize(r *os.Root, name string) int64 {
	fi, err := r.Lstat(name)
	if err != nil {
		return 0
	}
	if !fi.IsDir() {
		if fi.Mode().IsRegular() {
			return fi.Size()
		}
		return 0
	}
	var n int64
	fs.WalkDir(r.FS(), name, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

type failedItem struct {
	files []string
	bytes int64
	mtime time.Time
	key   string
}

// pruneFailed keeps failed/ within its bounds, oldest entries first.
func (h *Host) pruneFailed(g *group) {
	g.failedMu.Lock()
	defer g.failedMu.Unlock()
	h.pruneFailedLocked(g)
}

func (h *Host) pruneFailedLocked(g *group) {
	names, err := readNames(g.root, dirFailed)
	if err != nil {
		h.opts.Log.Warn("ipc: cannot read failed/", "group", g.name, "err", err)
		return
	}
	byKey := map[string]*failedItem{}
	for _, name := range names {
		key := strings.TrimSuffix(name, ".reason")
		it := byKey[key]
		if it == nil {
			it = &failedItem{key: key}
			byKey[key] = it
		}
		it.files = append(it.files, name)
		it.bytes += entrySize(g.root, dirFailed+"/"+name)
		if fi, err := g.root.Lstat(dirFailed + "/" + name); err == nil && fi.ModTime().After(it.mtime) {
			it.mtime = fi.ModTime()
		}
	}
	items := make([]*failedItem, 0, len(byKey))
	var total int64
	for _, it := range byKey {
		items = append(items, it)
		total += it.bytes
	}
	sort.Slice(items, func(i, j int) bool {
		if !items[i].mtime.Equal(items[j].mtime) {
			return items[i].mtime.Before(items[j].mtime)
		}
		return items[i].key < items[j].key
	})
	n, dropped := len(items), 0
	for _, it := range items {
		if n <= FailedMaxEntries && total <= FailedMaxBytes {
			break
		}
		for _, f := range it.files {
			g.root.RemoveAll(dirFailed + "/" + f)
		}
		n--
		total -= it.bytes
		dropped++
	}
	if dropped > 0 {
		h.opts.Log.Info("ipc: pruned the oldest quarantined requests", "group", g.name, "removed", dropped, "kept", n)
	}
	g.failedN, g.failedBytes = n, total
}

// readNames lists a folder inside r.
func readNames(r *os.Root, dir string) ([]string, error) {
	d, err := r.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
