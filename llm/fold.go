package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
)

// Folder accumulates chunks into a [Result]. The agent loop can feed it the
// chunks it is also relaying to the user, so streaming and non-streaming
// calls end in the same Result.
//
// Deltas are buffered as bytes and turned into strings once per part, and
// tool-call arguments are parsed once at the end, because vendors split
// them at arbitrary byte boundaries.
type Folder struct {
	parts []Part
	open  []openPart // parts still receiving deltas, usually zero or one
	text  []byte     // the trailing text part, while it is still growing
	// textIdx is the index in parts of the growing text part, or -1.
	textIdx int
	stopped bool
	stop    StopReason
	usage   Usage
	loaded  []string
	err     error
}

type openPart struct {
	idx int
	id  string
	buf []byte
}

// NewFolder returns an empty folder.
func NewFolder() *Folder { return &Folder{textIdx: -1} }

// Reset empties f for reuse, keeping its buffers.
func (f *Folder) Reset() {
	clear(f.parts)
	f.parts = f.parts[:0]
	f.open = f.open[:0]
	f.text = f.text[:0]
	f.textIdx = -1
	f.stopped, f.stop, f.usage, f.err = false, "", Usage{}, nil
	f.loaded = nil
}

func (f *Folder) flushText() {
	if f.textIdx >= 0 {
		f.parts[f.textIdx].Text = string(f.text)
		f.text = f.text[:0]
		f.textIdx = -1
	}
}

func (f *Folder) find(id string) int {
	for i := range f.open {
		if f.open[i].id == id {
			return i
		}
	}
	return -1
}

func (f *Folder) fail(msg string) error {
	f.err = NewError("", KindUnknown, "stream fold: "+msg)
	return f.err
}

// Add folds one chunk. An error means the chunk sequence was malformed; the
// folder is then unusable.
func (f *Folder) Add(c Chunk) error {
	if f.err != nil {
		return f.err
	}
	if f.stopped {
		return f.fail("chunk after stop")
	}
	switch c.Kind {
	case ChunkText:
		if f.textIdx < 0 {
			f.parts = append(f.parts, Part{Kind: PartText})
			f.textIdx = len(f.parts) - 1
		}
		f.text = append(f.text, c.Text...)
	case ChunkReasoningStart, ChunkToolCallStart:
		f.flushText()
		if f.find(c.ID) >= 0 {
			return f.fail("duplicate id " + c.ID)
		}
		p := Part{Kind: PartReasoning}
		if c.Kind == ChunkToolCallStart {
			p = Part{Kind: PartToolCall, ToolCall: &ToolCall{ID: c.ID, Name: c.Name, Signature: c.Signature}}
		}
		f.parts = append(f.parts, p)
		f.open = append(f.open, openPart{idx: len(f.parts) - 1, id: c.ID})
	case ChunkReasoningDelta, ChunkToolCallDelta:
		i := f.find(c.ID)
		if i < 0 {
			return f.fail("delta for unknown id " + c.ID)
		}
		f.open[i].buf = append(f.open[i].buf, c.Text...)
	case ChunkReasoningEnd, ChunkToolCallEnd:
		i := f.find(c.ID)
		if i < 0 {
			return f.fail("end for unknown id " + c.ID)
		}
		if c.Kind == ChunkReasoningEnd {
			p := &f.parts[f.open[i].idx]
			p.Signature, p.Redacted = c.Signature, c.Redacted
		}
		if err := f.close(i); err != nil {
			return err
		}
	case ChunkVendor:
		if c.Name == "" || len(c.Raw) == 0 {
			return f.fail("vendor chunk without vendor or block")
		}
		f.flushText()
		f.parts = append(f.parts, VendorPart(c.Name, c.Raw))
		for _, n := range c.Loaded {
			if !slices.Contains(f.loaded, n) {
				f.loaded = append(f.loaded, n)
			}
		}
	case ChunkStop:
		f.flushText()
		for len(f.open) > 0 {
			if err := f.close(len(f.open) - 1); err != nil {
				return err
			}
		}
		f.stopped, f.stop = true, c.StopReason
		if c.Usage != nil {
			f.usage = *c.Usage
		}
	default:
		return f.fail("unknown chunk kind " + c.Kind.String())
	}
	return nil
}

// close finalises open part i and removes it from the open set.
func (f *Folder) close(i int) error {
	o := f.open[i]
	p := &f.parts[o.idx]
	switch p.Kind {
	case PartReasoning:
		p.Text = string(o.buf)
	case PartToolCall:
		args, err := toolArgs(o.buf)
		if err != nil {
			return f.fail("tool call " + p.ToolCall.Name + " (" + o.id + "): " + err.Error())
		}
		p.ToolCall.Args = args
	}
	f.open = append(f.open[:i], f.open[i+1:]...)
	return nil
}

var emptyArgs = json.RawMessage(`{}`)

func toolArgs(buf []byte) (json.RawMessage, error) {
	start, end := 0, len(buf)
	for start < end && isSpace(buf[start]) {
		start++
	}
	for end > start && isSpace(buf[end-1]) {
		end--
	}
	if start == end {
		return emptyArgs, nil
	}
	b := buf[start:end]
	if !json.Valid(b) {
		return nil, errors.New("arguments are not valid JSON")
	}
	return json.RawMessage(append([]byte(nil), b...)), nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Stopped reports whether the stop chunk has been folded.
func (f *Folder) Stopped() bool { return f.stopped }

// Result returns the folded result. It fails if no stop chunk arrived, since
// a reply cut short must not pass for a complete one.
func (f *Folder) Result() (*Result, error) {
	if f.err != nil {
		return nil, f.err
	}
	if !f.stopped {
		return nil, NewError("", KindTransport, "stream ended before the stop chunk")
	}
	parts := make([]Part, len(f.parts))
	copy(parts, f.parts)
	return &Result{Parts: parts, StopReason: f.stop, Usage: f.usage, Loaded: slices.Clone(f.loaded)}, nil
}

// Fold drains s into a Result and closes it. Cancelling ctx ends the fold
// with a cancelled error even if s itself ignores ctx.
func Fold(ctx context.Context, s Stream) (*Result, error) {
	defer s.Close()
	f := NewFolder()
	done := ctx.Done()
	for {
		select {
		case <-done:
			return nil, FromTransport("", ctx.Err())
		default:
		}
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, FromTransport("", ctx.Err())
			}
			return nil, err
		}
		if err := f.Add(c); err != nil {
			return nil, err
		}
	}
	res, err := f.Result()
	if err != nil {
		return nil, err
	}
	if r, ok := s.(interface{ Raw() json.RawMessage }); ok {
		res.Raw = r.Raw()
	}
	return res, nil
}
