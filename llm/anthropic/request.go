package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

// wireRequest is the Messages API body.
type wireRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        []wireBlock     `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *wireToolChoice `json:"tool_choice,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Thinking      *wireThinking   `json:"thinking,omitempty"`
	OutputConfig  *outputConfig   `json:"output_config,omitempty"`
	Stream        bool            `json:"stream,omitempty"` // false in a batch
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is built here; Wire is what goes out as "content" (see
	// seal): the same blocks, with vendor blocks as the vendor sent them.
	Content []wireBlock `json:"-"`
	Wire    any         `json:"content"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []wireBlock     `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Source    *wireSource     `json:"source,omitempty"`
	// CacheControl marks a prompt-cache breakpoint: the prefix up to and
	// including this block is cached.
	CacheControl *cacheControl `json:"cache_control,omitempty"`

	// raw is a vendor block (llm.PartVendor) to send as is; Type then
	// is its type, and no other field is set.
	raw json.RawMessage
}

type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// ephemeral is the five-minute cache: long enough for the turns of a run
// and the next question in a busy group. hour is the one-hour cache for
// the prefix every run of a group shares, when asked for (WithLongCache):
// its writes cost 2× input rather than 1.25×, and it still hits when the
// group's runs are minutes to an hour apart. The API wants the longer
// TTL before the shorter, which the system/tools breakpoint always is.
var (
	ephemeral = &cacheControl{Type: "ephemeral"}
	hour      = &cacheControl{Type: "ephemeral", TTL: "1h"}
)

// build is buildRequest with the provider's cache setting applied.
func (p *Provider) build(req *llm.Request, files map[string]llm.RemoteFile) (*wireRequest, error) {
	w, err := buildRequest(p.Name(), req, files)
	if err != nil || !p.Client.LongCache {
		return w, err
	}
	switch i := cachedTool(w.Tools); {
	case len(w.System) > 0 && w.System[len(w.System)-1].CacheControl != nil:
		w.System[len(w.System)-1].CacheControl = hour
	case i >= 0 && w.Tools[i].CacheControl != nil:
		w.Tools[i].CacheControl = hour
	}
	return w, nil
}

type wireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

