package groups

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/botd-dev/botd/internal/atomicfile"
	"github.com/botd-dev/botd/mediaregistry"
)

// The memory file of a group is part of every prompt of that group; the
// global one (groups/global/MEMORY.md) of every group's. The assistant
// changes them only through Remember and Forget: one dated line per note,
// written by a chat member through the model, so each note is flattened
// to one line and cleaned like a caption, and the file never grows past
// MaxMemoryBytes.

// MaxMemoryBytes caps what the memory file adds to every prompt.
const MaxMemoryBytes = 64 << 10

// MaxNoteRunes caps one note given to Remember, after cleaning.
const MaxNoteRunes = 500

// MinForgetRunes is the shortest text Forget searches for, so that a
// letter cannot wipe the memory.
const MinForgetRunes = 3

// GlobalFolder is the folder beside the groups' folders that holds the
// memory every group reads. It is a reserved name, never a group's folder.
const GlobalFolder = "global"

const (
	// memoryLock is locked (flock) around every change of the memory file,
	// by the daemon and by any `botd mcp` process alike. It cannot be the
	// memory file itself: that is replaced by a rename on every change.
	memoryLock = ".MEMORY.md.lock"
	// memoryTemp is where the new memory file is written before it is
	// renamed into place. One name is enough: writers hold memoryLock.
	memoryTemp = TempPrefix + MemoryFile
	// maxEditBytes bounds the file Remember and Forget read and rewrite. An
	// owner may have written more than MaxMemoryBytes by hand; Forget must
	// keep all of it, so it reads the whole file, up to this.
	maxEditBytes = 1 << 20
)

// Errors of Remember and Forget, for errors.Is; each error says in plain
// words what happened and what to do.
var (
	// ErrMemoryFull: the note would take the file past MaxMemoryBytes.
	// Nothing was written.
	ErrMemoryFull = fmt.Errorf("memory is full (%d KiB); forget something first", MaxMemoryBytes>>10)
	// ErrBadMemoryText: the note or the text to forget was refused
	// (empty, too long, too short).
	ErrBadMemoryText = errors.New("memory text refused")
	// ErrNoMatch: no note contains the text given to Forget.
	ErrNoMatch = errors.New("no note matches")
)

type memoryError struct {
	kind error
	msg  string
}

func (e *memoryError) Error() string { return e.msg }
func (e *memoryError) Unwrap() error { return e.kind }

func memErr(kind error, format string, a ...any) error {
	return &memoryError{kind: kind, msg: fmt.Sprintf(format, a...)}
}

// GlobalWorkspace is groups/global, the memory every group reads and only
// the main group writes. Nothing is created here: Remember creates the
// folder on first use, and it is opened like every group folder (OpenRoot
// refuses a link or a file in its place).
func GlobalWorkspace(groupsDir string) Workspace {
	return Workspace{Root: filepath.Join(groupsDir, GlobalFolder)}
}

// Memory reads the memory file; a missing file (or folder) is empty
// memory. A link in place of the file is refused: a link to config.yaml
// or the database must not end up in every system prompt. More than
// MaxMemoryBytes is cut.
func (w Workspace) Memory() (string, error) {
	root, err := w.OpenRoot()
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory file: %w", err)
	}
	defer root.Close()
	f, err := openMemory(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxMemoryBytes+1))
	if err != nil {
		return "", fmt.Errorf("memory file: %w", err)
	}
	if len(b) > MaxMemoryBytes {
		b = b[:MaxMemoryBytes]
	}
	return string(b), nil
}

// Remember appends the note to the memory file as one line,
// "- YYYY-MM-DD: note" (the date of now, in now's location), creating the
// folder and the file when missing. The note comes from chat members: it
// is put on one line and control, bidi and zero-width characters are
// removed (mediaregistry.SafeCaption); what remains must be 1 to
// MaxNoteRunes characters. Past MaxMemoryBytes it answers ErrMemoryFull
// and writes nothing. It returns the note as stored.
//
// Changes are serialised across goroutines and processes, and the file is
// replaced atomically: a reader sees the old memory or the new one.
func (w Workspace) Remember(note string, now time.Time) (string, error) {
	clean := mediaregistry.SafeCaption(note)
	if clean == "" {
		return "", memErr(ErrBadMemoryText, "the note is empty: give the text to remember")
	}
	if n := utf8.RuneCountInString(clean); n > MaxNoteRunes {
		if n > mediaregistry.MaxCaptionRunes { // SafeCaption cut it
			n = utf8.RuneCountInString(note)
		}
		return "", memErr(ErrBadMemoryText, "the note has %d characters, at most %d are kept: shorten it to one fact", n, MaxNoteRunes)
	}
	root, err := w.create()
	if err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	defer root.Close()
	line := "- " + now.Format("2006-01-02") + ": " + clean + "\n"
	err = editMemory(root, func(old []byte) ([]byte, error) {
		b := make([]byte, 0, len(old)+1+len(line))
		b = append(b, old...)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		b = append(b, line...)
		if len(b) > MaxMemoryBytes {
			return nil, ErrMemoryFull
		}
		return b, nil
	})
	if err != nil {
		return "", err
	}
	return clean, nil
}

