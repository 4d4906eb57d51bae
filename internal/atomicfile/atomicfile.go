// Package atomicfile replaces a file so that a reader, or botd after a
// crash, sees the old content or the new, never a part: the bytes go to a
// temp file in the same folder (same filesystem, so the rename is atomic)
// which is then renamed over the target.
//
// Serialising writers of one file is the caller's job (a mutex or flock it
// already holds): the temp name may be fixed, and two writers would share it.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// WriteFile replaces the file at p with data. The temp file is p's name
// plus ".tmp"; a leftover of a crash there is removed first. The file is
// fsynced before the rename and its folder after, so the new content
// survives a power cut.
func WriteFile(p string, data []byte, perm fs.FileMode) error {
	r, err := os.OpenRoot(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer r.Close()
	name := filepath.Base(p)
	tmp := name + ".tmp"
	if err := r.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return WriteRoot(r, name, tmp, perm, true, Bytes(data))
}

// WriteRoot replaces name inside r with what fill writes, through the temp
// file tmp (both slash paths relative to r, tmp usually in name's folder or
// r's top one). Every step stays inside r whatever is swapped in meanwhile,
// and tmp is created exclusively, so a link planted at its name is refused
// rather than followed. On any failure tmp is removed and name is left as it
// was. durable fsyncs the file before the rename and name's folder after;
// caches whose loss costs only a download skip it.
func WriteRoot(r *os.Root, name, tmp string, perm fs.FileMode, durable bool, fill func(*os.File) error) error {
	// Read-write: a fill may sniff what it wrote before it is committed.
	f, err := r.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		r.Remove(tmp)
		return err
	}
	if durable {
		SyncDir(r, path.Dir(name))
	}
	return nil
}

// Bytes is a fill for WriteRoot that writes data.
func Bytes(data []byte) func(*os.File) error {
	return func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}
}

// SyncDir makes renames into or out of dir (inside r) durable across a
// power cut. It is best effort: a filesystem that cannot fsync a folder
// has already done what it can, and the rename itself has succeeded.
func SyncDir(r *os.Root, dir string) {
	d, err := r.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
