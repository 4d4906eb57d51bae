//go:build unix

package diskbudget

import (
	"os"
	"syscall"
)

// openNoBlock opens for locking only: a FIFO swapped in after the walk
// must not hang the sweeper.
func openNoBlock(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
