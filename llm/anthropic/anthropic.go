// Package anthropic adapts the Anthropic Messages API to the llm seam. It
// speaks HTTP directly so that no SDK retries behind the fallback chain.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/sse"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// DefaultBaseURL is the public API.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is sent as anthropic-version; the event and block shapes below
// are the ones this version defines.
const APIVersion = "2023-06-01"

// Option configures a Provider; the options are llm/providers' With*.
type Option = wire.Option

// adapter names the embedded wire.Adapter so that the field stays
// unexported while its llm.Provider methods are promoted.
type adapter = wire.Adapter

// Provider is the Anthropic adapter.
type Provider struct{ adapter }

var _ llm.Provider = (*Provider)(nil)

// New returns an adapter. It does no I/O; a bad key surfaces on first use.
// An empty baseURL means the public API; a nil hc means http.DefaultClient.
func New(apiKey, baseURL string, hc *http.Client, opts ...Option) *Provider {
	p := &Provider{}
	p.adapter = wire.NewAdapter("anthropic", apiKey, baseURL, DefaultBaseURL, hc, parseError, p.open, opts)
	return p
}

func (p *Provider) open(ctx context.Context, req *llm.Request, keepRaw bool) (llm.Stream, error) {
	files := p.Client.RemoteFiles(ctx, p, req)
	body, err := p.build(req, files)
	if err != nil {
		return nil, err
	}
	h := p.header()
	if len(files) > 0 {
		h.Set("anthropic-beta", FilesBeta)
	}
	s, err := p.Client.Stream(ctx, wire.Call{
		URL:     wire.JoinURL(p.BaseURL, "/v1/messages"),
		Header:  h,
		Body:    body,
		Model:   req.Model,
		Decoder: &decoder{},
		KeepRaw: keepRaw,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// parseError reads {"type":"error","error":{"type":...,"message":...}}.
func parseError(status int, h http.Header, body []byte) *llm.Error {
	var env struct {
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		return wire.StatusError(status, h, "", wire.ErrorText(body))
	}
	e := env.Error.toError(status)
	e.RetryAfter = llm.ParseRetryAfter(h)
	return e
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// toError classifies by the error type first: it is the same whether it
// arrives as an HTTP status or, with status 200, as an `event: error`.
func (a *apiError) toError(status int) *llm.Error {
	kind := llm.KindForStatus(status)
	switch a.Type {
	case "rate_limit_error":
		kind = llm.KindRateLimit
	case "overloaded_error":
		kind = llm.KindOverloaded
	case "api_error":
		kind = llm.KindTransport
	case "timeout_error":
		kind = llm.KindTimeout
	case "authentication_error", "permission_error":
		kind = llm.KindAuth
	case "invalid_request_error", "not_found_error", "request_too_large":
		kind = llm.KindBadRequest
	}
	return &llm.Error{Kind: kind, Retryable: kind.Retryable(), Status: status, Code: a.Type, Message: a.Message}
}

// decoder folds Messages API stream events.
type decoder struct {
	blocks  map[int]openBlock // open content blocks by index
	usage   llm.Usage
	stop    llm.StopReason
	stopped bool
}

type openBlock struct {
	kind string // text | thinking | redacted_thinking | tool_use | server_tool_use | *_tool_result
	id   string
	sig  string
	// raw is a vendor block's start, and input a server_tool_use's
	// arguments as they stream in.
	raw   json.RawMessage
	input []byte
}

// maxServerInput bounds a server tool call's streamed arguments; a tool
// search query is at most 500 characters.
const maxServerInput = 64 << 10

type event struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Message      *messageStart   `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        *usage          `json:"usage"`
	Error        *apiError       `json:"error"`
}

type messageStart struct {
	Usage usage `json:"usage"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	Input     json.RawMessage `json:"input"`
}

type delta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheCreation            *struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

func (d *decoder) Event(ev sse.Event, out []llm.Chunk) ([]llm.Chunk, error) {
	switch ev.Type {
	case "ping":
		return out, nil
	}
	var e event
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return out, llm.Errorf("", llm.KindUnknown, err, "malformed %q event: %s", ev.Type, wire.Snippet(ev.Data))
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			d.setUsage(e.Message.Usage)
		}
	case "content_block_start":
		var cb contentBlock
		if len(e.ContentBlock) == 0 || json.Unmarshal(e.ContentBlock, &cb) != nil {
			return out, llm.NewError("", llm.KindUnknown, "content_block_start without a block: "+wire.Snippet(ev.Data))
		}
		out = d.startBlock(e.Index, cb, e.ContentBlock, out)
	case "content_block_delta":
		var dl delta
		if err := json.Unmarshal(e.Delta, &dl); err != nil {
			return out, llm.Errorf("", llm.KindUnknown, err, "malformed delta: %s", wire.Snippet(e.Delta))
		}
		return d.blockDelta(e.Index, dl, out)
	case "content_block_stop":
		return d.stopBlock(e.Index, out)
	case "message_delta":
		var dl delta
		if len(e.Delta) > 0 {
			if err := json.Unmarshal(e.Delta, &dl); err != nil {
				return out, llm.Errorf("", llm.KindUnknown, err, "malformed message_delta: %s", wire.Snippet(e.Delta))
			}
		}
		if dl.StopReason != "" {
			d.stop = stopReason(dl.StopReason)
		}
		if e.Usage != nil {
			// message_delta usage is cumulative; later fields win when present.
			d.setUsage(*e.Usage)
		}
	case "message_stop":
		out = d.messageStop(out)
	case "error":
		// Arrives with HTTP 200 once the stream is open, e.g. overloaded.
		if e.Error == nil {
			return out, llm.NewError("", llm.KindUnknown, "error event without detail")
		}
		return out, e.Error.toError(0)
	}
	return out, nil
}

// The block methods below are the one mapping of content blocks to
// chunks: the stream calls them per event, and a complete message (a
// batch result) replays its blocks through them.

// startBlock opens block index; raw is the block as sent.
func (d *decoder) startBlock(index int, cb contentBlock, raw json.RawMessage, out []llm.Chunk) []llm.Chunk {
	if d.blocks == nil {
		d.blocks = map[int]openBlock{}
	}
	b := openBlock{kind: cb.Type, id: cb.ID}
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkText, Text: cb.Text})
		}
	case "thinking":
		b.id = "thinking_" + strconv.Itoa(index)
		b.sig = cb.Signature
		out = append(out, llm.Chunk{Kind: llm.ChunkReasoningStart, ID: b.id})
		if cb.Thinking != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkReasoningDelta, ID: b.id, Text: cb.Thinking})
		}
	case "redacted_thinking":
		b.id = "thinking_" + strconv.Itoa(index)
		b.sig = cb.Data
		out = append(out, llm.Chunk{Kind: llm.ChunkReasoningStart, ID: b.id})
	case "tool_use":
		out = append(out, llm.Chunk{Kind: llm.ChunkToolCallStart, ID: cb.ID, Name: cb.Name})
		// The start block carries an empty input object; the real
		// arguments follow as input_json_delta.
	case "server_tool_use":
		// The tool search's call: its arguments stream in like a
		// tool_use's, and the whole block goes back next turn.
		b.raw = raw
	default:
		if strings.HasSuffix(cb.Type, "_tool_result") {
			// A server tool's result arrives whole in its start.
			b.raw = raw
		}
		// Other block types are not part of the seam.
	}
	d.blocks[index] = b
	return out
}

