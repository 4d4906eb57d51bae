//go:build linux

package startpages

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

func TestParseSmaps(t *testing.T) {
	in := []byte(`00400000-00c00000 r-xp 00000000 fd:01 4242 /usr/bin/botd
Size:               8192 kB
Rss:                3000 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00c00000-00d00000 r--p 00800000 fd:01 4242 /usr/bin/botd
Rss:                 500 kB
Anonymous:             4 kB
00d00000-00e00000 rw-p 00900000 fd:01 4242 /usr/bin/botd
Rss:                 100 kB
Anonymous:           100 kB
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
Rss:                   4 kB
Anonymous:             4 kB
`)
	got := parseSmaps(in)
	if len(got) != 4 {
		t.Fatalf("parsed %d mappings, want 4: %+v", len(got), got)
	}
	want := []struct {
		perms      string
		rss        int64
		releasable bool
	}{
		{"r-xp", 3000, true},
		{"r--p", 500, false}, // a relocated page: a private copy
		{"rw-p", 100, false},
		{"rw-p", 4, false},
	}
	for i, w := range want {
		if got[i].perms != w.perms || got[i].rss != w.rss || releasable(got[i]) != w.releasable {
			t.Errorf("mapping %d = %+v (releasable %v), want %+v", i, got[i], releasable(got[i]), w)
		}
	}
	if got[0].inode != 4242 || got[0].start != 0x400000 || got[0].end != 0xc00000 {
		t.Errorf("header fields: %+v", got[0])
	}
}

// The test binary's own start pages go, and the code they held still
// runs: its next use maps them again.
func TestReleaseDropsCleanPagesAndCodeStillRuns(t *testing.T) {
	before := rssFile(t)
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if released <= 0 {
		t.Fatalf("released %d bytes; the test binary has resident text", released)
	}
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB after releasing, %d kB before", after, before)
	}
	// Code and read-only data are usable after: a regexp compiled now
	// runs through both again.
	if !regexp.MustCompile(`^Rss[A-Z][a-z]+:$`).MatchString("RssFile:") {
		t.Error("code after release misbehaves")
	}
	t.Logf("released %d kB; RssFile %d → %d kB", released/1024, before, after)
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`RssFile:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Skip("no RssFile in /proc/self/status")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}
