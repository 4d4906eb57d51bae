package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"

	"github.com/botd-dev/botd/llm"
)

// RemoteFiles asks c.Files for the provider's copy of every media file in
// req, before the request is built, so the builders stay pure. The map is
// keyed by Media.Path; media not in it go inline.
func (c *Client) RemoteFiles(ctx context.Context, api llm.FilesAPI, req *llm.Request) map[string]llm.RemoteFile {
	if c.Files == nil {
		return nil
	}
	var out map[string]llm.RemoteFile
	var visit func(parts []llm.Part)
	visit = func(parts []llm.Part) {
		for _, p := range parts {
			switch {
			case p.Kind == llm.PartMedia && p.Media != nil && p.Media.Path != "" && p.Media.Data == "" && p.Media.URL == "":
				if _, done := out[p.Media.Path]; done {
					continue
				}
				if f, ok := c.Files.Remote(ctx, api, p.Media); ok {
					if out == nil {
						out = map[string]llm.RemoteFile{}
					}
					out[p.Media.Path] = f
				}
			case p.Kind == llm.PartToolResult && p.ToolResult != nil:
				visit(p.ToolResult.Content)
			}
		}
	}
	for _, m := range req.Messages {
		visit(m.Parts)
	}
	return out
}

// Do makes one plain (non-streaming) call and returns the 2xx body, at
// most max bytes. Failures are classified like a stream's.
func (c *Client) Do(ctx context.Context, method, url string, h http.Header, body io.Reader, max int64) ([]byte, http.Header, error) {
	resp, err := c.send(ctx, method, url, h, body)
	if err != nil {
		return nil, nil, err
	}
	return c.read(resp, max)
}

// read reads the 2xx answer of a plain call, at most max bytes, and
// closes it.
func (c *Client) read(resp *http.Response, max int64) ([]byte, http.Header, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, resp.Header, c.finish(llm.FromTransport(c.Provider, err))
	}
	if int64(len(b)) > max {
		req := resp.Request
		return nil, resp.Header, c.finish(llm.NewError(c.Provider, llm.KindUnknown,
			fmt.Sprintf("%s %s: response over %d bytes", req.Method, req.URL.Redacted(), max)))
	}
	return b, resp.Header, nil
}

// send makes one plain call and returns the response once it is 2xx; the
// caller reads and closes its body. Any other status is read (bounded),
// classified and returned as the error.
func (c *Client) send(ctx context.Context, method, url string, h http.Header, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, c.finish(llm.Errorf(c.Provider, llm.KindBadRequest, err, "build request: %v", err))
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if s, ok := body.(*Sized); ok {
		req.ContentLength = s.N
	}
	return c.do(req)
}

// Send makes one plain call and returns the response once it is 2xx, for
// answers the caller streams on (audio, video); the caller closes its body.
func (c *Client) Send(ctx context.Context, method, url string, h http.Header, body io.Reader) (*http.Response, error) {
	return c.send(ctx, method, url, h, body)
}

// do sends req with the adapter's client; any status but 2xx is read
// (bounded), classified and returned as the error.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.finish(llm.FromTransport(c.Provider, err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, c.finish(c.parseError(resp.StatusCode, resp.Header, b))
	}
	return resp, nil
}

// JSONBody is a request body for [Client.Do].
func JSONBody(v any) (io.Reader, error) {
	b, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// Multipart streams a multipart/form-data body: the fields, then the file
// under fileField, read from r as the request is sent (never buffered
// whole). The HTTP client closes the returned reader on every path, which
// ends the writing goroutine.
func Multipart(fields [][2]string, fileField, fileName, fileMIME string, r io.Reader) (io.ReadCloser, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, f := range fields {
				if err := mw.WriteField(f[0], f[1]); err != nil {
					return err
				}
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, fileField, headerSafe(fileName)))
			h.Set("Content-Type", fileMIME)
			w, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, r); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

// headerSafe keeps a file name (which may come from a chat) from breaking
// out of its quoted header value: anything but printable ASCII other than
// quote and backslash becomes '_'.
func headerSafe(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "file"
	}
	return string(b)
}

// NotFound reports a 404 from the vendor: deleting what is already gone.
func NotFound(err error) bool {
	var e *llm.Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Sized is a body of known length for [Client.Do], sent with
// Content-Length rather than chunked (some upload endpoints require it).
type Sized struct {
	R io.Reader
	N int64
}

func (s *Sized) Read(b []byte) (int, error) { return s.R.Read(b) }
