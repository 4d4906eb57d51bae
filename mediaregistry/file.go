package mediaregistry

import (
	"io"
	"os"
)

// File is a cache temp file as a channel that writes straight into it sees
// it. It has whatsmeow's File method set, so a WhatsApp download decrypts
// in place inside the cache instead of in a temp file of its own. Every
// write past the download cap fails with ErrTooLarge.
type File interface {
	io.Reader
	io.Writer
	io.Seeker
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
}
