package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/botd-dev/botd/llm"
)

// Upload posts a body of n bytes that open makes afresh for each attempt
// (a redirect asks for it again) and returns the 2xx body, at most max
// bytes, with the answer's header. No reader that open returned is read
// after Upload returns, so the caller may close the file behind it then.
func (c *Client) Upload(ctx context.Context, url string, h http.Header, n int64, open func() io.Reader, max int64) ([]byte, http.Header, error) {
	// The transport may still read a body after Do returns (net/http closes
	// it in its own time); the lease ends all reads before we return.
	var l lease
	defer l.end()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, l.reader(open()))
	if err != nil {
		return nil, nil, c.finish(llm.Errorf(c.Provider, llm.KindBadRequest, err, "build request: %v", err))
	}
	req.ContentLength = n
	req.GetBody = func() (io.ReadCloser, error) { return l.reader(open()), nil }
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, nil, err
	}
	return c.read(resp, max)
}

// errLeaseOver is what a body read gets once Upload has returned.
var errLeaseOver = errors.New("wire: upload abandoned")

// lease hands out readers of the caller's file and takes them back: after
// end, no reader touches the file again, and end waits for a read under way.
type lease struct {
	mu   sync.Mutex
	over bool
}

func (l *lease) end() {
	l.mu.Lock()
	l.over = true
	l.mu.Unlock()
}

func (l *lease) reader(r io.Reader) io.ReadCloser { return &leased{l: l, r: r} }

type leased struct {
	l *lease
	r io.Reader
}

func (r *leased) Read(p []byte) (int, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.l.over {
		return 0, errLeaseOver
	}
	return r.r.Read(p)
}

func (r *leased) Close() error { return nil }
