package groups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CleanRel checks the spelling of a path relative to a group folder, as
// the agent, an MCP client or the host gives it, and returns it cleaned
// with forward slashes. It refuses what could name a file outside the
// folder by its spelling alone; links are Open's business.
func CleanRel(p string) (string, error) {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return "", errors.New("path is required")
	case strings.ContainsRune(p, 0):
		return "", errors.New("path contains a NUL byte")
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("path %q: ~ is not expanded; use a path relative to the group folder, e.g. media/photo.jpg", p)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`):
		return "", fmt.Errorf("path %q is absolute; use the path relative to the group folder, e.g. media/photo.jpg", p)
	}
	c := filepath.Clean(filepath.FromSlash(strings.ReplaceAll(p, `\`, "/")))
	if c == "." {
		return "", fmt.Errorf("path %q names the group folder itself, not a file", p)
	}
	if !filepath.IsLocal(c) {
		return "", fmt.Errorf("path %q leaves the group folder (..)", p)
	}
	return filepath.ToSlash(c), nil
}

// OpenRoot opens the group folder as an os.Root, the one way botd reads
// or writes inside it. The folder must be the directory botd created: not
// a symlink (which could make two groups share one folder, or put a
// group's files anywhere), checked again on what was opened so a swap
// between the check and the open is caught. A symlinked media/ is refused
// the same way.
func (w Workspace) OpenRoot() (*os.Root, error) {
	before, err := os.Lstat(w.Root)
	if err != nil {
		return nil, fmt.Errorf("group folder: %w", err)
	}
	if err := realDir(w.Root, before); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(w.Root)
	if err != nil {
		return nil, fmt.Errorf("group folder: %w", err)
	}
	opened, err := root.Stat(".")
	if err == nil && !os.SameFile(before, opened) {
		err = fmt.Errorf("group folder %s was replaced while being opened, %w", w.Root, ErrNotOurs)
	}
	if err == nil {
		if fi, lerr := root.Lstat("media"); lerr == nil {
			err = realDir(filepath.Join(w.Root, "media"), fi)
		}
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// ErrNotOurs marks a folder botd did not create where it expects its own.
var ErrNotOurs = errors.New("not the folder botd created")

// realDir refuses what botd never creates in place of one of its folders.
func realDir(path string, fi os.FileInfo) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink, %w: remove it and botd recreates the folder", path, ErrNotOurs)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder, %w: remove it and botd recreates the folder", path, ErrNotOurs)
	}
	return nil
}

// Open is the one way a file named relative to a group folder is opened:
// the spelling is checked by CleanRel, the file is opened through the
// folder's root (so no link or ".." leads out of the folder, whatever is
// swapped in meanwhile), and what was opened must be a regular file with
// one link: a hard link placed in the folder would otherwise send or show
// a file from anywhere on the same filesystem (data/botd.db). rel is the
// cleaned path; f.Name() is its absolute path.
func (w Workspace) Open(p string) (f *os.File, rel string, err error) {
	rel, err = CleanRel(p)
	if err != nil {
		return nil, "", err
	}
	root, err := w.OpenRoot()
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	f, err = openSole(root, rel, os.O_RDONLY)
	return f, rel, err
}

// openSole opens rel (cleaned) through root with flag and checks it with
// SoleFile. O_NONBLOCK: a FIFO in place of the file must be refused, not
// hang the caller until something writes to it (the memory file is read
// before every run).
func openSole(root *os.Root, rel string, flag int) (*os.File, error) {
	f, err := root.OpenFile(filepath.FromSlash(rel), flag|syscall.O_NONBLOCK, 0o640)
	if err != nil {
		return nil, err
	}
	if err := SoleFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %w", rel, err)
	}
	return f, nil
}

// SoleFile checks an opened file is a regular file with exactly one link.
func SoleFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if n := links(fi); n != 1 {
		return fmt.Errorf("has %d hard links; botd only opens files with one link, so a link to a file outside the group folder cannot be sent or read", n)
	}
	return nil
}

// SoleRegular reports whether fi is a regular file with exactly one link:
// what SoleFile accepts, for a file only stat'ed.
func SoleRegular(fi os.FileInfo) bool { return fi.Mode().IsRegular() && links(fi) == 1 }

func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
