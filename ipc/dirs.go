package ipc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// dirID is the identity of a directory: two paths with the same dirID are
// one directory (a symlink, or a bind mount).
type dirID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (dirID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}, false
	}
	return dirID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true // Dev is uint32 on some platforms
}

// checkDir judges what Lstat said about path: a real directory owned by
// uid (uid < 0: any owner), never a symlink. The error names the path and
// says what to do.
func checkDir(path string, fi fs.FileInfo, err error, uid int) (dirID, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dirID{}, fmt.Errorf("%s is missing: it was removed while botd ran; restart botd", path)
	case err != nil:
		return dirID{}, fmt.Errorf("%s cannot be checked: %w", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return dirID{}, fmt.Errorf("%s is a symlink; botd did not create it. Remove it and restart", path)
	case !fi.IsDir():
		return dirID{}, fmt.Errorf("%s is not a directory; botd did not create it. Remove it and restart", path)
	}
	id, ok := idOf(fi)
	if !ok {
		return dirID{}, fmt.Errorf("%s cannot be checked on this system", path)
	}
	if st := fi.Sys().(*syscall.Stat_t); uid >= 0 && int(st.Uid) != uid {
		return dirID{}, fmt.Errorf("%s belongs to uid %d, not to botd's uid %d; botd did not create it. Remove it and restart", path, st.Uid, uid)
	}
	return id, nil
}

// sameAs checks that an opened root is the directory checked before it was
// opened (nothing was swapped in between).
func sameAs(r *os.Root, path string, want dirID) error {
	fi, err := r.Stat(".")
	if err != nil {
		return fmt.Errorf("%s cannot be checked: %w", path, err)
	}
	if id, ok := idOf(fi); !ok || id != want {
		return fmt.Errorf("%s changed while botd opened it; restart botd", path)
	}
	return nil
}

// validFolder reports whether a group folder is one plain path element.
func validFolder(g string) bool {
	return g != "" && g != "." && g != ".." && !strings.ContainsAny(g, `/\`) && filepath.Base(g) == g
}

// mkdir creates dir (not its parents) and accepts that it exists; whatever
// is there is judged by checkDir afterwards.
func mkdir(err error) error {
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// Ensure creates the layout's folders (data/ipc, the group folder and its
// subfolders, mode 0750) one by one without following a symlink, and
// refuses a folder that is a symlink or not a directory. Only the parent
// of data/ipc is created with MkdirAll (the data dir may be a symlink).
func (l Layout) Ensure() error {
	ipcRoot := filepath.Dir(l.Root)
	if err := os.MkdirAll(filepath.Dir(ipcRoot), 0o750); err != nil {
		return fmt.Errorf("ipc folder: %w", err)
	}
	for _, d := range append([]string{ipcRoot, l.Root}, l.subdirPaths()...) {
		if err := mkdir(os.Mkdir(d, 0o750)); err != nil {
			return fmt.Errorf("ipc folder: %w", err)
		}
		fi, err := os.Lstat(d)
		if _, err := checkDir(d, fi, err, -1); err != nil {
			return fmt.Errorf("ipc folder: %w", err)
		}
	}
	return nil
}

func (l Layout) subdirPaths() []string {
	out := make([]string, len(subdirs))
	for i, s := range subdirs {
		out[i] = filepath.Join(l.Root, s)
	}
	return out
}

// check is the client's cheap look before each call: the folders it writes
// to and reads from are real directories, not symlinks to another group's.
func (l Layout) check() error {
	for _, d := range []string{filepath.Dir(l.Root), l.Root, l.Requests(), l.Responses()} {
		fi, err := os.Lstat(d)
		if _, err := checkDir(d, fi, err, -1); err != nil {
			return err
		}
	}
	return nil
}
