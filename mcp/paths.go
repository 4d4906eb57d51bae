package mcp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// cleanRel validates a group-relative path from the agent or the host and
// returns it cleaned, with forward slashes. It refuses anything that could
// name a file outside the group folder by its spelling alone; symlinks are
// handled by opening through os.Root.
func cleanRel(p string) (string, error) {
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
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", fmt.Errorf("path %q leaves the group folder (..)", p)
		}
	}
	c := filepath.Clean(filepath.FromSlash(p))
	if c == "." {
		return "", fmt.Errorf("path %q names the group folder itself, not a file", p)
	}
	return filepath.ToSlash(c), nil
}

// openInGroup opens rel below the group folder. os.Root refuses symlinks
// and ".." that resolve outside it, so a link planted in media/ cannot
// expose the rest of the disk.
func (t *tools) openInGroup(rel string) (*os.File, fs.FileInfo, error) {
	root, err := os.OpenRoot(t.groupDir)
	if err != nil {
		return nil, nil, fmt.Errorf("group folder: %w", err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file", rel)
	}
	return f, fi, nil
}

// checkSendable tells the agent early that rel is missing, a folder, or
// outside the group folder.
func (t *tools) checkSendable(rel string) error {
	f, _, err := t.openInGroup(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no file %s in the group folder", rel)
		}
		return fmt.Errorf("cannot send %s: %w", rel, stripRoot(err, t.groupDir))
	}
	return f.Close()
}

// absPath is the path a local agent can open.
func (t *tools) absPath(rel string) string {
	return filepath.Join(t.groupDir, filepath.FromSlash(rel))
}

// stripRoot keeps host paths out of messages shown to the model when the
// error text already names the relative path.
func stripRoot(err error, root string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", strings.TrimPrefix(pe.Path, root+string(filepath.Separator)), pe.Err)
	}
	return err
}
