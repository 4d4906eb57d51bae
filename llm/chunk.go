package llm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ChunkKind discriminates [Chunk].
type ChunkKind uint8

const (
	ChunkText ChunkKind = iota + 1
	ChunkReasoningStart
	ChunkReasoningDelta
	ChunkReasoningEnd
	ChunkToolCallStart
	ChunkToolCallDelta
	ChunkToolCallEnd
	// ChunkStop is the last chunk of a successful stream and carries the stop
	// reason and the final usage.
	ChunkStop
	// ChunkVendor carries one complete vendor block (see [PartVendor]).
	ChunkVendor
)

var chunkKindNames = [...]string{
	ChunkText:           "text_delta",
	ChunkReasoningStart: "reasoning_start",
	ChunkReasoningDelta: "reasoning_delta",
	ChunkReasoningEnd:   "reasoning_end",
	ChunkToolCallStart:  "tool_call_start",
	ChunkToolCallDelta:  "tool_call_delta",
	ChunkToolCallEnd:    "tool_call_end",
	ChunkStop:           "stop",
	ChunkVendor:         "vendor",
}

func (k ChunkKind) String() string {
	if int(k) < len(chunkKindNames) && chunkKindNames[k] != "" {
		return chunkKindNames[k]
	}
	return fmt.Sprintf("ChunkKind(%d)", k)
}

// MarshalText keeps golden files and logs readable.
func (k ChunkKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (k *ChunkKind) UnmarshalText(b []byte) error {
	for i, n := range chunkKindNames {
		if n != "" && n == string(b) {
			*k = ChunkKind(i)
			return nil
		}
	}
	return fmt.Errorf("llm: unknown chunk kind %q", b)
}

// Chunk is one normalised stream event. Errors are not chunks: they end the
// stream as the error of [Stream.Next], always an *Error, so a consumer has
// one place to handle them.
//
// Fields by kind:
//   - text_delta: Text
//   - reasoning_start: ID; reasoning_delta: ID, Text;
//     reasoning_end: ID, Signature, Redacted
//   - tool_call_start: ID, Name, Signature; tool_call_delta: ID, Text (a
//     fragment of the JSON arguments, to be concatenated); tool_call_end: ID
//   - vendor: Name (the vendor, as in Part.Vendor), Raw (the block),
//     Loaded (the deferred tools the block made callable, see
//     Result.Loaded)
//   - stop: StopReason, Usage
type Chunk struct {
	Kind       ChunkKind  `json:"kind"`
	ID         string     `json:"id,omitempty"`
	Name       string     `json:"name,omitempty"`
	Text       string     `json:"text,omitempty"`
	Signature  string     `json:"signature,omitempty"`
	Redacted   bool       `json:"redacted,omitempty"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`

	Raw    json.RawMessage `json:"raw,omitempty"`
	Loaded []string        `json:"loaded,omitempty"`
}

// IsContent reports whether forwarding c commits the caller to this reply:
// after such a chunk a [Chain] no longer fails over.
func (c Chunk) IsContent() bool { return c.Kind != ChunkStop }

func (c Chunk) String() string {
	var b strings.Builder
	b.WriteString(c.Kind.String())
	if c.ID != "" {
		fmt.Fprintf(&b, " id=%s", c.ID)
	}
	if c.Name != "" {
		fmt.Fprintf(&b, " name=%s", c.Name)
	}
	if c.Text != "" {
		fmt.Fprintf(&b, " text=%q", c.Text)
	}
	if c.StopReason != "" {
		fmt.Fprintf(&b, " stop=%s", c.StopReason)
	}
	return b.String()
}