// Forget removes every note of the memory file that contains text,
// compared case-insensitively after the cleaning Remember applies. Notes
// are list lines ("- …", "* …", "+ …"), and only their text is searched,
// not the date Remember put first; headings and prose the owners wrote
// are never removed. text must have at least MinForgetRunes characters;
// nothing matching is ErrNoMatch. It returns how many notes it removed.
func (w Workspace) Forget(text string) (int, error) {
	q := mediaregistry.SafeCaption(text)
	if utf8.RuneCountInString(q) < MinForgetRunes {
		return 0, memErr(ErrBadMemoryText, "give at least %d characters of the note to forget, not %q", MinForgetRunes, q)
	}
	noMatch := memErr(ErrNoMatch, "no note in the memory contains %q; nothing was removed", q)
	root, err := w.OpenRoot()
	if errors.Is(err, fs.ErrNotExist) {
		return 0, noMatch
	}
	if err != nil {
		return 0, fmt.Errorf("memory: %w", err)
	}
	defer root.Close()
	lq := strings.ToLower(q)
	removed := 0
	err = editMemory(root, func(old []byte) ([]byte, error) {
		removed = 0
		kept := make([]byte, 0, len(old))
		for _, l := range strings.SplitAfter(string(old), "\n") {
			if n, ok := noteText(l); ok && strings.Contains(strings.ToLower(n), lq) {
				removed++
				continue
			}
			kept = append(kept, l...)
		}
		if removed == 0 {
			return nil, noMatch
		}
		return kept, nil
	})
	if err != nil {
		return 0, err
	}
	return removed, nil
}

// noteText is the text of a note line: a list item, without its marker
// and without the date Remember writes first.
func noteText(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if len(t) < 2 || !strings.ContainsRune("-*+", rune(t[0])) || t[1] != ' ' {
		return "", false
	}
	t = t[2:]
	if len(t) >= 12 && t[10:12] == ": " {
		if _, err := time.Parse("2006-01-02", t[:10]); err == nil {
			t = t[12:]
		}
	}
	return t, true
}

// editMemory replaces the memory file in root with what edit makes of its
// bytes (nil when there is none), holding the memory lock from the read to
// the rename. An error from edit leaves the file as it was.
func editMemory(root *os.Root, edit func(old []byte) ([]byte, error)) error {
	lock, err := openPlain(root, memoryLock, os.O_RDONLY|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("memory lock: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := Flock(lock, true, true); err != nil {
		return fmt.Errorf("memory lock: %w", err)
	}
	old, perm, err := readForEdit(root)
	if err != nil {
		return err
	}
	b, err := edit(old)
	if err != nil {
		return err
	}
	return replaceMemory(root, b, perm)
}

// readForEdit reads the whole memory file and its permissions; a missing
// file is empty.
func readForEdit(root *os.Root) ([]byte, fs.FileMode, error) {
	f, err := openMemory(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o640, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("memory file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("memory file: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("memory file: %w", err)
	}
	if len(b) > maxEditBytes {
		return nil, 0, fmt.Errorf("memory file %s is larger than %d KiB: edit it by hand", MemoryFile, maxEditBytes>>10)
	}
	return b, fi.Mode().Perm(), nil
}

// replaceMemory writes b to a temp file and renames it over the memory
// file, keeping its permissions.
func replaceMemory(root *os.Root, b []byte, perm fs.FileMode) error {
	if err := root.Remove(memoryTemp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("memory file: %w", err)
	}
	err := atomicfile.WriteRoot(root, MemoryFile, memoryTemp, perm, true, func(f *os.File) error {
		if _, err := f.Write(b); err != nil {
			return err
		}
		return f.Chmod(perm) // the umask must not change what the owner chose
	})
	if err != nil {
		return fmt.Errorf("memory file: %w", err)
	}
	return nil
}

// openMemory opens the memory file for reading: a regular file with one
// link (openSole), and the file of that name, not one a symlink inside the
// folder leads to.
func openMemory(root *os.Root) (*os.File, error) {
	return openPlain(root, MemoryFile, os.O_RDONLY)
}

// openPlain is openSole that also refuses a name that is a symlink, even
// to a file inside the folder: the memory file and its lock are the files
// of that name, never ones a link leads to.
func openPlain(root *os.Root, name string, flag int) (*os.File, error) {
	// os.Root follows a link inside the folder even with O_NOFOLLOW, and
	// O_CREATE would create its target: look first, and check what was
	// opened afterwards.
	if li, err := root.Lstat(name); err == nil && li.Mode()&os.ModeSymlink != 0 {
		return nil, linkErr(name)
	}
	f, err := openSole(root, name, flag)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		var li os.FileInfo
		if li, err = root.Lstat(name); err == nil && !os.SameFile(fi, li) {
			err = linkErr(name)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func linkErr(name string) error {
	return fmt.Errorf("%s is a symlink; botd only reads and writes the file itself: remove the link", name)
}
