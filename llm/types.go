package llm

import (
	"context"
	"encoding/json"
)

// Role is who authored a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries tool results back to the model. Adapters lower it to
	// whatever the vendor wants (a user turn, a tool message, ...).
	RoleTool Role = "tool"
)

// PartKind discriminates [Part].
type PartKind string

const (
	PartText       PartKind = "text"
	PartReasoning  PartKind = "reasoning"
	PartToolCall   PartKind = "tool_call"
	PartToolResult PartKind = "tool_result"
	PartMedia      PartKind = "media"
	// PartVendor is a block only its vendor understands (Anthropic's
	// server_tool_use and tool_search_tool_result), carried so it can be
	// sent back verbatim on the next turn: the vendor wants its
	// conversation intact. Like Signature it is only ever sent to the
	// provider that produced it: [Chain] strips it on a cross-provider
	// failover, other adapters skip it, and it is never shown as text.
	PartVendor PartKind = "vendor"
)

// Part is one piece of message content. Exactly the fields that belong to
// Kind are set; the constructors ([Text], [ToolCallPart], ...) are the
// intended way to build one.
type Part struct {
	Kind PartKind `json:"kind"`

	// Text holds the text of a text part or the visible thinking of a
	// reasoning part.
	Text string `json:"text,omitempty"`

	// Signature is the opaque token a vendor attaches to reasoning so it can
	// verify the thinking when it is replayed. It is only ever sent back to
	// the provider that produced it; [Chain] strips it on a cross-provider
	// failover and it must never be persisted or logged.
	Signature string `json:"signature,omitempty"`
	// Redacted marks reasoning the vendor encrypted; Signature then holds the
	// encrypted payload and Text is empty.
	Redacted bool `json:"redacted,omitempty"`

	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	Media      *Media      `json:"media,omitempty"`

	// Vendor names the wire format a vendor part belongs to ("anthropic")
	// and Raw is the block as that vendor sent it, one JSON object.
	Vendor string          `json:"vendor,omitempty"`
	Raw    json.RawMessage `json:"raw,omitempty"`
}

// ToolCall is the model asking for a tool to run.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is always a JSON object; an empty argument string from the wire is
	// normalised to {}.
	Args json.RawMessage `json:"args"`
	// Signature is an opaque vendor token bound to this call (Gemini's
	// thoughtSignature). Same rules as [Part.Signature].
	Signature string `json:"signature,omitempty"`
}

// ToolResult answers a [ToolCall]. Content may mix text and media parts;
// adapters whose vendor cannot carry images in a tool result move them to a
// following user turn.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content []Part `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Media is an image, document or other binary input. Exactly one of Data,
// Path and URL is set. Path exists so the agent loop can keep bytes out of
// its database: adapters read and base64-encode the file only while building
// the wire request.
type Media struct {
	MIME string `json:"mime"`
	// Data is the base64 (standard encoding) payload.
	Data string `json:"data,omitempty"`
	Path string `json:"path,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
}

// LoadTools is the meta-tool that offers the deferred tools of a
// request (Request.Deferred) on wires without native tool search: its
// description indexes them, one line each; a call names the ones wanted
// and their schemas arrive with the next turn.
const LoadTools = "load_tools"

// Tool describes a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object. Adapters reshape it for vendors
	// that only accept a subset.
	Parameters json.RawMessage `json:"parameters"`
}

// ToolChoiceMode says whether and how the model must use tools.
type ToolChoiceMode string

const (
	ToolChoiceAuto     ToolChoiceMode = "" // the vendor default
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceTool forces the tool named in [ToolChoice.Name].
	ToolChoiceTool ToolChoiceMode = "tool"
)

// ToolChoice constrains tool use.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// ResponseFormat asks for structured output. The zero value means text.
type ResponseFormat struct {
	// Schema, when set, asks for JSON matching it.
	Schema json.RawMessage `json:"schema,omitempty"`
	Name   string          `json:"name,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// DefaultMaxTokens is used when [Request.MaxTokens] is zero, because
// Anthropic refuses a request without a limit and an unbounded reply is
// never what a chat assistant wants anyway.
const DefaultMaxTokens = 4096

// Request is the normalised input to a model call.
type Request struct {
	// Model is the vendor's model id; [Chain] overwrites it per entry.
	Model string `json:"model"`
	// System is always a separate field; each adapter places it where its
	// vendor expects.
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// Deferred are tools the model may ask for by name, unchanged for
	// the whole run so the cached prefix holds. An adapter with native
	// tool search (Anthropic) sends them deferred together with the
	// Tools not among them, and leaves out the tool named LoadTools;
	// every other adapter ignores Deferred: the agent's LoadTools tool
	// brings the ones the model asks for into Tools, appended, from the
	// next turn on. Either way a call names a tool by its Name.
	Deferred []Tool `json:"deferred,omitempty"`

	ToolChoice     ToolChoice      `json:"tool_choice,omitzero"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	StopSequences  []string        `json:"stop_sequences,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`

	// ReasoningBudget, when positive, asks the model to think with about this
	// many tokens (Anthropic thinking, Gemini thinkingConfig). OpenAI-style
	// reasoning models decide for themselves and ignore it.
	ReasoningBudget int `json:"reasoning_budget,omitempty"`
}

// EffectiveMaxTokens is MaxTokens with the default applied.
func (r *Request) EffectiveMaxTokens() int {
	if r.MaxTokens > 0 {
		return r.MaxTokens
	}
	return DefaultMaxTokens
}

// StopReason is why the model stopped.
type StopReason string

const (
	StopEnd           StopReason = "stop"
	StopLength        StopReason = "length"
	StopToolUse       StopReason = "tool_use"
	StopContentFilter StopReason = "content_filter"
	StopError         StopReason = "error"
)

// Usage counts tokens for one call. InputTokens, CacheReadTokens and
// CacheWriteTokens are disjoint so each can be billed at its own rate;
// ReasoningTokens is a subset of OutputTokens kept for observability.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// CacheWriteLongTokens are the CacheWriteTokens written to a
	// provider's long-lived cache (Anthropic's one hour), billed at twice
	// the input price rather than the cache-write price.
	CacheWriteLongTokens int64 `json:"cache_write_long_tokens,omitempty"`
	ReasoningTokens      int64 `json:"reasoning_tokens,omitempty"`

	// CostMicrocents is in units of 1e-8 USD. It is only meaningful when
	// CostKnown is true: an unpriced model has an unknown cost, not a free one.
	CostMicrocents int64 `json:"cost_microcents,omitempty"`
	CostKnown      bool  `json:"cost_known"`
}

