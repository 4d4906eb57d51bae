package diskbudget

import (
	"os"

	"github.com/botd-dev/botd/groups"
)

// Hold marks f in use until f is closed: a shared lock that eviction, in
// this process or another, will not break. It waits only while a sweep is
// removing that very file; afterwards the caller must check the file is
// still linked (Linked). Where flock does not exist it does nothing, and
// eviction relies on least-recent use alone.
func Hold(f *os.File) error { return groups.Flock(f, false, true) }

func tryLockExclusive(f *os.File) bool { return groups.Flock(f, true, false) == nil }
