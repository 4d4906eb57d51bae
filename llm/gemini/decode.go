package gemini

import (
	"encoding/json"
	"strconv"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/sse"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// synthPrefix marks tool-call ids we made up because Gemini sent none.
// They are not echoed back to Gemini, which would not recognise them.
const synthPrefix = "gemini_call_"

type response struct {
	Candidates     []candidate `json:"candidates"`
	UsageMetadata  *usageMeta  `json:"usageMetadata"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	Error      *apiError `json:"error"`
	ResponseID string    `json:"responseId"`
}

type candidate struct {
	Content      *content `json:"content"`
	FinishReason string   `json:"finishReason"`
}

type usageMeta struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

type decoder struct {
	finish    string
	blocked   bool
	usage     llm.Usage
	calls     int
	reasoning string // id of the open reasoning part
	sig       string // signature seen on the open reasoning part
	nextID    int
	respID    string
}

func (d *decoder) id(prefix string) string {
	d.nextID++
	return prefix + strconv.Itoa(d.nextID-1)
}

func (d *decoder) Event(ev sse.Event, out []llm.Chunk) ([]llm.Chunk, error) {
	if len(ev.Data) == 0 {
		return out, nil
	}
	var r response
	if err := json.Unmarshal(ev.Data, &r); err != nil {
		return out, llm.Errorf("", llm.KindUnknown, err, "malformed stream chunk: %s", wire.Snippet(ev.Data))
	}
	if r.Error != nil {
		return out, r.Error.toError(0)
	}
	if r.ResponseID != "" && d.respID == "" {
		d.respID = r.ResponseID
	}
	if r.UsageMetadata != nil {
		// Cumulative: each chunk restates the totals so far, so the last one
		// wins rather than being summed.
		u := r.UsageMetadata
		cached := min(u.CachedContentTokenCount, u.PromptTokenCount)
		d.usage = llm.Usage{
			InputTokens:     u.PromptTokenCount - cached + u.ToolUsePromptTokenCount,
			CacheReadTokens: cached,
			// Thinking is billed as output but reported apart from it.
			OutputTokens:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
			ReasoningTokens: u.ThoughtsTokenCount,
		}
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		d.blocked = true
	}
	if len(r.Candidates) == 0 {
		return out, nil
	}
	c := r.Candidates[0]
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			out = d.part(p, out)
		}
	}
	if c.FinishReason != "" {
		d.finish = c.FinishReason
	}
	return out, nil
}

func (d *decoder) part(p part, out []llm.Chunk) []llm.Chunk {
	switch {
	case p.FunctionCall != nil:
		out = d.endReasoning(out)
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			// The response id keeps synthesised ids unique across turns.
			id = synthPrefix
			if d.respID != "" {
				id += d.respID + "_"
			}
			id += strconv.Itoa(d.calls)
		}
		d.calls++
		out = append(out, llm.Chunk{Kind: llm.ChunkToolCallStart, ID: id, Name: fc.Name, Signature: p.ThoughtSignature})
		if len(fc.Args) > 0 && string(fc.Args) != "null" {
			out = append(out, llm.Chunk{Kind: llm.ChunkToolCallDelta, ID: id, Text: string(fc.Args)})
		}
		out = append(out, llm.Chunk{Kind: llm.ChunkToolCallEnd, ID: id})
	case p.Thought:
		if d.reasoning == "" {
			d.reasoning = d.id("reasoning_")
			out = append(out, llm.Chunk{Kind: llm.ChunkReasoningStart, ID: d.reasoning})
		}
		if p.Text != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkReasoningDelta, ID: d.reasoning, Text: p.Text})
		}
		if p.ThoughtSignature != "" {
			d.sig = p.ThoughtSignature
		}
	default:
		out = d.endReasoning(out)
		if p.ThoughtSignature != "" {
			// A signature on an ordinary text part has no seam slot of its
			// own; it travels as an empty reasoning part and is re-attached
			// to the following part on replay.
			id := d.id("signature_")
			out = append(out,
				llm.Chunk{Kind: llm.ChunkReasoningStart, ID: id},
				llm.Chunk{Kind: llm.ChunkReasoningEnd, ID: id, Signature: p.ThoughtSignature})
		}
		if p.Text != "" {
			out = append(out, llm.Chunk{Kind: llm.ChunkText, Text: p.Text})
		}
	}
	return out
}

func (d *decoder) endReasoning(out []llm.Chunk) []llm.Chunk {
	if d.reasoning != "" {
		out = append(out, llm.Chunk{Kind: llm.ChunkReasoningEnd, ID: d.reasoning, Signature: d.sig})
		d.reasoning, d.sig = "", ""
	}
	return out
}

// End emits the stop chunk: Gemini has no end-of-stream event, the last
// chunk simply carries the finish reason.
func (d *decoder) End(out []llm.Chunk) ([]llm.Chunk, error) {
	out = d.endReasoning(out)
	stop := llm.StopReason("")
	switch {
	case d.blocked:
		stop = llm.StopContentFilter
	case d.finish == "":
		return out, llm.NewError("", llm.KindTransport, "stream ended without a finish reason")
	default:
		stop = stopReason(d.finish, d.calls > 0)
	}
	u := d.usage
	return append(out, llm.Chunk{Kind: llm.ChunkStop, StopReason: stop, Usage: &u}), nil
}

func stopReason(s string, hasCalls bool) llm.StopReason {
	switch s {
	case "STOP":
		// Gemini reports STOP even when the turn ends in function calls.
		if hasCalls {
			return llm.StopToolUse
		}
		return llm.StopEnd
	case "MAX_TOKENS":
		return llm.StopLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return llm.StopContentFilter
	}
	// MALFORMED_FUNCTION_CALL, OTHER, FINISH_REASON_UNSPECIFIED.
	return llm.StopError
}
