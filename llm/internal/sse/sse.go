// Package sse reads Server-Sent Events as all three vendors send them. It
// is the one SSE parser the adapters share.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Event is one dispatched event. Data is only valid until the next call to
// [Reader.Next]; copy it to keep it.
type Event struct {
	// Type is the "event:" field, empty for the default "message" type.
	Type string
	Data []byte
	ID   string
}

// MaxEventBytes caps one event so a broken upstream cannot make us buffer
// without bound.
const MaxEventBytes = 16 << 20

// ErrTooLarge is returned for an event over MaxEventBytes.
var ErrTooLarge = errors.New("sse: event too large")

// Reader parses an event stream.
type Reader struct {
	r    *bufio.Reader
	data []byte
	line []byte
	typ  []byte
	ev   Event
}

// NewReader returns a reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32<<10)}
}

// readLine returns the next line without its terminator. The slice aliases
// the reader's buffers.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line (a big base64 image echoed back, a huge tool argument):
		// fall back to accumulating.
		r.line = append(r.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(r.line) > MaxEventBytes {
				return nil, ErrTooLarge
			}
			line, err = r.r.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}

// Next returns the next event, or io.EOF when the stream ends. An event
// interrupted by EOF is still dispatched, since some servers omit the final
// blank line.
func (r *Reader) Next() (Event, error) {
	r.data = r.data[:0]
	r.typ = r.typ[:0]
	r.ev.ID = ""
	hasData := false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (hasData || len(r.typ) > 0) {
				return r.dispatch(), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData || len(r.typ) > 0 {
				return r.dispatch(), nil
			}
			continue
		}
		if line[0] == ':' {
			continue // comment / keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			hasData = true
			if len(r.data) > MaxEventBytes {
				return Event{}, ErrTooLarge
			}
		case "event":
			r.typ = append(r.typ[:0], value...)
		case "id":
			r.ev.ID = string(value)
		}
	}
}

func (r *Reader) dispatch() Event {
	ev := Event{Data: r.data, ID: r.ev.ID}
	if len(r.typ) > 0 {
		ev.Type = internType(r.typ)
	}
	return ev
}

// internType avoids an allocation per event for the handful of event names
// the vendors use.
func internType(b []byte) string {
	switch string(b) {
	case "message_start":
		return "message_start"
	case "content_block_start":
		return "content_block_start"
	case "content_block_delta":
		return "content_block_delta"
	case "content_block_stop":
		return "content_block_stop"
	case "message_delta":
		return "message_delta"
	case "message_stop":
		return "message_stop"
	case "ping":
		return "ping"
	case "error":
		return "error"
	case "message":
		return ""
	}
	return string(b)
}
