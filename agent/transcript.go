package agent

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/botd-dev/botd/llm"
	"github.com/botd-dev/botd/store"
)

// tPart is how a part is kept in the transcript: media by reference (the
// file path, or the hash of bytes that were inline) and no signatures,
// which are only valid for the vendor that issued them.
type tPart struct {
	Kind       llm.PartKind `json:"kind"`
	Text       string       `json:"text,omitempty"`
	ToolCall   *tToolCall   `json:"tool_call,omitempty"`
	ToolResult *tToolResult `json:"tool_result,omitempty"`
	Media      *tMedia      `json:"media,omitempty"`
}

type tToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type tToolResult struct {
	CallID  string  `json:"call_id"`
	IsError bool    `json:"is_error,omitempty"`
	Content []tPart `json:"content"`
}

type tMedia struct {
	MIME   string `json:"mime"`
	Path   string `json:"path,omitempty"`
	URL    string `json:"url,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Bytes  int    `json:"bytes,omitempty"`
}

func toTranscript(msgs []llm.Message) []store.TranscriptEntry {
	out := make([]store.TranscriptEntry, 0, len(msgs))
	for _, m := range msgs {
		b, err := json.Marshal(tParts(m.Parts))
		if err != nil {
			b = []byte(`[{"kind":"text","text":"(unserialisable message)"}]`)
		}
		out = append(out, store.TranscriptEntry{Role: string(m.Role), Parts: b})
	}
	return out
}

func tParts(ps []llm.Part) []tPart {
	out := make([]tPart, 0, len(ps))
	for _, p := range ps {
		tp := tPart{Kind: p.Kind, Text: p.Text}
		if p.Kind == llm.PartReasoning && p.Redacted {
			tp.Text = "(redacted reasoning)"
		}
		if p.ToolCall != nil {
			tp.ToolCall = &tToolCall{ID: p.ToolCall.ID, Name: p.ToolCall.Name, Args: p.ToolCall.Args}
		}
		if p.ToolResult != nil {
			tp.ToolResult = &tToolResult{CallID: p.ToolResult.CallID, IsError: p.ToolResult.IsError, Content: tParts(p.ToolResult.Content)}
		}
		if p.Media != nil {
			m := &tMedia{MIME: p.Media.MIME, Path: p.Media.Path, URL: p.Media.URL}
			if p.Media.Data != "" {
				// Bytes inline in a message are recorded by hash only.
				raw, err := base64.StdEncoding.DecodeString(p.Media.Data)
				if err != nil {
					raw = []byte(p.Media.Data)
				}
				sum := sha256.Sum256(raw)
				m.SHA256, m.Bytes = hex.EncodeToString(sum[:]), len(raw)
			}
			tp.Media = m
		}
		out = append(out, tp)
	}
	return out
}
