package llm

import (
	"context"
	"io"
	"time"
)

// RemoteFile is media held by a provider's files API. Requests refer to it
// by ID (Anthropic, OpenAI) or URI (Gemini) instead of carrying the bytes.
type RemoteFile struct {
	ID  string
	URI string
	// ExpiresAt is when the provider drops the file; zero means it keeps
	// it until deleted.
	ExpiresAt time.Time
}

// FileUpload is one file for [FilesAPI.UploadFile].
type FileUpload struct {
	Name string
	MIME string
	Size int64
	Body io.Reader
}

// FilesAPI is the optional files endpoint of an adapter.
type FilesAPI interface {
	Name() string
	// FileUsable reports whether a request of this adapter can refer to an
	// uploaded file of this type and size; reason says why not.
	FileUsable(mime string, size int64) (ok bool, reason string)
	UploadFile(ctx context.Context, f FileUpload) (RemoteFile, error)
	// DeleteFile removes the file; one the provider no longer has is not
	// an error.
	DeleteFile(ctx context.Context, f RemoteFile) error
}

// Files gives an adapter the provider's copy of a media file, uploading it
// the first time. ok false means: send the bytes inline. It never fails a
// request: a failed upload is logged and the media goes inline.
type Files interface {
	Remote(ctx context.Context, api FilesAPI, m *Media) (f RemoteFile, ok bool)
}
