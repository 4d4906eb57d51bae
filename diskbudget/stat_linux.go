package diskbudget

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// statNames stats names in the opened folder d with fstatat, not
// following them: one syscall and no allocation per file, which is what
// makes a sweep of 100k cached files cheap.
func statNames(_ *os.Root, d *os.File, _ string, names []string, fn func(string, entry)) error {
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		for _, n := range names {
			if unix.Fstatat(int(fd), n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone since it was listed
			}
			fn(n, entry{
				dir:     st.Mode&unix.S_IFMT == unix.S_IFDIR,
				regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
				links:   uint64(st.Nlink),
				size:    st.Size,
				mtime:   time.Unix(st.Mtim.Unix()),
			})
		}
	})
}