// blockDelta adds to open block index.
func (d *decoder) blockDelta(index int, dl delta, out []llm.Chunk) ([]llm.Chunk, error) {
	b, ok := d.blocks[index]
	if !ok {
		return out, llm.NewError("", llm.KindUnknown, fmt.Sprintf("delta for unknown block %d", index))
	}
	switch dl.Type {
	case "text_delta":
		if b.kind == "text" && dl.Text != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkText, Text: dl.Text})
		}
	case "thinking_delta":
		if dl.Thinking != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkReasoningDelta, ID: b.id, Text: dl.Thinking})
		}
	case "signature_delta":
		b.sig += dl.Signature
		d.blocks[index] = b
	case "input_json_delta":
		if b.kind == "server_tool_use" {
			if len(b.input)+len(dl.PartialJSON) > maxServerInput {
				return out, llm.NewError("", llm.KindUnknown, fmt.Sprintf("server tool call %s: arguments over %d bytes", b.id, maxServerInput))
			}
			b.input = append(b.input, dl.PartialJSON...)
			d.blocks[index] = b
			return out, nil
		}
		if dl.PartialJSON != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkToolCallDelta, ID: b.id, Text: dl.PartialJSON})
		}
	}
	return out, nil
}

// stopBlock closes block index.
func (d *decoder) stopBlock(index int, out []llm.Chunk) ([]llm.Chunk, error) {
	b, ok := d.blocks[index]
	if !ok {
		return out, nil
	}
	delete(d.blocks, index)
	switch {
	case b.kind == "server_tool_use":
		raw, err := withInput(b.raw, b.input)
		if err != nil {
			return out, llm.Errorf("", llm.KindUnknown, err, "server tool call %s: %v", b.id, err)
		}
		return append(out, llm.Chunk{Kind: llm.ChunkVendor, Name: vendor, Raw: raw}), nil
	case b.raw != nil:
		var loaded []string
		if b.kind == "tool_search_tool_result" {
			loaded = foundTools(b.raw)
		}
		return append(out, llm.Chunk{Kind: llm.ChunkVendor, Name: vendor, Raw: b.raw, Loaded: loaded}), nil
	}
	switch b.kind {
	case "thinking":
		out = append(out, llm.Chunk{Kind: llm.ChunkReasoningEnd, ID: b.id, Signature: b.sig})
	case "redacted_thinking":
		out = append(out, llm.Chunk{Kind: llm.ChunkReasoningEnd, ID: b.id, Signature: b.sig, Redacted: true})
	case "tool_use":
		out = append(out, llm.Chunk{Kind: llm.ChunkToolCallEnd, ID: b.id})
	}
	return out, nil
}

