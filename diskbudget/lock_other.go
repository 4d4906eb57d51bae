//go:build !unix

package diskbudget

import "os"

func openNoBlock(root *os.Root, rel string) (*os.File, error) { return root.Open(rel) }
