//go:build unix

package mcp

import (
	"os"
	"syscall"
	"testing"
)

// limitOpenFiles lets the process open n more files than it has open now,
// and no more, until the test ends: the test then runs in a budget like
// the 1024 open files. Where the open files cannot be counted
// (no /proc/self/fd) it only makes sure that n more are allowed.
func limitOpenFiles(tb testing.TB, n uint64) {
	tb.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatalf("getrlimit: %v", err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	want := uint64(len(fds)) + n
	if err != nil {
		want = lim.Cur
		if want < 2*n {
			want = 2 * n
		}
	}
	if want > lim.Max {
		tb.Skipf("the open-file limit is %d (hard %d); this needs %d", lim.Cur, lim.Max, want)
	}
	old := lim.Cur
	lim.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatalf("setrlimit: %v", err)
	}
	tb.Cleanup(func() {
		lim.Cur = old
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	})
}
