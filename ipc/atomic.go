package ipc

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"
)

// WriteAtomic writes data to dir/name so that a reader sees either no file
// or the whole file: a temp file in dir's parent (same filesystem, and
// outside the watched folder) is written, fsynced, and renamed into place.
func WriteAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(dir), ".tmp-"+name+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmpName, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	ok = true
	return syncDir(dir)
}

// syncDir makes a rename durable across a power cut.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}

// Ensure creates the layout's folders.
func (l Layout) Ensure() error {
	for _, d := range []string{l.Requests(), l.Responses(), l.Failed()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("ipc folder: %w", err)
		}
	}
	return nil
}

// NewID returns a fresh request id.
func NewID() string { return uuid.NewString() }
