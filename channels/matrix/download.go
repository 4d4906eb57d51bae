package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/id"

	"github.com/botd-dev/botd/channels"
	"github.com/botd-dev/botd/mediaregistry"
)

// The spec's grammar for the two halves of an mxc:// URI: a server name
// (host, IPv6 literal, optional port) and a media id. Anything else in a
// URI a sender's client wrote is refused before it becomes a request path.
//
// Checked by hand, not by regexp: a {1,255} repetition compiles to a
// program of hundreds of kilobytes at init, which every botd would carry
// whether or not Matrix is enabled.
func validServerName(s string) bool {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return false
		}
		inner := s[1:end]
		if len(inner) < 2 || len(inner) > 45 || !only(inner, "0123456789ABCDEFabcdef:.") {
			return false
		}
		host, port = s[:end+1], s[end+1:]
	} else {
		if i := strings.IndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i:]
		}
		if len(host) < 1 || len(host) > 255 || !only(host, alnum+".-") {
			return false
		}
	}
	if port == "" {
		return true
	}
	digits, ok := strings.CutPrefix(port, ":")
	return ok && len(digits) >= 1 && len(digits) <= 5 && only(digits, "0123456789")
}

// validMediaID is a media id: 1 to 255 of A-Z, a-z, 0-9, _ and -.
func validMediaID(s string) bool { return len(s) >= 1 && len(s) <= 255 && only(s, alnum+"_-") }

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// only reports whether every byte of s is one of set's.
func only(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// parseMXC reads an mxc:// URI and checks both halves against the spec's
// grammar.
func parseMXC(s string) (id.ContentURI, error) {
	mxc, err := id.ParseContentURI(s)
	if err != nil {
		return mxc, err
	}
	if !validServerName(mxc.Homeserver) || !validMediaID(mxc.FileID) {
		return mxc, id.ErrInvalidContentURI
	}
	return mxc, nil
}

// Download implements channels.Downloader. Nothing is fetched before it
// is called. The authenticated endpoint (/_matrix/client/v1/media/
// download, with the token) comes first; a homeserver that does not know
// it (404 M_UNRECOGNIZED, older than Matrix 1.11) is asked at the legacy
// /_matrix/media/v3/download. An encrypted attachment is decrypted while
// it streams: the SHA-256 of the ciphertext is checked when the stream
// ends, and a mismatch fails the read instead of ending it, so the media
// service keeps nothing of a tampered file.
func (m *Matrix) Download(ctx context.Context, ref *mediaregistry.MediaReference) (io.ReadCloser, int64, error) {
	h, err := decodeHandle(ref.Private)
	if err != nil {
		return nil, 0, fmt.Errorf("matrix download %s: unreadable handle: %w", ref.ID, channels.ErrUnavailable)
	}
	mxc, err := parseMXC(h.MXC)
	if err != nil {
		return nil, 0, fmt.Errorf("matrix download %s: %q is not a valid mxc:// URI: %w", ref.ID, h.MXC, channels.ErrUnavailable)
	}
	var ef *attachment.EncryptedFile
	if h.File != nil {
		ef = h.File
		// Checks version and algorithm and decodes key, iv and hash now,
		// before any request: a bad key is known without downloading.
		if err := ef.PrepareForDecryption(); err != nil {
			return nil, 0, fmt.Errorf("matrix download %s: the attachment's encryption info is unusable: %w: %w", ref.ID, err, channels.ErrUnavailable)
		}
	}
	resp, err := m.cli.Download(ctx, mxc)
	if errors.Is(err, mautrix.MUnrecognized) {
		resp, err = m.legacyDownload(ctx, mxc)
	}
	if err != nil {
		return nil, 0, m.downloadError(ref.ID, err)
	}
	if ef == nil {
		return resp.Body, resp.ContentLength, nil
	}
	// AES-CTR: the plaintext is as long as the ciphertext.
	return &decrypting{r: ef.DecryptStream(resp.Body), body: resp.Body}, resp.ContentLength, nil
}

// legacyDownload is the unauthenticated-era endpoint; the token goes with
// it (the homeserver is the same), which servers ignore there.
func (m *Matrix) legacyDownload(ctx context.Context, mxc id.ContentURI) (*http.Response, error) {
	_, resp, err := m.cli.MakeFullRequestWithResp(ctx, mautrix.FullRequest{
		Method:           http.MethodGet,
		URL:              m.cli.BuildURL(mautrix.MediaURLPath{"v3", "download", mxc.Homeserver, mxc.FileID}),
		DontReadResponse: true,
	})
	return resp, err
}

func (m *Matrix) downloadError(refID string, err error) error {
	msg := m.redact(err.Error())
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		switch he.Response.StatusCode {
		case http.StatusNotFound, http.StatusGone:
			return fmt.Errorf("matrix download %s: %s: %w", refID, msg, channels.ErrUnavailable)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("matrix download %s: %s: %w", refID, msg, channels.ErrForbidden)
		case http.StatusRequestEntityTooLarge:
			return fmt.Errorf("matrix download %s: %s: %w", refID, msg, channels.ErrTooLarge)
		}
	}
	return fmt.Errorf("matrix download %s: %s", refID, msg)
}

// decrypting ends the stream with an error, not io.EOF, when the
// ciphertext's SHA-256 does not match: whoever copies it (the media
// cache) then throws away what it wrote.
type decrypting struct {
	r    io.ReadCloser // attachment's decrypting stream; its Close checks the hash
	body io.Closer     // the response body under it
}

func (d *decrypting) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if errors.Is(err, io.EOF) {
		if cerr := d.r.Close(); cerr != nil {
			return n, fmt.Errorf("matrix: encrypted attachment refused: %w", cerr)
		}
	}
	return n, err
}

// Close closes the body only: it may run while a Read is under way (the
// media service unblocks a stalled stream that way), and the hash is
// Read's to check.
func (d *decrypting) Close() error { return d.body.Close() }
