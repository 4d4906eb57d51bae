package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// FilesBeta is the beta the Files API and requests that refer to its
// files need.
const FilesBeta = "files-api-2025-04-14"

// maxFileBytes is the Files API's limit per file.
const maxFileBytes = 500 << 20

var _ llm.FilesAPI = (*Provider)(nil)

func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("x-api-key", p.Client.APIKey)
	h.Set("anthropic-version", APIVersion)
	return h
}

// FileUsable: a message can refer to an uploaded image or PDF; other types
// (audio, video) cannot be sent to this API at all.
func (p *Provider) FileUsable(mimeType string, size int64) (bool, string) {
	switch {
	case size > maxFileBytes:
		return false, fmt.Sprintf("over the Files API's %d MB", maxFileBytes>>20)
	case mimeType == "image/jpeg", mimeType == "image/png", mimeType == "image/gif", mimeType == "image/webp", mimeType == "application/pdf":
		return true, ""
	}
	return false, fmt.Sprintf("messages cannot refer to an uploaded %s", mimeType)
}

type fileObject struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// UploadFile posts the file to /v1/files. Anthropic keeps it until it is
// deleted, so ExpiresAt stays zero.
func (p *Provider) UploadFile(ctx context.Context, f llm.FileUpload) (llm.RemoteFile, error) {
	body, ct := wire.Multipart(nil, "file", f.Name, f.MIME, f.Body)
	h := p.header()
	h.Set("anthropic-beta", FilesBeta)
	h.Set("Content-Type", ct)
	b, _, err := p.Client.Do(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/v1/files"), h, body, 64<<10)
	if err != nil {
		return llm.RemoteFile{}, fmt.Errorf("upload %s: %w", f.Name, err)
	}
	var obj fileObject
	if err := json.Unmarshal(b, &obj); err != nil || obj.ID == "" {
		return llm.RemoteFile{}, llm.NewError(p.Name(), llm.KindUnknown, "upload: response has no file id: "+wire.Snippet(b))
	}
	return llm.RemoteFile{ID: obj.ID}, nil
}

// DeleteFile removes the file; one already gone (404) is not an error.
func (p *Provider) DeleteFile(ctx context.Context, f llm.RemoteFile) error {
	h := p.header()
	h.Set("anthropic-beta", FilesBeta)
	_, _, err := p.Client.Do(ctx, http.MethodDelete, wire.JoinURL(p.BaseURL, "/v1/files/"+url.PathEscape(f.ID)), h, nil, 64<<10)
	if wire.NotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", f.ID, err)
	}
	return nil
}
