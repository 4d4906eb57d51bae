package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// fileLifetime is asked of OpenAI for every upload, so a file botd loses
// track of (a crash between upload and record) still goes away on its own.
const fileLifetime = 7 * 24 * time.Hour

// maxFileBytes is the Files API's limit per file.
const maxFileBytes = 512 << 20

var _ llm.FilesAPI = (*Provider)(nil)

func (p *Provider) header() http.Header {
	h := http.Header{}
	if p.Client.APIKey != "" {
		// Ollama and vLLM run without a key.
		h.Set("Authorization", "Bearer "+p.Client.APIKey)
	}
	return h
}

// FileUsable: Chat Completions refer to uploaded files only for PDFs;
// images and audio must travel inline.
func (p *Provider) FileUsable(mimeType string, size int64) (bool, string) {
	switch {
	case mimeType != "application/pdf":
		return false, fmt.Sprintf("chat completions cannot refer to an uploaded %s", mimeType)
	case size > maxFileBytes:
		return false, fmt.Sprintf("over the Files API's %d MB", maxFileBytes>>20)
	}
	return true, ""
}

type fileObject struct {
	ID        string `json:"id"`
	ExpiresAt *int64 `json:"expires_at"`
}

// UploadFile posts to /files with purpose user_data and an expiry.
func (p *Provider) UploadFile(ctx context.Context, f llm.FileUpload) (llm.RemoteFile, error) {
	obj, err := p.upload(ctx, [][2]string{
		{"purpose", "user_data"},
		{"expires_after[anchor]", "created_at"},
		{"expires_after[seconds]", strconv.Itoa(int(fileLifetime / time.Second))},
	}, f)
	if err != nil {
		return llm.RemoteFile{}, err
	}
	rf := llm.RemoteFile{ID: obj.ID}
	if obj.ExpiresAt != nil && *obj.ExpiresAt > 0 {
		rf.ExpiresAt = time.Unix(*obj.ExpiresAt, 0)
	}
	return rf, nil
}

// upload posts f to /files with the given form fields (purpose first).
func (p *Provider) upload(ctx context.Context, fields [][2]string, f llm.FileUpload) (*fileObject, error) {
	body, ct := wire.Multipart(fields, "file", f.Name, f.MIME, f.Body)
	h := p.header()
	h.Set("Content-Type", ct)
	b, _, err := p.Client.Do(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/files"), h, body, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("upload %s: %w", f.Name, err)
	}
	var obj fileObject
	if err := json.Unmarshal(b, &obj); err != nil || obj.ID == "" {
		return nil, llm.NewError(p.Name(), llm.KindUnknown, "upload: response has no file id: "+wire.Snippet(b))
	}
	return &obj, nil
}

// DeleteFile removes the file; one already gone (404) is not an error.
func (p *Provider) DeleteFile(ctx context.Context, f llm.RemoteFile) error {
	_, _, err := p.Client.Do(ctx, http.MethodDelete, wire.JoinURL(p.BaseURL, "/files/"+url.PathEscape(f.ID)), p.header(), nil, 64<<10)
	if err != nil && !wire.NotFound(err) {
		return fmt.Errorf("delete %s: %w", f.ID, err)
	}
	return nil
}
