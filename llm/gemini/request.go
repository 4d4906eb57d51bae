package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/llm/internal/wire"
)

type wireRequest struct {
	SystemInstruction *content         `json:"systemInstruction,omitempty"`
	Contents          []content        `json:"contents"`
	Tools             []wireTool       `json:"tools,omitempty"`
	ToolConfig        *toolConfig      `json:"toolConfig,omitempty"`
	GenerationConfig  generationConfig `json:"generationConfig"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []functionDecl `json:"functionDeclarations"`
}

type functionDecl struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts bool `json:"includeThoughts"`
	ThinkingBudget  int  `json:"thinkingBudget"`
}

func buildRequest(provider string, req *llm.Request) (*wireRequest, error) {
	w := &wireRequest{GenerationConfig: generationConfig{
		Temperature:     req.Temperature,
		MaxOutputTokens: req.EffectiveMaxTokens(),
		StopSequences:   req.StopSequences,
	}}
	if req.ReasoningBudget > 0 {
		w.GenerationConfig.ThinkingConfig = &thinkingConfig{IncludeThoughts: true, ThinkingBudget: req.ReasoningBudget}
	}
	if rf := req.ResponseFormat; rf != nil && len(rf.Schema) > 0 {
		w.GenerationConfig.ResponseMimeType = "application/json"
		w.GenerationConfig.ResponseJSONSchema = rf.Schema
	}
	if req.System != "" {
		w.SystemInstruction = &content{Parts: []part{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		var decls []functionDecl
		for _, t := range req.Tools {
			params, err := CleanSchema(t.Parameters)
			if err != nil {
				return nil, llm.Errorf(provider, llm.KindBadRequest, err, "tool %s: %v", t.Name, err)
			}
			d := functionDecl{Name: t.Name, Description: t.Description}
			if params != nil {
				d.Parameters = params
			}
			decls = append(decls, d)
		}
		w.Tools = []wireTool{{FunctionDeclarations: decls}}
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceNone:
		w.ToolConfig = &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: "NONE"}}
	case llm.ToolChoiceRequired:
		w.ToolConfig = &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: "ANY"}}
	case llm.ToolChoiceTool:
		w.ToolConfig = &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{req.ToolChoice.Name}}}
	}

	// functionResponse needs the function's name, which our tool results
	// only reference by call id; the most recent call with that id wins, as
	// synthesised ids can repeat across turns of older histories.
	names := map[string]string{}
	for i, m := range req.Messages {
		role := "user"
		if m.Role == llm.RoleAssistant {
			role = "model"
		} else if m.Role != llm.RoleUser && m.Role != llm.RoleTool {
			return nil, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("message %d: unknown role %q", i, m.Role))
		}
		parts, err := buildParts(provider, m.Parts, names)
		if err != nil {
			return nil, wire.Annotate(err, "message %d", i)
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(w.Contents); n > 0 && w.Contents[n-1].Role == role {
			w.Contents[n-1].Parts = append(w.Contents[n-1].Parts, parts...)
			continue
		}
		w.Contents = append(w.Contents, content{Role: role, Parts: parts})
	}
	return w, nil
}

func buildParts(provider string, in []llm.Part, names map[string]string) ([]part, error) {
	var out []part
	pendingSig := "" // from an empty reasoning part, for the next part
	add := func(p part) {
		if pendingSig != "" && p.ThoughtSignature == "" {
			p.ThoughtSignature, pendingSig = pendingSig, ""
		}
		out = append(out, p)
	}
	for _, p := range in {
		switch p.Kind {
		case llm.PartText:
			if p.Text != "" {
				add(part{Text: p.Text})
			}
		case llm.PartReasoning:
			if p.Redacted {
				continue // another vendor's encrypted thinking
			}
			if p.Text == "" {
				pendingSig = p.Signature
				continue
			}
			out = append(out, part{Text: p.Text, Thought: true, ThoughtSignature: p.Signature})
		case llm.PartToolCall:
			tc := p.ToolCall
			names[tc.ID] = tc.Name
			args := tc.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			add(part{FunctionCall: &functionCall{ID: realID(tc.ID), Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature})
		case llm.PartToolResult:
			tr := p.ToolResult
			name, ok := names[tr.CallID]
			if !ok {
				return nil, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("tool result for unknown call %q", tr.CallID))
			}
			var text []string
			var media []part
			for _, c := range tr.Content {
				switch c.Kind {
				case llm.PartText:
					text = append(text, c.Text)
				case llm.PartMedia:
					mp, err := mediaPart(provider, c.Media)
					if err != nil {
						return nil, err
					}
					media = append(media, mp)
				}
			}
			key := "result"
			if tr.IsError {
				key = "error"
			}
			add(part{FunctionResponse: &functionResponse{ID: realID(tr.CallID), Name: name, Response: map[string]any{key: strings.Join(text, "\n")}}})
			// Images ride beside the response in the same user turn, which
			// every Gemini version accepts.
			out = append(out, media...)
		case llm.PartMedia:
			mp, err := mediaPart(provider, p.Media)
			if err != nil {
				return nil, err
			}
			add(mp)
		case llm.PartVendor:
			continue // another vendor's block, meaningless here
		default:
			return nil, llm.NewError(provider, llm.KindBadRequest, fmt.Sprintf("unsupported part kind %q", p.Kind))
		}
	}
	if pendingSig != "" {
		out = append(out, part{ThoughtSignature: pendingSig})
	}
	return out, nil
}

// realID hides ids we synthesised from Gemini.
func realID(id string) string {
	if strings.HasPrefix(id, synthPrefix) {
		return ""
	}
	return id
}

func mediaPart(provider string, m *llm.Media) (part, error) {
	if m.URL != "" {
		return part{FileData: &fileData{MimeType: m.MIME, FileURI: m.URL}}, nil
	}
	data, err := wire.LoadMedia(provider, m)
	if err != nil {
		return part{}, err
	}
	return part{InlineData: &blob{MimeType: m.MIME, Data: data}}, nil
}
