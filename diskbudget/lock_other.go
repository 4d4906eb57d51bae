//go:build !unix

package diskbudget

import "os"

// Hold is a no-op where flock does not exist: eviction then relies on
// least-recent use alone.
func Hold(f *os.File) error { return nil }

func tryLockExclusive(f *os.File) bool { return true }

func openNoBlock(root *os.Root, rel string) (*os.File, error) { return root.Open(rel) }
