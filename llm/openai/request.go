package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	// Stream and StreamOptions are left out of a batch, which answers
	// through an output file.
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, a []contentPart, or nil (an assistant turn that
	// only calls tools).
	Content          any            `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
	File     *file     `json:"file,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type file struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func buildRequest(provider string, req *llm.Request, official bool, files map[string]llm.RemoteFile) (*wireRequest, error) {
	w := &wireRequest{
		Model:         req.Model,
		Temperature:   req.Temperature,
		Stop:          req.StopSequences,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
	}
	if official {
		w.MaxCompletionTokens = req.EffectiveMaxTokens()
	} else {
		w.MaxTokens = req.EffectiveMaxTokens()
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceNone:
		w.ToolChoice = "none"
	case llm.ToolChoiceRequired:
		w.ToolChoice = "required"
	case llm.ToolChoiceTool:
		w.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Name}}
	}
	if rf := req.ResponseFormat; rf != nil && len(rf.Schema) > 0 {
		name := rf.Name
		if name == "" {
			name = "response"
		}
		w.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: name, Schema: rf.Schema, Strict: rf.Strict}}
	}

	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: req.System})
	}
	// Tool messages may only follow the assistant turn that called the
	// tools, so images from tool results wait here until the run of tool
	// messages ends, then go in one user turn.
	b := &builder{provider: provider, w: w, files: files}
	for i, m := range req.Messages {
		var err error
		switch m.Role {
		case llm.RoleAssistant:
			b.flush()
			appendAssistant(w, m)
		case llm.RoleUser, llm.RoleTool:
			err = b.appendUserOrTool(m)
		default:
			err = llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("unknown role %q", m.Role))
		}
		if err != nil {
			return nil, wire.Annotate(err, "message %d", i)
		}
	}
	b.flush()
	return w, nil
}

type builder struct {
	provider string
	w        *wireRequest
	pending  []contentPart // tool-result media awaiting their user turn
	files    map[string]llm.RemoteFile
}

func (b *builder) flush() {
	if len(b.pending) > 0 {
		b.w.Messages = append(b.w.Messages, wireMessage{Role: "user", Content: b.pending})
		b.pending = nil
	}
}

func appendAssistant(w *wireRequest, m llm.Message) {
	var text, reasoning strings.Builder
	msg := wireMessage{Role: "assistant"}
	for _, p := range m.Parts {
		switch p.Kind {
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartReasoning:
			// DeepSeek wants its reasoning_content back within a tool-using
			// turn; vendors without reasoning never produced any.
			reasoning.WriteString(p.Text)
		case llm.PartToolCall:
			args := string(p.ToolCall.Args)
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: p.ToolCall.ID, Type: "function", Function: wireFunction{Name: p.ToolCall.Name, Arguments: args}})
		}
	}
	if text.Len() > 0 {
		msg.Content = text.String()
	}
	msg.ReasoningContent = reasoning.String()
	if msg.Content == nil && len(msg.ToolCalls) == 0 {
		return // nothing the API would accept
	}
	w.Messages = append(w.Messages, msg)
}

func (b *builder) appendUserOrTool(m llm.Message) error {
	provider, w := b.provider, b.w
	var parts []contentPart
	hasMedia := false
	for _, p := range m.Parts {
		switch p.Kind {
		case llm.PartText:
			parts = append(parts, contentPart{Type: "text", Text: p.Text})
		case llm.PartMedia:
			cp, err := mediaPart(provider, p.Media, b.files)
			if err != nil {
				return err
			}
			parts = append(parts, cp)
			hasMedia = true
		case llm.PartToolResult:
			tr := p.ToolResult
			var text strings.Builder
			var media []contentPart
			for _, c := range tr.Content {
				switch c.Kind {
				case llm.PartText:
					if text.Len() > 0 {
						text.WriteByte('\n')
					}
					text.WriteString(c.Text)
				case llm.PartMedia:
					cp, err := mediaPart(provider, c.Media, b.files)
					if err != nil {
						return err
					}
					media = append(media, cp)
				}
			}
			content := text.String()
			if tr.IsError {
				content = "Error: " + content
			}
			if len(media) > 0 {
				if content != "" {
					content += "\n"
				}
				content += fmt.Sprintf("(%d attachment(s) follow in the next user message)", len(media))
				b.pending = append(b.pending, contentPart{Type: "text", Text: "Attachment from tool call " + tr.CallID + ":"})
				b.pending = append(b.pending, media...)
			}
			w.Messages = append(w.Messages, wireMessage{Role: "tool", ToolCallID: tr.CallID, Content: content})
		}
	}
	if len(parts) == 0 {
		return nil
	}
	b.flush()
	if !hasMedia {
		// Plain strings are the one content shape every compatible server
		// accepts.
		var sb strings.Builder
		for i, p := range parts {
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(p.Text)
		}
		w.Messages = append(w.Messages, wireMessage{Role: "user", Content: sb.String()})
		return nil
	}
	w.Messages = append(w.Messages, wireMessage{Role: "user", Content: parts})
	return nil
}

func mediaPart(provider string, m *llm.Media, files map[string]llm.RemoteFile) (contentPart, error) {
	switch {
	case wire.IsImage(m.MIME):
		if m.URL != "" {
			return contentPart{Type: "image_url", ImageURL: &imageURL{URL: m.URL}}, nil
		}
		data, err := wire.LoadMedia(provider, m)
		if err != nil {
			return contentPart{}, err
		}
		return contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + m.MIME + ";base64," + data}}, nil
	case m.MIME == "application/pdf" && m.URL == "":
		if f, ok := files[m.Path]; ok && m.Path != "" {
			return contentPart{Type: "file", File: &file{FileID: f.ID}}, nil
		}
		data, err := wire.LoadMedia(provider, m)
		if err != nil {
			return contentPart{}, err
		}
		return contentPart{Type: "file", File: &file{Filename: "document.pdf", FileData: "data:application/pdf;base64," + data}}, nil
	}
	return contentPart{}, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("unsupported media type %q", m.MIME))
}
