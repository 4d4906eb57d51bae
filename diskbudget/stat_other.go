//go:build !linux

package diskbudget

import (
	"os"
	"path"
	"syscall"
)

// statNames stats names through the root, not following them.
func statNames(root *os.Root, _ *os.File, dir string, names []string, fn func(string, entry)) error {
	for _, n := range names {
		fi, err := root.Lstat(path.Join(dir, n))
		if err != nil {
			continue
		}
		links := uint64(1)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			links = uint64(st.Nlink)
		}
		fn(n, entry{dir: fi.IsDir(), regular: fi.Mode().IsRegular(), links: links, size: fi.Size(), mtime: fi.ModTime()})
	}
	return nil
}
