//go:build !unix

package groups

import "os"

// Flock is a no-op where flock does not exist.
func Flock(f *os.File, exclusive, wait bool) error { return nil }
