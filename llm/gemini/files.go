package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// maxFileBytes is the Files API's limit per file.
const maxFileBytes = 2 << 30

// Processing a video can take a while; these bound the wait before the
// file may be referred to.
const (
	processPollFirst = 500 * time.Millisecond
	processPollMax   = 5 * time.Second
	processWait      = 5 * time.Minute
)

var _ llm.FilesAPI = (*Provider)(nil)

// header carries the key in a header, never the query string, so it cannot
// end up in a URL that an error or a proxy log prints.
func (p *Provider) header() http.Header {
	h := http.Header{}
	if p.Client.APIKey != "" {
		// In a header, not the query string: a key in a URL ends up in
		// what errors and proxies print.
		h.Set("x-goog-api-key", p.Client.APIKey)
	}
	return h
}

// FileUsable: generateContent refers to any uploaded file by its URI.
func (p *Provider) FileUsable(mimeType string, size int64) (bool, string) {
	if size > maxFileBytes {
		return false, fmt.Sprintf("over the Files API's %d GB", maxFileBytes>>30)
	}
	return true, ""
}

type fileObject struct {
	Name           string `json:"name"`
	URI            string `json:"uri"`
	State          string `json:"state"`
	ExpirationTime string `json:"expirationTime"`
	Error          *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (f fileObject) remote() llm.RemoteFile {
	rf := llm.RemoteFile{ID: f.Name, URI: f.URI}
	if t, err := time.Parse(time.RFC3339Nano, f.ExpirationTime); err == nil {
		rf.ExpiresAt = t
	}
	return rf
}

// UploadFile uses the resumable protocol in one go: a start call that
// returns the upload URL, then the bytes with "upload, finalize". A video
// is processed before it can be used, so it waits for state ACTIVE.
func (p *Provider) UploadFile(ctx context.Context, f llm.FileUpload) (llm.RemoteFile, error) {
	h := p.header()
	h.Set("X-Goog-Upload-Protocol", "resumable")
	h.Set("X-Goog-Upload-Command", "start")
	h.Set("X-Goog-Upload-Header-Content-Length", strconv.FormatInt(f.Size, 10))
	h.Set("X-Goog-Upload-Header-Content-Type", f.MIME)
	h.Set("Content-Type", "application/json")
	start, err := wire.JSONBody(map[string]any{"file": map[string]string{"display_name": f.Name}})
	if err != nil {
		return llm.RemoteFile{}, err
	}
	_, rh, err := p.Client.Do(ctx, http.MethodPost, wire.JoinURL(p.BaseURL, "/upload/v1beta/files"), h, start, 64<<10)
	if err != nil {
		return llm.RemoteFile{}, fmt.Errorf("upload %s: start: %w", f.Name, err)
	}
	up := rh.Get("X-Goog-Upload-URL")
	if err := p.sameHost(up); err != nil {
		return llm.RemoteFile{}, fmt.Errorf("upload %s: %w", f.Name, err)
	}
	// The upload URL carries its own authorisation; the key stays home.
	uh := http.Header{}
	uh.Set("X-Goog-Upload-Command", "upload, finalize")
	uh.Set("X-Goog-Upload-Offset", "0")
	b, _, err := p.Client.Do(ctx, http.MethodPost, up, uh, &wire.Sized{R: f.Body, N: f.Size}, 64<<10)
	if err != nil {
		return llm.RemoteFile{}, fmt.Errorf("upload %s: %w", f.Name, err)
	}
	var env struct {
		File fileObject `json:"file"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.File.Name == "" || env.File.URI == "" {
		return llm.RemoteFile{}, llm.NewError(p.Name(), llm.KindUnknown, "upload: response has no file: "+wire.Snippet(b))
	}
	return p.awaitActive(ctx, env.File)
}

// awaitActive polls a PROCESSING file with backoff until it is ACTIVE.
func (p *Provider) awaitActive(ctx context.Context, f fileObject) (llm.RemoteFile, error) {
	ctx, cancel := context.WithTimeout(ctx, processWait)
	defer cancel()
	wait := processPollFirst
	for {
		switch f.State {
		case "", "ACTIVE", "STATE_UNSPECIFIED":
			return f.remote(), nil
		case "FAILED":
			msg := "processing failed"
			if f.Error != nil && f.Error.Message != "" {
				msg += ": " + f.Error.Message
			}
			return llm.RemoteFile{}, llm.NewError(p.Name(), llm.KindBadRequest, fmt.Sprintf("file %s: %s", f.Name, msg))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return llm.RemoteFile{}, fmt.Errorf("file %s still %s: %w", f.Name, f.State, llm.FromTransport(p.Name(), ctx.Err()))
		case <-t.C:
		}
		wait = min(2*wait, processPollMax)
		b, _, err := p.Client.Do(ctx, http.MethodGet, wire.JoinURL(p.BaseURL, "/v1beta/"+f.Name), p.header(), nil, 64<<10)
		if err != nil {
			return llm.RemoteFile{}, fmt.Errorf("file %s: %w", f.Name, err)
		}
		var next fileObject
		if err := json.Unmarshal(b, &next); err != nil || next.Name == "" {
			return llm.RemoteFile{}, llm.NewError(p.Name(), llm.KindUnknown, "file status: "+wire.Snippet(b))
		}
		f = next
	}
}

// DeleteFile removes the file; one already gone (404, or expired) is not
// an error.
func (p *Provider) DeleteFile(ctx context.Context, f llm.RemoteFile) error {
	if !strings.HasPrefix(f.ID, "files/") {
		return fmt.Errorf("delete %q: not a file name", f.ID)
	}
	_, _, err := p.Client.Do(ctx, http.MethodDelete, wire.JoinURL(p.BaseURL, "/v1beta/files/"+url.PathEscape(strings.TrimPrefix(f.ID, "files/"))), p.header(), nil, 64<<10)
	if err != nil && !wire.NotFound(err) {
		return fmt.Errorf("delete %s: %w", f.ID, err)
	}
	return nil
}

// sameHost refuses an upload URL on another host than the API: the bytes
// of a chat's media go only where they were meant to.
func (p *Provider) sameHost(up string) error {
	if up == "" {
		return llm.NewError(p.Name(), llm.KindUnknown, "upload: no X-Goog-Upload-URL in the answer")
	}
	u, err := url.Parse(up)
	base, berr := url.Parse(p.BaseURL)
	if err != nil || berr != nil || u.Host != base.Host || (u.Scheme != "https" && u.Scheme != base.Scheme) {
		return llm.NewError(p.Name(), llm.KindUnknown, fmt.Sprintf("upload: refusing upload URL on another host (%s)", wire.Snippet([]byte(up))))
	}
	return nil
}

// withFileURIs returns req with the media that went up referred to by
// URI (fileData) instead of their bytes.
func withFileURIs(req *llm.Request, files map[string]llm.RemoteFile) *llm.Request {
	if len(files) == 0 {
		return req
	}
	swap := func(parts []llm.Part) []llm.Part {
		out := make([]llm.Part, len(parts))
		copy(out, parts)
		for i, p := range out {
			if p.Kind == llm.PartMedia && p.Media != nil {
				if f, ok := files[p.Media.Path]; ok && p.Media.Path != "" {
					out[i].Media = &llm.Media{MIME: p.Media.MIME, URL: f.URI}
				}
			}
		}
		return out
	}
	r := *req
	r.Messages = make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Parts = swap(m.Parts)
		for j, p := range m.Parts {
			if p.Kind == llm.PartToolResult && p.ToolResult != nil {
				tr := *p.ToolResult
				tr.Content = swap(tr.Content)
				m.Parts[j].ToolResult = &tr
			}
		}
		r.Messages[i] = m
	}
	return &r
}
