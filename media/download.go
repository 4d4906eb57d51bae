package media

import (
	"context"
	"io"

	"github.com/botd-dev/botd/mediaregistry"
)

// Downloader is a channel that opens the bytes of a ref on demand. Only
// the media service calls it, and only when the agent or an MCP client
// asked for the media. Errors wrap channels.ErrTooLarge, ErrForbidden or
// ErrUnavailable when they are one of those.
type Downloader interface {
	// Download returns a stream of the media; size is the expected
	// length or -1.
	Download(ctx context.Context, ref *mediaregistry.MediaReference) (body io.ReadCloser, size int64, err error)
}

// FileDownloader is a channel that writes a ref's bytes straight into the
// cache's temp file (it needs to seek, as WhatsApp decrypts in place). The
// service prefers it over Downloader: the bytes reach the disk once.
type FileDownloader interface {
	DownloadTo(ctx context.Context, ref *mediaregistry.MediaReference, dst mediaregistry.File) error
}

// DownloadLimiter is a channel whose network bounds a download below
// media.max_download_bytes: the Bot API's 20 MB, or the size a WhatsApp
// sender declared. The service refuses a ref declared over it before any
// request and caps the stream at it. why names the limit for the error
// message, e.g. "the Bot API download limit (channels.telegram.max_download_bytes)".
type DownloadLimiter interface {
	DownloadLimit(ref *mediaregistry.MediaReference) (max int64, why string)
}