// withInput is a server_tool_use block as the API wants it back: the
// start block with the streamed arguments as its input ({} when none
// streamed). Every other field stays as sent.
func withInput(start json.RawMessage, input []byte) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(start, &fields); err != nil {
		return nil, err
	}
	in := bytes.TrimSpace(input)
	if len(in) == 0 {
		in = []byte("{}")
	}
	if !json.Valid(in) {
		return nil, errors.New("arguments are not valid JSON")
	}
	fields["input"] = in
	return json.Marshal(fields)
}

// messageStop emits the stop chunk with the usage gathered so far.
func (d *decoder) messageStop(out []llm.Chunk) []llm.Chunk {
	d.stopped = true
	u := d.usage
	stop := d.stop
	if stop == "" {
		stop = llm.StopEnd
	}
	return append(out, llm.Chunk{Kind: llm.ChunkStop, StopReason: stop, Usage: &u})
}

func (d *decoder) setUsage(u usage) {
	if u.InputTokens > 0 {
		d.usage.InputTokens = u.InputTokens // already net of cache
	}
	if u.OutputTokens > 0 {
		d.usage.OutputTokens = u.OutputTokens
	}
	if u.CacheReadInputTokens > 0 {
		d.usage.CacheReadTokens = u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens > 0 {
		d.usage.CacheWriteTokens = u.CacheCreationInputTokens
	}
	if u.CacheCreation != nil && u.CacheCreation.Ephemeral1h > 0 {
		d.usage.CacheWriteLongTokens = u.CacheCreation.Ephemeral1h
	}
}

func (d *decoder) End(out []llm.Chunk) ([]llm.Chunk, error) {
	return out, llm.NewError("", llm.KindTransport, "stream ended before message_stop")
}

func stopReason(s string) llm.StopReason {
	switch s {
	case "end_turn", "stop_sequence", "pause_turn":
		return llm.StopEnd
	case "max_tokens", "model_context_window_exceeded":
		return llm.StopLength
	case "tool_use":
		return llm.StopToolUse
	case "refusal":
		return llm.StopContentFilter
	}
	return llm.StopEnd
}
