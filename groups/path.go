package groups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// Open is the one way a file named relative to a group folder is opened:
// the spelling is checked by CleanRel, the file is opened through os.Root
// (so no link or ".." leads out of the folder, whatever is swapped in
// meanwhile) and what was opened must be a regular file. rel is the cleaned
// path; f.Name() is its absolute path.
func (w Workspace) Open(p string) (f *os.File, rel string, err error) {
	rel, err = CleanRel(p)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(w.Root)
	if err != nil {
		return nil, "", fmt.Errorf("group folder: %w", err)
	}
	defer root.Close()
	f, err = root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, "", err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, "", fmt.Errorf("%s is not a regular file", rel)
	}
	return f, rel, nil
}
