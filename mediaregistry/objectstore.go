package mediaregistry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/botd-dev/botd/internal/atomicfile"
)

// ErrNoObject: the store holds no object under that digest.
var ErrNoObject = errors.New("no such media object")

// ObjectInfo describes one stored blob. The digest is its key: two refs
// with the same bytes share one object.
type ObjectInfo struct {
	SHA256 string
	Size   int64
	MIME   string
	Name   string // the first name it was posted under, for downloads
}

// ObjectStore keeps media bytes for good, content addressed. The cache
// (data/media) is always the working copy the group copies are made from;
// the store is where bytes outlive that copy: the cache folder itself
// (LocalStore, the default) or an S3-compatible bucket.
//
// Implementations stream: Put reads r once, Get returns a stream, and
// neither holds more than a bounded buffer, whatever the size.
type ObjectStore interface {
	// ID names the store for the database: a blob recorded as kept by
	// one ID is not assumed to be in a store with another (a changed
	// bucket or prefix uploads again).
	ID() string
	// Put stores exactly info.Size bytes of r under info.SHA256,
	// replacing nothing that is already there under that digest.
	Put(ctx context.Context, info ObjectInfo, r io.Reader) error
	// Get opens the object; a missing one is ErrNoObject.
	Get(ctx context.Context, sha string) (io.ReadCloser, ObjectInfo, error)
	// Stat describes the object; a missing one is ErrNoObject.
	Stat(ctx context.Context, sha string) (ObjectInfo, error)
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, sha string) error
}

var shaName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidSHA256 reports a lower-case hex SHA-256 digest: the only names a
// store accepts, so no key can climb out of its folder or prefix.
func ValidSHA256(s string) bool { return shaName.MatchString(s) }

// LocalStore is the cache folder as an ObjectStore: data/media/<sha256>,
// written through tmp/ and renamed into place.
type LocalStore struct{ dir string }

// NewLocalStore is the store over dir (the cache folder); no I/O.
func NewLocalStore(dir string) *LocalStore { return &LocalStore{dir: dir} }

// ID is "local": whatever folder, the bytes are on this machine.
func (l *LocalStore) ID() string { return "local" }

// Put writes r to a temp file, checks its size and digest, and renames it
// to its content address, every step inside the folder (os.Root). An
// object already there is kept.
func (l *LocalStore) Put(ctx context.Context, info ObjectInfo, r io.Reader) error {
	if !ValidSHA256(info.SHA256) {
		return fmt.Errorf("local store: bad digest %q", info.SHA256)
	}
	if err := os.MkdirAll(filepath.Join(l.dir, "tmp"), 0o750); err != nil {
		return fmt.Errorf("local store: %w", err)
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return fmt.Errorf("local store: %w", err)
	}
	defer root.Close()
	if fi, err := root.Lstat(info.SHA256); err == nil && fi.Mode().IsRegular() && fi.Size() == info.Size {
		return nil
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	tmpName := "tmp/put-" + hex.EncodeToString(nonce[:])
	err = atomicfile.WriteRoot(root, info.SHA256, tmpName, 0o640, true, func(tmp *os.File) error {
		return copyVerified(tmp, ContextReader(ctx, r), info)
	})
	if err != nil {
		return fmt.Errorf("local store: %w", err)
	}
	return nil
}

// Get opens the blob inside the folder (a link planted there is refused).
func (l *LocalStore) Get(_ context.Context, sha string) (io.ReadCloser, ObjectInfo, error) {
	if !ValidSHA256(sha) {
		return nil, ObjectInfo{}, fmt.Errorf("local store: %q: %w", sha, ErrNoObject)
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("local store: %w", err)
	}
	defer root.Close()
	f, err := root.Open(sha)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ObjectInfo{}, fmt.Errorf("local store: %s: %w", sha, ErrNoObject)
	}
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("local store: %w", err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, ObjectInfo{}, fmt.Errorf("local store: %s is not a regular file: %w", sha, ErrNoObject)
	}
	return f, ObjectInfo{SHA256: sha, Size: fi.Size()}, nil
}

// Stat describes the blob without opening it.
func (l *LocalStore) Stat(_ context.Context, sha string) (ObjectInfo, error) {
	if !ValidSHA256(sha) {
		return ObjectInfo{}, fmt.Errorf("local store: %q: %w", sha, ErrNoObject)
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("local store: %w", err)
	}
	defer root.Close()
	fi, err := root.Lstat(sha)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return ObjectInfo{}, fmt.Errorf("local store: %s: %w", sha, ErrNoObject)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("local store: %w", err)
	}
	return ObjectInfo{SHA256: sha, Size: fi.Size()}, nil
}

// Delete removes the blob.
func (l *LocalStore) Delete(_ context.Context, sha string) error {
	if !ValidSHA256(sha) {
		return nil
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return fmt.Errorf("local store: %w", err)
	}
	defer root.Close()
	if err := root.Remove(sha); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("local store: %w", err)
	}
	return nil
}

// copyVerified copies exactly info.Size bytes from r to w and fails unless
// they hash to info.SHA256: a store that returns other bytes (a truncated
// transfer, a tampered object) never passes them on as media.
func copyVerified(w io.Writer, r io.Reader, info ObjectInfo) error {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, info.Size+1))
	switch {
	case err != nil:
		return err
	case n != info.Size:
		return fmt.Errorf("object %s has %d bytes, want %d", info.SHA256, n, info.Size)
	case hex.EncodeToString(h.Sum(nil)) != info.SHA256:
		return fmt.Errorf("object %s does not match its digest", info.SHA256)
	}
	return nil
}