// wireTool is a function tool, or with Type a server tool (the tool
// search tool), which has no description or schema.
type wireTool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	DeferLoading bool            `json:"defer_loading,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type wireToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type outputConfig struct {
	Format outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest lowers a request to the Messages API body. Media whose
// Path is in files are referred to by the provider's file id.
func buildRequest(provider string, req *llm.Request, files map[string]llm.RemoteFile) (*wireRequest, error) {
	w := &wireRequest{
		Model:         req.Model,
		MaxTokens:     req.EffectiveMaxTokens(),
		Temperature:   req.Temperature,
		StopSequences: req.StopSequences,
		Stream:        true,
	}
	if req.ReasoningBudget > 0 {
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: req.ReasoningBudget}
		// The budget counts against max_tokens and must be below it.
		if w.MaxTokens <= req.ReasoningBudget {
			w.MaxTokens += req.ReasoningBudget
		}
		// Extended thinking rejects any temperature but the default.
		w.Temperature = nil
	}
	nativeSearch := native(req)
	if len(req.Tools) > 0 || nativeSearch {
		w.Tools = buildTools(req, nativeSearch)
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceNone:
		w.ToolChoice = &wireToolChoice{Type: "none"}
	case llm.ToolChoiceRequired:
		w.ToolChoice = &wireToolChoice{Type: "any"}
	case llm.ToolChoiceTool:
		w.ToolChoice = &wireToolChoice{Type: "tool", Name: req.ToolChoice.Name}
	}
	if req.System != "" {
		w.System = []wireBlock{{Type: "text", Text: req.System}}
	}
	if rf := req.ResponseFormat; rf != nil && len(rf.Schema) > 0 {
		w.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: rf.Schema}}
	}

	for i, m := range req.Messages {
		role := "user"
		switch m.Role {
		case llm.RoleAssistant:
			role = "assistant"
		case llm.RoleUser, llm.RoleTool:
			// Tool results travel in a user turn.
		default:
			return nil, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("message %d: unknown role %q", i, m.Role))
		}
		var blocks []wireBlock
		for j, p := range m.Parts {
			b, ok, err := block(provider, p, files, nativeSearch)
			if err != nil {
				return nil, wire.Annotate(err, "message %d part %d", i, j)
			}
			if ok {
				blocks = append(blocks, b)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		// The API wants alternating turns; a tool turn followed by a user
		// turn is one user turn to it.
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
			continue
		}
		w.Messages = append(w.Messages, wireMessage{Role: role, Content: blocks})
	}
	markCache(w)
	seal(w)
	return w, nil
}

// seal sets what each message sends: its blocks, or when vendor blocks
// are among them, the blocks with those as their raw JSON. Only then
// does a message pay for a mixed slice; media blocks stay plain structs
// for the encoder either way.
func seal(w *wireRequest) {
	for i := range w.Messages {
		m := &w.Messages[i]
		m.Wire = m.Content
		if !slices.ContainsFunc(m.Content, func(b wireBlock) bool { return b.raw != nil }) {
			continue
		}
		mixed := make([]any, len(m.Content))
		for j, b := range m.Content {
			if b.raw != nil {
				mixed[j] = b.raw
			} else {
				mixed[j] = b
			}
		}
		m.Wire = mixed
	}
}

// cachedTool is the index of the last tool that may carry the tools'
// breakpoint, or -1: a deferred tool may not (the API answers 400).
func cachedTool(tools []wireTool) int {
	for i := len(tools) - 1; i >= 0; i-- {
		if !tools[i].DeferLoading {
			return i
		}
	}
	return -1
}

// markCache sets the prompt-cache breakpoints (at most 4 are allowed):
// after the tools and system prompt, which every run of a group shares,
// and after the last message, so the next turn of the run (and a
// follow-up question soon after) reads the earlier turns from the cache.
// The API looks back from a breakpoint for the longest cached prefix, so
// one moving breakpoint at the end keeps hitting what the turn before
// wrote.
func markCache(w *wireRequest) {
	switch i := cachedTool(w.Tools); {
	case len(w.System) > 0:
		w.System[len(w.System)-1].CacheControl = ephemeral
	case i >= 0:
		w.Tools[i].CacheControl = ephemeral
	}
	if n := len(w.Messages); n > 0 {
		last := w.Messages[n-1].Content
		for i := len(last) - 1; i >= 0; i-- {
			// Thinking blocks cannot carry a breakpoint, and vendor
			// blocks go as they came.
			if t := last[i].Type; t != "thinking" && t != "redacted_thinking" && last[i].raw == nil {
				last[i].CacheControl = ephemeral
				break
			}
		}
	}
}

// block lowers one part. Vendor parts go back only on the native tool
// search path (nativeSearch): elsewhere the request has no search tool
// and the API would refuse its blocks, and another vendor's mean nothing.
func block(provider string, p llm.Part, files map[string]llm.RemoteFile, nativeSearch bool) (wireBlock, bool, error) {
	switch p.Kind {
	case llm.PartText:
		if p.Text == "" {
			return wireBlock{}, false, nil // the API rejects empty text blocks
		}
		return wireBlock{Type: "text", Text: p.Text}, true, nil
	case llm.PartReasoning:
		if p.Redacted {
			return wireBlock{Type: "redacted_thinking", Data: p.Signature}, p.Signature != "", nil
		}
		if p.Signature == "" {
			// Unsigned thinking (from another vendor, or stripped) cannot be
			// verified and would be rejected; drop it.
			return wireBlock{}, false, nil
		}
		text := p.Text
		return wireBlock{Type: "thinking", Thinking: &text, Signature: p.Signature}, true, nil
	case llm.PartToolCall:
		tc := p.ToolCall
		args := tc.Args
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		return wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: args}, true, nil
	case llm.PartToolResult:
		tr := p.ToolResult
		out := wireBlock{Type: "tool_result", ToolUseID: tr.CallID, IsError: tr.IsError}
		for _, c := range tr.Content {
			b, ok, err := block(provider, c, files, false)
			if err != nil {
				return wireBlock{}, false, err
			}
			if ok {
				out.Content = append(out.Content, b)
			}
		}
		return out, true, nil
	case llm.PartMedia:
		return mediaBlock(provider, p.Media, files)
	case llm.PartVendor:
		if p.Vendor != vendor || !nativeSearch {
			return wireBlock{}, false, nil
		}
		return vendorBlock(provider, p.Raw)
	}
	return wireBlock{}, false, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("unsupported part kind %q", p.Kind))
}

// vendorBlock checks that raw is a block (a JSON object with a type)
// before it goes out verbatim: anything else would fail the whole
// request with an error naming no part.
func vendorBlock(provider string, raw json.RawMessage) (wireBlock, bool, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Type == "" {
		return wireBlock{}, false, llm.NewError(provider, llm.KindBadRequest, "vendor part is not an Anthropic content block")
	}
	return wireBlock{Type: head.Type, raw: raw}, true, nil
}

func mediaBlock(provider string, m *llm.Media, files map[string]llm.RemoteFile) (wireBlock, bool, error) {
	typ := "image"
	switch {
	case wire.IsImage(m.MIME):
	case m.MIME == "application/pdf":
		typ = "document"
	default:
		return wireBlock{}, false, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("unsupported media type %q", m.MIME))
	}
	if m.URL != "" {
		return wireBlock{Type: typ, Source: &wireSource{Type: "url", URL: m.URL}}, true, nil
	}
	if f, ok := files[m.Path]; ok && m.Path != "" {
		return wireBlock{Type: typ, Source: &wireSource{Type: "file", FileID: f.ID}}, true, nil
	}
	data, err := wire.LoadMedia(provider, m)
	if err != nil {
		return wireBlock{}, false, err
	}
	return wireBlock{Type: typ, Source: &wireSource{Type: "base64", MediaType: m.MIME, Data: data}}, true, nil
}
