package openai

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/sse"
	"github.com/botd-dev/botd/llm/internal/wire"
)

const reasoningID = "reasoning_0"

// decoder folds chat.completion.chunk events.
type decoder struct {
	calls     []call // tool calls in index order of first appearance
	reasoning int    // 0 none yet, 1 open, 2 closed
	finish    string
	usage     *llm.Usage
}

type call struct {
	index int
	id    string
}

type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type choice struct {
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
	Refusal          *string         `json:"refusal"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// DeepSeek's names for the cached split.
	PromptCacheHitTokens int64 `json:"prompt_cache_hit_tokens"`
}

var done = []byte("[DONE]")

func (d *decoder) Event(ev sse.Event, out []llm.Chunk) ([]llm.Chunk, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return out, nil
	}
	if bytes.Equal(data, done) {
		return d.stop(out)
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return out, llm.Errorf("", llm.KindUnknown, err, "malformed stream chunk: %s", wire.Snippet(data))
	}
	return d.add(c, out)
}

// add folds one parsed chunk. A complete chat.completion (a batch result)
// is folded as a single chunk carrying the whole message, its finish
// reason and usage, so both paths share this mapping.
func (d *decoder) add(c chunk, out []llm.Chunk) ([]llm.Chunk, error) {
	if a, ok := decodeError(c.Error); ok {
		return out, a.toError(0)
	}
	if c.Usage != nil {
		u := c.Usage.normalise()
		d.usage = &u
	}
	for _, ch := range c.Choices {
		dl := ch.Delta
		r := dl.ReasoningContent
		if r == nil {
			r = dl.Reasoning
		}
		if r != nil && *r != "" {
			if d.reasoning == 0 {
				d.reasoning = 1
				out = append(out, llm.Chunk{Kind: llm.ChunkReasoningStart, ID: reasoningID})
			}
			if d.reasoning == 1 {
				out = append(out, llm.Chunk{Kind: llm.ChunkReasoningDelta, ID: reasoningID, Text: *r})
			}
		}
		if dl.Content != nil && *dl.Content != "" {
			out = d.endReasoning(out)
			out = append(out, llm.Chunk{Kind: llm.ChunkText, Text: *dl.Content})
		}
		if dl.Refusal != nil && *dl.Refusal != "" {
			out = d.endReasoning(out)
			out = append(out, llm.Chunk{Kind: llm.ChunkText, Text: *dl.Refusal})
		}
		for _, tc := range dl.ToolCalls {
			out = d.endReasoning(out)
			idx := len(d.calls)
			if tc.Index != nil {
				idx = *tc.Index
			}
			i := slices.IndexFunc(d.calls, func(c call) bool { return c.index == idx })
			if i < 0 {
				id := tc.ID
				if id == "" {
					id = "call_" + strconv.Itoa(idx)
				}
				d.calls = append(d.calls, call{index: idx, id: id})
				i = len(d.calls) - 1
				out = append(out, llm.Chunk{Kind: llm.ChunkToolCallStart, ID: id, Name: tc.Function.Name})
			}
			if tc.Function.Arguments != "" {
				out = append(out, llm.Chunk{Kind: llm.ChunkToolCallDelta, ID: d.calls[i].id, Text: tc.Function.Arguments})
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			d.finish = *ch.FinishReason
		}
	}
	return out, nil
}

func (d *decoder) endReasoning(out []llm.Chunk) []llm.Chunk {
	if d.reasoning == 1 {
		d.reasoning = 2
		out = append(out, llm.Chunk{Kind: llm.ChunkReasoningEnd, ID: reasoningID})
	}
	return out
}

// stop closes whatever is open and emits the stop chunk. Usage arrives in
// its own chunk after the finish reason (stream_options.include_usage), so
// the stop waits for [DONE] or EOF.
func (d *decoder) stop(out []llm.Chunk) ([]llm.Chunk, error) {
	if d.finish == "" {
		return out, llm.NewError("", llm.KindTransport, "stream ended without a finish reason")
	}
	out = d.endReasoning(out)
	for _, c := range d.calls {
		out = append(out, llm.Chunk{Kind: llm.ChunkToolCallEnd, ID: c.id})
	}
	u := llm.Usage{}
	if d.usage != nil {
		u = *d.usage
	}
	return append(out, llm.Chunk{Kind: llm.ChunkStop, StopReason: stopReason(d.finish, len(d.calls) > 0), Usage: &u}), nil
}

// End handles servers that close the stream without [DONE].
func (d *decoder) End(out []llm.Chunk) ([]llm.Chunk, error) { return d.stop(out) }

// normalise makes prompt tokens net of cache: OpenAI and DeepSeek count
// cached tokens inside prompt_tokens, and we bill each token once.
func (u *usage) normalise() llm.Usage {
	cached := u.PromptCacheHitTokens
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > cached {
		cached = u.PromptTokensDetails.CachedTokens
	}
	out := llm.Usage{
		InputTokens:     max(u.PromptTokens-cached, 0),
		OutputTokens:    u.CompletionTokens,
		CacheReadTokens: cached,
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

func stopReason(s string, hasCalls bool) llm.StopReason {
	switch s {
	case "stop":
		// Some compatible servers say "stop" after emitting tool calls.
		if hasCalls {
			return llm.StopToolUse
		}
		return llm.StopEnd
	case "length":
		return llm.StopLength
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "content_filter":
		return llm.StopContentFilter
	}
	return llm.StopError
}
