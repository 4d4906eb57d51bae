package media

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/botd-dev/botd/mediaregistry"
)

// place puts the group's own copy of a cached blob into
// groups/<folder>/media/ under a name derived from the ref (never from the
// sender alone) and returns its path relative to the group folder, with
// the copy held (diskbudget.Acquire) until the caller closes it. Every
// step goes through os.Root, so a link planted in the group folder cannot
// redirect the write; the copy is the group's own (no hard link shares
// bytes with the cache or another group), made in the kernel where the
// filesystem allows (copy_file_range).
func (s *Service) place(g *groups.Group, ref *mediaregistry.MediaReference, e mediaregistry.Entry, blob *os.File) (string, *os.File, error) {
	// The daemon creates workspaces at start; a group folder removed
	// since is made again rather than failing every fetch. A link put in
	// place of the folder or of media/ is refused by OpenRoot.
	ws := s.workspace(g)
	if err := os.MkdirAll(ws.Root, 0o750); err != nil {
		return "", nil, fmt.Errorf("group folder: %w", err)
	}
	root, err := ws.OpenRoot()
	if err != nil {
		return "", nil, err
	}
	defer root.Close()
	if err := root.Mkdir("media", 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, err
	}
	name := FileName(ref, e.MIME)
	rel := "media/" + name
	if held, err := s.o.Budget.Acquire(root, rel); err == nil {
		if fi, err := held.Stat(); err == nil && fi.Size() == e.Size {
			return rel, held, nil
		}
		held.Close()
	}
	// A name of its own: two fetches of one ref may place it at once.
	tmp := "media/" + groups.TempPrefix + uuid.NewString() + "-" + name
	// The copy is held from birth: the lock is on the file, not the name,
	// so it still holds once the file is renamed into place, and no sweep
	// (woken by a guest's upload, say) can take the copy between the
	// rename and the fetch's own hold.
	var birth *os.File
	defer func() {
		if birth != nil {
			birth.Close()
		}
	}()
	// Not fsynced: the cache holds the bytes and places them again.
	err = atomicfile.WriteRoot(root, rel, tmp, 0o640, false, func(dst *os.File) error {
		h, err := root.Open(tmp)
		if err != nil {
			return err
		}
		if err := diskbudget.Hold(h); err != nil {
			h.Close()
			return err
		}
		birth = h
		// The limited *os.File keeps the copy in the kernel (copy_file_range).
		_, err = io.Copy(dst, io.LimitReader(blob, e.Size))
		return err
	})
	if err != nil {
		return "", nil, err
	}
	held, err := s.o.Budget.Acquire(root, rel)
	if err != nil {
		return "", nil, err
	}
	// Counted once held: the sweep this may wake finds the copy in use.
	s.o.Budget.Added(e.Size)
	return rel, held, nil
}

// FileName is "<ref>_<safe name>" with an extension that matches the real
// type, so a PNG named .pdf is saved as .png and opened as one, while an
// extension the type is also known by stays (voice.opus, photo.jpeg).
func FileName(ref *mediaregistry.MediaReference, mime string) string {
	base := fsSafe(mediaregistry.SafeName(ref.FileName))
	want := mediaregistry.Ext(mime)
	if ext := filepath.Ext(base); ext != "" && mediaregistry.ExtFits(ext, mime) {
		return ref.ID + "_" + base
	}
	if base == "" {
		base = strings.ToLower(string(ref.Kind))
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if len(base) > 60 {
		base = base[:60]
	}
	return ref.ID + "_" + base + want
}

// fsSafe keeps file names to a portable set of characters.
func fsSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "._")
}
