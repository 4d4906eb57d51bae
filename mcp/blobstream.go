package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// mcp-go answers resources/read by marshalling the whole JSON-RPC response,
// the file's base64 inside, in memory: a 19 MB file costs about five times
// that in copies (the base64 string, the encoder's growing buffer), and 32
// parallel reads took the server to 2.6 GB. Its API has no way to stream a
// blob, so over HTTP readLink hands mcp-go a placeholder instead of the
// base64, and the response writer of that request swaps the placeholder
// for the file, encoded chunk by chunk as it goes to the client. Memory per
// read is then one chunk, whatever the file's size.

// blobPrefix starts every placeholder; the rest is random, so nothing a
// client or a chat member wrote can be taken for one.
const blobPrefix = "botd-blob-"

// blobChunk is what is read from the file at a time: a multiple of 3, so
// only the last chunk's base64 has padding.
const blobChunk = 3 * 16 << 10

// errBlobChanged is a file that no longer matched its digest while it was
// being sent: the response is cut off rather than finished with wrong bytes.
var errBlobChanged = errors.New("the file changed while it was being sent")

// blobSource is one file to be sent where its placeholder is written.
type blobSource struct {
	f    *os.File
	size int64
	sha  string // hex; empty when the fetch reported none
}

// blobStreams are the placeholders of one HTTP request.
type blobStreams struct {
	mu      sync.Mutex
	pending map[string]*blobSource
}

type blobKey struct{}

func blobStreamsFrom(ctx context.Context) *blobStreams {
	bs, _ := ctx.Value(blobKey{}).(*blobStreams)
	return bs
}

// add takes over src.f (closed once sent or when the request ends) and
// returns the placeholder to put where the base64 goes.
func (bs *blobStreams) add(src *blobSource) string {
	var b [16]byte
	rand.Read(b[:])
	ph := blobPrefix + hex.EncodeToString(b[:])
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.pending == nil {
		bs.pending = map[string]*blobSource{}
	}
	bs.pending[ph] = src
	return ph
}

// take finds the earliest placeholder in p and removes it from the pending
// ones: each is sent once.
func (bs *blobStreams) take(p []byte) (at int, ph string, src *blobSource) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	at = -1
	for k, s := range bs.pending {
		if i := bytes.Index(p, []byte(k)); i >= 0 && (at < 0 || i < at) {
			at, ph, src = i, k, s
		}
	}
	if src != nil {
		delete(bs.pending, ph)
	}
	return at, ph, src
}

// partial is the length of the longest end of p that could begin a
// pending placeholder, to be held back until the next write.
func (bs *blobStreams) partial(p []byte) int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	longest := 0
	for k := range bs.pending {
		for n := min(len(k)-1, len(p)); n > longest; n-- {
			if bytes.HasPrefix([]byte(k), p[len(p)-n:]) {
				longest = n
				break
			}
		}
	}
	return longest
}

func (bs *blobStreams) empty() bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.pending) == 0
}

// closeAll closes the files never sent (the response failed before them).
func (bs *blobStreams) closeAll() {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for k, s := range bs.pending {
		s.f.Close()
		delete(bs.pending, k)
	}
}

// blobWriter is the response writer of one HTTP request that may carry
// placeholders.
type blobWriter struct {
	http.ResponseWriter
	bs     *blobStreams
	mu     sync.Mutex // mcp-go writes notifications from another goroutine
	held   []byte     // the end of the last write, which may begin a placeholder
	broken error
}

func (w *blobWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return 0, w.broken
	}
	if len(w.held) == 0 && w.bs.empty() {
		return w.ResponseWriter.Write(p)
	}
	data := p
	if len(w.held) > 0 {
		data = append(w.held, p...)
		w.held = nil
	}
	for {
		at, ph, src := w.bs.take(data)
		if src == nil {
			break
		}
		if _, err := w.ResponseWriter.Write(data[:at]); err != nil {
			src.f.Close()
			return 0, err
		}
		if err := sendBase64(w.ResponseWriter, src); err != nil {
			w.broken = err
			return 0, err
		}
		data = data[at+len(ph):]
	}
	keep := w.bs.partial(data)
	w.held = append([]byte(nil), data[len(data)-keep:]...)
	if _, err := w.ResponseWriter.Write(data[:len(data)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush is what tells mcp-go the response can stream (SSE); a held end
// stays held, as it is at most part of a placeholder.
func (w *blobWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *blobWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes what was held back and closes unsent files. A response cut
// off in the middle of a file ends the connection, so the client sees a
// failed read, never a short or altered file.
func (w *blobWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bs.closeAll()
	if w.broken != nil {
		panic(http.ErrAbortHandler)
	}
	if len(w.held) > 0 {
		w.ResponseWriter.Write(w.held)
		w.held = nil
	}
}

// sendBase64 writes src's file to w in base64, checking that it is still
// the file that was fetched: the size and digest it had when readLink
// checked it.
func sendBase64(w io.Writer, src *blobSource) error {
	defer src.f.Close()
	in := make([]byte, blobChunk)
	out := make([]byte, base64.StdEncoding.EncodedLen(blobChunk))
	h := sha256.New()
	var total int64
	for {
		n, err := io.ReadFull(src.f, in)
		if n > 0 {
			total += int64(n)
			if total > src.size {
				return errBlobChanged
			}
			h.Write(in[:n])
			base64.StdEncoding.Encode(out, in[:n])
			if _, werr := w.Write(out[:base64.StdEncoding.EncodedLen(n)]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the file: %w", err)
		}
	}
	if total != src.size || (src.sha != "" && hex.EncodeToString(h.Sum(nil)) != src.sha) {
		return errBlobChanged
	}
	return nil
}

// encodeFile is the base64 of f's size bytes and their digest, for a
// resources/read outside Streamable HTTP: encoded from the file straight
// into a builder of the final size, so the file is never held a second time.
func encodeFile(f *os.File, size int64) (string, string, error) {
	var b strings.Builder
	b.Grow(base64.StdEncoding.EncodedLen(int(size)))
	in := make([]byte, blobChunk)
	out := make([]byte, base64.StdEncoding.EncodedLen(blobChunk))
	h := sha256.New()
	var total int64
	for {
		n, err := io.ReadFull(f, in)
		if n > 0 {
			if total += int64(n); total > size {
				return "", "", fmt.Errorf("file grew past %d bytes", size)
			}
			h.Write(in[:n])
			base64.StdEncoding.Encode(out, in[:n])
			b.Write(out[:base64.StdEncoding.EncodedLen(n)])
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return "", "", err
		}
	}
	if total != size {
		return "", "", fmt.Errorf("file shrank to %d of %d bytes", total, size)
	}
	return b.String(), hex.EncodeToString(h.Sum(nil)), nil
}

// fileDigest is the hex SHA-256 of f from its start; f is left at its start.
func fileDigest(f *os.File) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