// Add accumulates u2 into u. The cost stays known only if both were known.
func (u *Usage) Add(u2 Usage) {
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CacheReadTokens += u2.CacheReadTokens
	u.CacheWriteTokens += u2.CacheWriteTokens
	u.CacheWriteLongTokens += u2.CacheWriteLongTokens
	u.ReasoningTokens += u2.ReasoningTokens
	u.CostMicrocents += u2.CostMicrocents
	u.CostKnown = u.CostKnown && u2.CostKnown
}

// Result is a complete model reply.
type Result struct {
	Parts      []Part     `json:"parts"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
	// Loaded names the deferred tools a provider's native tool search
	// gave the model during this call (Request.Deferred): the model may
	// call them from now on as if LoadTools had.
	Loaded []string `json:"loaded,omitempty"`
	// Raw holds the vendor payloads for debugging only. It may contain media
	// bytes and vendor shapes: never log, persist or forward it.
	Raw json.RawMessage `json:"-"`
}

// Text concatenates the text parts of the result.
func (r *Result) Text() string {
	var n int
	for _, p := range r.Parts {
		if p.Kind == PartText {
			n += len(p.Text)
		}
	}
	b := make([]byte, 0, n)
	for _, p := range r.Parts {
		if p.Kind == PartText {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// ToolCalls returns the tool calls of the result in order.
func (r *Result) ToolCalls() []ToolCall {
	var out []ToolCall
	for _, p := range r.Parts {
		if p.Kind == PartToolCall && p.ToolCall != nil {
			out = append(out, *p.ToolCall)
		}
	}
	return out
}

// Message turns the result into the assistant message to append to the
// conversation history.
func (r *Result) Message() Message {
	return Message{Role: RoleAssistant, Parts: r.Parts}
}

// Capabilities advertises what an adapter can carry. The agent loop checks
// these before sending, rather than discovering a silent flattening.
type Capabilities struct {
	Tools     bool `json:"tools"`
	Streaming bool `json:"streaming"`
	Vision    bool `json:"vision"`
	Reasoning bool `json:"reasoning"`
	Documents bool `json:"documents"`
	Audio     bool `json:"audio"`
	Video     bool `json:"video"`
	// ToolSearch says the model searches Request.Deferred natively (the
	// adapter sends them deferred with the vendor's search tool, and
	// leaves LoadTools out); without it the LoadTools meta-tool offers
	// them. See [CapabilitiesOf].
	ToolSearch bool `json:"tool_search,omitempty"`
}

// Provider is one model backend: an adapter, or a [Chain] of them.
type Provider interface {
	// Name identifies the configured provider ("anthropic", "deepseek", ...)
	// in errors, logs and attempts.
	Name() string
	Capabilities() Capabilities
	// Generate returns the complete reply. Errors are always *Error.
	Generate(ctx context.Context, req *Request) (*Result, error)
	// Stream starts a reply and returns once the vendor accepted the request,
	// so status errors (auth, rate limit) surface here rather than from the
	// first Next. The caller must Close the stream.
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Stream is a pull iterator over normalised chunks. It is not safe for
// concurrent use.
type Stream interface {
	// Next returns the next chunk. After the stop chunk it returns io.EOF;
	// any other error is an *Error and ends the stream.
	Next() (Chunk, error)
	// Close releases the connection. It is safe to call more than once.
	Close() error
}
