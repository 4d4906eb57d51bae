package ipc

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/google/uuid"
)

// WriteAtomic writes data to dir/name so that a reader sees either no file
// or the whole file: a temp file in dir's parent (same filesystem, and
// outside the watched folder) is written, fsynced, and renamed into place.
func WriteAtomic(dir, name string, data []byte) error {
	r, err := os.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer r.Close()
	if err := atomicfile.WriteRoot(r, filepath.Base(dir)+"/"+name, ".tmp-"+name+"-"+NewID(), 0o600, true, atomicfile.Bytes(data)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// writeAtomicRoot writes data to dir/name inside r the way WriteAtomic
// does (temp file in r's top folder, renamed into place), so every path
// stays inside r whatever was swapped in meanwhile. durable fsyncs the file
// and the folder; progress files skip that.
func writeAtomicRoot(r *os.Root, dir, name string, data []byte, durable bool) error {
	if err := atomicfile.WriteRoot(r, dir+"/"+name, ".tmp-"+name+"-"+NewID(), 0o600, durable, atomicfile.Bytes(data)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// NewID returns a fresh request id.
func NewID() string { return uuid.NewString() }
