package startpages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mapping is one mapping of the executable in /proc/self/smaps.
type mapping struct {
	start, end uintptr
	perms      string
	inode      uint64
	anonymous  int64 // kB of private copies (a written page)
	rss        int64 // kB resident
}

// Release unmaps the executable's clean read-only pages and says how
// many bytes were resident in them.
func Release() (int64, error) {
	fi, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("startpages: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("startpages: no inode for the executable")
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("startpages: %w", err)
	}
	var released int64
	for _, m := range parseSmaps(smaps) {
		if m.inode != st.Ino || !releasable(m) {
			continue
		}
		// The raw call: the range is an address from smaps, not a Go
		// object, so no slice is made over it.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("startpages: madvise: %w", errno)
		}
		released += m.rss * 1024
	}
	return released, nil
}

// releasable: a private read-only mapping none of whose pages was
// written. Such pages are exactly the file's bytes, so dropping them
// loses nothing; a written page (a relocation) would revert to the file.
func releasable(m mapping) bool {
	return len(m.perms) == 4 && m.perms[0] == 'r' && m.perms[1] == '-' && m.perms[3] == 'p' && m.anonymous == 0
}

// parseSmaps reads the mappings of smaps: a header line per mapping
// ("start-end perms offset dev inode path") followed by "Key: n kB" lines.
func parseSmaps(b []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			ino, err3 := strconv.ParseUint(f[4], 10, 64)
			if err1 == nil && err2 == nil && err3 == nil && z > a {
				out = append(out, mapping{start: uintptr(a), end: uintptr(z), perms: f[1], inode: ino, anonymous: -1})
				continue
			}
		}
		if len(out) == 0 || len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Anonymous:":
			out[len(out)-1].anonymous = n
		case "Rss:":
			out[len(out)-1].rss = n
		}
	}
	return out
}
