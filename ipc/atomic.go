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

// writeAtomicRoot writes data to dir/name inside r the way WriteAtomic
// does (temp file in r's top folder, renamed into place), so every path
// stays inside r whatever was swapped in meanwhile. durable fsyncs the file
// and the folder; progress files skip that.
func writeAtomicRoot(r *os.Root, dir, name string, data []byte, durable bool) error {
	tmp := ".tmp-" + name + "-" + NewID()
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			r.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := r.Rename(tmp, dir+"/"+name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	ok = true
	if durable {
		syncRootDir(r, dir)
	}
	return nil
}

// syncRootDir makes renames into or out of dir durable across a power cut.
func syncRootDir(r *os.Root, dir string) {
	d, err := r.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}

// NewID returns a fresh request id.
func NewID() string { return uuid.NewString() }
